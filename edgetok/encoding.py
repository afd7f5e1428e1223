"""Encoding: tiktoken's Encoding surface over an edgetok model."""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings
    from functools import cached_property as _once
    from typing import AbstractSet, Any, Collection, Iterator, Literal, Sequence

    from .budget import AppendCounter, RangeCounter
    from .automata import TokenAutomaton

from ._ffi import Model

if not TYPE_CHECKING:
    class _once:
        """functools.cached_property without importing functools (which imports collections:
        a sixth of `import edgetok` on a bare interpreter): computed on first use, then an
        attribute of the instance."""

        def __init__(self, f):  # type: ignore[no-untyped-def]
            self.f, self.name = f, f.__name__

        def __get__(self, obj, cls=None):  # type: ignore[no-untyped-def]
            if obj is None:
                return self
            value = obj.__dict__[self.name] = self.f(obj)
            return value



def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # lone surrogates: replaced by U+FFFD exactly as tiktoken does
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def _nfc(text: str) -> str:
    import unicodedata

    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def _raise_disallowed(token: str) -> None:
    raise ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        "If you want this text to be encoded as normal text, disable the check for this "
        f"token by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )


_special_regexes: dict = {}  # type: ignore[type-arg]


def _special_regex(tokens: frozenset[str]):  # type: ignore[no-untyped-def]
    """A regex finding any of tokens, longest first (the last 64 sets remembered)."""
    found = _special_regexes.get(tokens)
    if found is None:
        import re

        found = re.compile("|".join(re.escape(t) for t in sorted(tokens, key=lambda t: (-len(t), t))))
        if len(_special_regexes) >= 64:
            _special_regexes.clear()
        _special_regexes[tokens] = found
    return found


_SETS = (set, frozenset)
_CONTINUATION = bytes(range(0x80, 0xC0))
# what Rust's char::is_whitespace takes (Unicode White_Space), and GPT-2's byte-level space
_HF_SPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
             "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u0120")


def _leads(data: bytes, start: int, end: int) -> int:
    """How many characters start in data[start:end] (UTF-8 lead bytes)."""
    return len(data[start:end].translate(None, _CONTINUATION))


def _bad_allowed(allowed_special: object) -> None:
    """tiktoken's TypeError for allowed_special that is neither "all" nor a set."""
    raise TypeError(f"allowed_special must be 'all' or a set of strings, not "
                    f"{type(allowed_special).__name__}")


def _check_tokens(tokens: object) -> None:
    """tiktoken takes a sequence of ids: an iterator or generator is a TypeError."""
    if not hasattr(tokens, "__len__"):
        raise TypeError(f"{type(tokens).__name__!r} object is not an instance of 'Sequence'")


# encodings rebuilt in this process from pickles, by recipe (see Encoding.__reduce__)
_rebuilt: dict[object, "Encoding"] = {}


def _rebuild(recipe: tuple) -> "Encoding":  # type: ignore[type-arg]
    """The encoding a pickled recipe describes (once per process for each)."""
    kind = recipe[0]
    if kind == "get":
        from .registry import get_encoding

        return get_encoding(recipe[1])
    if kind == "load":
        import os

        st = os.stat(recipe[1])
        key = (recipe, st.st_size, st.st_mtime_ns)
    else:
        key = None
    enc = _rebuilt.get(key) if key is not None else None
    if enc is None:
        if kind == "load":
            from .registry import load

            _, path, name, fairseq_ids, specials = recipe
            enc = load(path, name=name, fairseq_ids=fairseq_ids)
            if specials is not None:
                loaded, enc = enc, Encoding(enc.name, enc.model, specials)
                enc._wrap, enc._post, enc._gguf = loaded._wrap, loaded._post, loaded._gguf
                enc._recipe = recipe
        elif kind == "ctor":
            _, name, pat_str, ranks, specials, n_vocab = recipe
            if isinstance(ranks, str):  # a built-in encoding's ranks
                from .registry import get_encoding

                ranks = get_encoding(ranks)._mergeable_ranks
            enc = Encoding(name, pat_str=pat_str, mergeable_ranks=ranks,
                           special_tokens=specials, explicit_n_vocab=n_vocab)
        else:
            raise ValueError(f"cannot rebuild an Encoding from {kind!r}")
        if key is not None:
            _rebuilt[key] = enc
    return enc


class Encoding:
    """A tokenizer with tiktoken's interface: same ids, same exceptions, same results."""

    # what the model's file adds around a text (see _conventions): a tokenizer.json's
    # post-processor as the ids before and after the text's, and how it trims offsets; a
    # GGUF's BOS / EOS and when llama.cpp adds them
    _wrap: "tuple[list[int], list[int]] | None" = None
    _post: "dict[str, Any] | None" = None
    _gguf: "dict[str, Any] | None" = None

    def __init__(self, name: str, model: Model | None = None,
                 special_tokens: dict[str, int] | None = None, *, pat_str: str | None = None,
                 mergeable_ranks: dict[bytes, int] | None = None,
                 explicit_n_vocab: int | None = None):
        """Encoding(name, model[, special_tokens]) over a loaded model; or tiktoken's
        Encoding(name, pat_str=..., mergeable_ranks=..., special_tokens=...,
        explicit_n_vocab=...), compiled on first use and kept in the cache (the ranks of a
        built-in encoding reuse its model)."""
        self.name = name
        # what rebuilds this encoding in another process (see __reduce__)
        self._recipe: tuple | None = None  # type: ignore[type-arg]
        if model is None:
            if pat_str is None or mergeable_ranks is None or special_tokens is None:
                missing = [k for k, v in (("pat_str", pat_str), ("mergeable_ranks", mergeable_ranks),
                                          ("special_tokens", special_tokens)) if v is None]
                raise TypeError(f"Encoding() needs a model, or pat_str, mergeable_ranks and "
                                f"special_tokens (missing: {', '.join(missing)})")
            from .construct import build, check_args

            check_args(mergeable_ranks, special_tokens, explicit_n_vocab)
            model, base = build(name, pat_str, mergeable_ranks, special_tokens)
            self._recipe = ("ctor", name, pat_str, base or mergeable_ranks, dict(special_tokens),
                            explicit_n_vocab)
            if base is None:
                self.__dict__["_mergeable_ranks"] = mergeable_ranks
        elif pat_str is not None or mergeable_ranks is not None or explicit_n_vocab is not None:
            raise TypeError("Encoding(name, model) takes no pat_str, mergeable_ranks or "
                            "explicit_n_vocab")
        self._model = model
        # added tokens that ordinary text matches (Hugging Face's non-special ones)
        self._added: dict[str, int] = {}
        if special_tokens is None:
            special_tokens = {}
            # SentencePiece models match no special text: "<s>" in a text is text
            matched = model.kind in ("bpe", "wordpiece")
            added = set(model.added_ids()) if matched else set()
            for i in (model.special_ids() if matched else []):
                b = model.token_bytes(i)
                if b is not None:
                    (self._added if i in added else special_tokens)[b.decode("utf-8", "replace")] = i
        self._special_tokens = special_tokens
        self._matchable = {**special_tokens, **self._added}
        self._pat_str = model.pattern if pat_str is None else pat_str
        # the first two characters of the special and added tokens, when few: text holding
        # none of them holds no such token, which one scan each tells
        heads = {t[:2] for t in self._matchable}
        if len(heads) > 8:  # many specials that share their first character: that character
            heads = {t[:1] for t in self._matchable}
        self._heads = tuple(heads) if len(heads) <= 8 else None
        self._starts = None  # see _present
        self._lens: dict[str, list[int]] = {}
        # special tokens whose id the model lacks (tiktoken's p50k_edit, o200k_harmony, ...):
        # their bytes, decoded here
        self._extra: dict[int, bytes] = {}
        for t, i in special_tokens.items():
            if i not in self._extra and model.token_bytes(i) is None:
                self._extra[i] = t.encode("utf-8")
        self.max_token_value = max([model.n_vocab - 1, *self._extra])
        self._nfc = model.nfc  # the model's normaliser: NFC (Qwen2's tokenizer.json) or none
        # the heads as UTF-8 for the one-call paths (Model.encode_text / count_text: the text
        # to UTF-8, the heads looked for, encoded, in one C call); None: not for this model
        self._heads_b = (None if self._nfc or self._heads is None else
                         tuple(h.encode("utf-8", "surrogatepass") for h in self._heads))

    def _bytes(self, text: str) -> bytes:
        """text as the model encodes it: normalised if the model says so, in UTF-8."""
        try:
            return _utf8(_nfc(text) if self._nfc else text)
        except (AttributeError, TypeError):
            if isinstance(text, str):
                raise
            raise TypeError(f"{type(text).__name__!r} object is not an instance of 'str'") from None

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # -- properties -----------------------------------------------------------------------
    @property
    def n_vocab(self) -> int:
        return self.max_token_value + 1

    @property
    def eot_token(self) -> int:
        return self._special_tokens["<|endoftext|>"]

    @_once
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    @property
    def model(self) -> Model:
        return self._model

    # -- encoding ---------------------------------------------------------------------------
    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of text, with special tokens treated as ordinary text (added tokens that are
        not special, which Hugging Face matches in any text, are still matched)."""
        if self._heads_b is not None:
            ids = self._model.encode_text(text, self._heads_b if self._added else ())
            if ids is not None:
                return ids
        if self._added and self._may_hold_special(text):
            return self._encode(text, set(), (), 1)
        return self._model.encode(self._bytes(text))[0]

    def _present(self, text: str) -> set[str]:
        """The special tokens that occur in text (overlapping ones too): a scan for the
        characters they start with, then a dictionary lookup per length at those places."""
        if self._starts is None:
            import re

            lens: dict[str, set[int]] = {}
            for t in self._matchable:
                lens.setdefault(t[:1], set()).add(len(t))
            self._lens = {c: sorted(v) for c, v in lens.items()}
            self._starts = re.compile("[" + "".join(re.escape(c) for c in lens) + "]")
        sp, lens_by = self._matchable, self._lens
        return {text[p:p + n] for m in self._starts.finditer(text)
                for p in (m.start(),) for n in lens_by[text[p]] if text[p:p + n] in sp}

    def _may_hold_special(self, text: str) -> bool:
        if not self._matchable:
            return False
        return self._heads is None or any(h in text for h in self._heads)

    def _segments(self, text: str, allowed_special: "Literal['all'] | AbstractSet[str]",
                  disallowed_special: "Literal['all'] | Collection[str]") -> Iterator[str | int]:
        """text cut into ordinary segments (str) and special token ids (int), as tiktoken."""
        if disallowed_special is None:  # tiktoken: no check
            disallowed_special = ()
        if (disallowed_special == "all" or not disallowed_special) and not self._may_hold_special(text):
            yield text  # (strings given as disallowed that are no special token are looked for)
            return
        if allowed_special == "all":
            allowed = frozenset(self._special_tokens)
        else:
            allowed = frozenset(allowed_special)
        if disallowed_special == "all":
            disallowed = frozenset(self._special_tokens) - allowed
        else:
            disallowed = frozenset(disallowed_special)
        present = self._present(text)
        if disallowed:
            found = [(i, -len(t), t) for t in disallowed
                     if (t in present or t not in self._special_tokens) and (i := text.find(t)) >= 0]
            if found:
                _raise_disallowed(min(found)[2])
        allowed = frozenset(t for t in allowed if t in present and t in self._special_tokens)
        allowed |= frozenset(t for t in present if t in self._added)
        if not allowed:
            yield text
            return
        start = 0
        for m in _special_regex(allowed).finditer(text):
            yield text[start:m.start()]
            yield self._matchable[m.group()]
            start = m.end()
        yield text[start:]

    def encode(self, text: str, *,
               allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
               disallowed_special: "Literal['all'] | Collection[str]" = "all",
               add_bos: bool = False, add_eos: bool = False,
               add_special_tokens: bool | None = None) -> list[int]:
        """Ids of text. Special tokens in allowed_special become their ids; any other special
        token found in the text raises ValueError unless disallowed_special excludes it.
        add_bos / add_eos put the model's BOS / EOS id around them (as sentencepiece's
        encode(text, add_bos=True, add_eos=True); a GGUF's declared ones).
        add_special_tokens: a tokenizer.json's post-processor tokens are added unless it is
        False (Hugging Face's tokenizer(text).input_ids); True on a GGUF adds BOS / EOS as
        llama.cpp's add_special does; nothing on other models."""
        if allowed_special.__class__ not in _SETS and allowed_special != "all":
            _bad_allowed(allowed_special)
        if (not allowed_special and disallowed_special == "all" and not add_bos and not add_eos
                and add_special_tokens is not True and self._heads_b is not None):
            ids = self._model.encode_text(text, self._heads_b)
            if ids is not None:
                if self._wrap is None or add_special_tokens is False:
                    return ids
                return [*self._wrap[0], *ids, *self._wrap[1]]  # a tokenizer.json's default
        if (not allowed_special and disallowed_special == "all"
                and not self._may_hold_special(text)):
            ids = self._model.encode(self._bytes(text))[0]
        else:
            ids = self._encode(text, allowed_special, disallowed_special, 1)
        if add_bos or add_eos or (add_special_tokens is not False
                                  and (self._wrap is not None or add_special_tokens)):
            before, after = self._ends(add_special_tokens, add_bos, add_eos)
            ids = [*before, *ids, *after]
        return ids

    def _ends(self, add_special_tokens: bool | None, add_bos: bool = False, add_eos: bool = False
              ) -> "tuple[list[int], list[int]]":
        """(ids before, ids after) the text's in encode(text, add_special_tokens=...,
        add_bos=..., add_eos=...): BOS / EOS outermost, then what _special_wrap adds.
        ValueError for add_bos / add_eos on a model without that token."""
        before, after = self._special_wrap(add_special_tokens)
        if add_bos:
            before = [self._bos_eos("bos"), *before]
        if add_eos:
            after = [*after, self._bos_eos("eos")]
        return before, after

    def _bos_eos(self, which: str) -> int:
        i = self._model.bos if which == "bos" else self._model.eos
        if i is None and self._gguf is not None:  # a byte-level GGUF: the id it declares
            i = self._gguf[which]
        if i is None:
            raise ValueError(f"{self.name} has no {which.upper()} token")
        return i

    # -- the model file's own conventions (Hugging Face's post-processor, llama.cpp's BOS) ----
    def _conventions(self, meta: "dict[str, Any] | None") -> None:
        """Takes what a loaded file says is added around a text (registry.load's meta)."""
        meta = meta or {}
        self._post = post = meta.get("post")
        if "post" not in meta and self._model.kind == "wordpiece":  # an .etok, a GGUF
            from .wordpiece import bert_post

            self._post = post = bert_post(*self._model.wordpiece_ids()[1:])
        if post is not None and post["template"] != [None]:
            t = post["template"]
            k = t.index(None)
            self._wrap = (list(t[:k]), list(t[k + 1:]))
        self._gguf = meta.get("gguf")

    def _special_wrap(self, add_special_tokens: bool | None) -> "tuple[list[int], list[int]]":
        """(ids before, ids after) the text's for add_special_tokens: None (the default) is
        Hugging Face's default for a tokenizer.json (its post-processor's tokens) and nothing
        for other files; True on a GGUF adds BOS / EOS where llama.cpp's add_special does."""
        if add_special_tokens is False:
            return [], []
        if self._wrap is not None:
            return self._wrap
        g = self._gguf
        if add_special_tokens and g is not None:
            return ([g["bos"]] if g["add_bos"] and g["bos"] is not None else [],
                    [g["eos"]] if g["add_eos"] and g["eos"] is not None else [])
        return [], []

    def _template(self, pair: bool) -> "list[Any] | None":
        """The post-processor's template for one text or a pair, as edgetok.pairs items."""
        return (self._post or {}).get("pair_items" if pair else "single_items")

    def encode_pair(self, text: str, pair: str | None = None, **kw: Any) -> "dict[str, list[int]]":
        """{"ids", "type_ids", "attention_mask"} of text and pair as Hugging Face's
        tokenizer.encode(text, pair): the post-processor's pair template ([CLS] A [SEP] B [SEP],
        type ids 0 then 1), truncation to max_length=N (truncation="longest_first",
        "only_first", "only_second"; direction), padding=True to max_length,
        pad_to_multiple_of (see edgetok.pairs.encode_pair)."""
        from .pairs import encode_pair

        return encode_pair(self, text, pair, **kw)

    def special_tokens_added(self, add_special_tokens: bool | None = None) -> "dict[str, Any]":
        """What encode(text, add_special_tokens=...) puts around the text's ids: {"before":
        ids, "after": ids, "by": what says so}."""
        before, after = self._special_wrap(add_special_tokens)
        if self._wrap is not None and add_special_tokens is not False:
            by = "the tokenizer.json post-processor (" + ", ".join(self._post["kinds"]) + ")"  # type: ignore[index]
        elif before or after:
            by = "the GGUF's add_bos_token / add_eos_token (llama.cpp's add_special)"
        else:
            by = "nothing"
        return {"before": list(before), "after": list(after), "by": by}

    def count(self, text: str, *,
              allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
              disallowed_special: "Literal['all'] | Collection[str]" = "all",
              add_special_tokens: bool | None = None) -> int:
        """len(encode(text, ...)) without building the list of ids."""
        if allowed_special.__class__ not in _SETS and allowed_special != "all":
            _bad_allowed(allowed_special)
        if (not allowed_special and add_special_tokens is not True and self._heads_b is not None
                and (disallowed_special == "all" or not disallowed_special)):
            # one C call: special tokens raise (the heads find them) or, none disallowed, are
            # ordinary text as in encode_ordinary (added tokens still split: heads again)
            check = disallowed_special == "all" or self._added
            n = self._model.count_text(text, self._heads_b if check else ())
            if n is not None:
                if self._wrap is None or add_special_tokens is False:
                    return n
                return n + len(self._wrap[0]) + len(self._wrap[1])
        n = self._count(text, allowed_special, disallowed_special, 1)
        if add_special_tokens is not False and (self._wrap is not None or add_special_tokens):
            before, after = self._special_wrap(add_special_tokens)
            n += len(before) + len(after)
        return n

    def _parts(self, text: str, allowed_special: "Literal['all'] | AbstractSet[str]",
               disallowed_special: "Literal['all'] | Collection[str]", threads: int | None
               ) -> Iterator[bytes | int]:
        """_segments, the ordinary ones as the model's bytes. On more than one thread, text
        that is all ordinary text for these arguments, as count()'s one C call decides (no
        special token allowed; none of their heads in it where they raise or where added tokens
        split), is one segment: the heads looked for in its bytes, in C (str.find took 4-6 ms
        on 3.7 MB of prose and code, more than the shards' own work)."""
        if (threads != 1 and not allowed_special and self._heads_b is not None
                and (disallowed_special == "all" or not disallowed_special)):
            from ._ids import holds_any

            data = self._bytes(text)
            if not ((disallowed_special == "all" or self._added)
                    and holds_any(data, self._heads_b)):
                yield data
                return
        for seg in self._segments(text, allowed_special, disallowed_special):
            yield seg if isinstance(seg, int) else self._bytes(seg)

    def _encode(self, text: str, allowed_special: "Literal['all'] | AbstractSet[str]",
                disallowed_special: "Literal['all'] | Collection[str]", threads: int | None
                ) -> list[int]:
        """encode() on `threads` threads (None: all cores)."""
        ids: list[int] = []
        for seg in self._parts(text, allowed_special, disallowed_special, threads):
            if isinstance(seg, int):
                ids.append(seg)
            elif seg:
                part = (self._model.encode(seg)[0] if threads == 1
                        else self._model.parallel(3, seg, threads))
                if ids:
                    ids += part
                else:
                    ids = part
        return ids

    def _count(self, text: str, allowed_special: "Literal['all'] | AbstractSet[str]",
               disallowed_special: "Literal['all'] | Collection[str]", threads: int | None) -> int:
        """count() on `threads` threads (None: all cores)."""
        total = 0
        for seg in self._parts(text, allowed_special, disallowed_special, threads):
            if isinstance(seg, int):
                total += 1
            elif seg:
                total += (self._model.count(seg)[0] if threads == 1
                          else self._model.parallel(1, seg, threads))
        return total

    def count_till_limit(self, text: str, limit: int) -> int | None:
        """len(encode_ordinary(text)) if it is at most limit, else None; stops encoding as
        soon as the limit is passed."""
        if self._added and self._may_hold_special(text):
            n = self.count(text, disallowed_special=())
            return n if n <= limit else None
        return self._model.count_limit(self._bytes(text), limit)

    def split_at(self, text: str, max_tokens: int) -> tuple[int, list[int]]:
        """(i, ids): text[:i] is the longest prefix, cut between characters, after which the
        text's encoding can be cut with at most max_tokens tokens, and ids are its tokens:
        encode_ordinary(text[:i]) == ids == encode_ordinary(text)[:len(ids)]."""
        from .budget import split_at

        return split_at(self, text, max_tokens)

    def range_counter(self, text: str) -> "RangeCounter":
        """After one pass over text, .count(i, j) == len(encode_ordinary(text[i:j]))."""
        from .budget import RangeCounter

        return RangeCounter(self, text)

    def counter(self) -> "AppendCounter":
        """A counter to .append() text to; .count is the exact count of all of it so far."""
        from .budget import AppendCounter

        return AppendCounter(self)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of a text that is exactly one token (ordinary or special); else KeyError."""
        if isinstance(text_or_bytes, str):
            if text_or_bytes in self._special_tokens:
                return self._special_tokens[text_or_bytes]
            text_or_bytes = text_or_bytes.encode("utf-8")
        token = self._model.lookup(text_or_bytes)
        if token is None:
            for name, i in self._special_tokens.items():
                if name.encode() == text_or_bytes:
                    return i
            raise KeyError(text_or_bytes)
        return token

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8) -> list[list[int]]:
        """[encode_ordinary(t) for t in text], across threads: each thread's C call encodes a
        chunk of documents without the GIL."""
        got = self._batch(0, text, num_threads, None)
        if got is not None:
            return got
        from .parallel import map_slices

        def part(texts: Sequence[str]) -> list[list[int]]:  # one C call per slice
            if self._added:
                return [self.encode_ordinary(t) for t in texts]
            return self._model.encode_many([self._bytes(t) for t in texts])

        return map_slices(part, text, [len(t) for t in text], num_threads)

    def encode_batch(self, text: Sequence[str], *, num_threads: int = 8,
                     allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                     disallowed_special: "Literal['all'] | Collection[str]" = "all"
                     ) -> list[list[int]]:
        """[encode(t, ...) for t in text], across threads (see encode_ordinary_batch)."""
        got = self._batch(0, text, num_threads, (allowed_special, disallowed_special))
        if got is not None:
            return got if self._wrap is None else [[*self._wrap[0], *ids, *self._wrap[1]]
                                                   for ids in got]
        from .parallel import map_batch

        from functools import partial

        fn = partial(self.encode, allowed_special=allowed_special,
                     disallowed_special=disallowed_special)
        return map_batch(fn, text, [len(t) for t in text], num_threads)

    def count_batch(self, text: Sequence[str], *, num_threads: int = 8,
                    allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                    disallowed_special: "Literal['all'] | Collection[str]" = "all") -> list[int]:
        """[count(t) for t in text], across threads for large batches."""
        got = self._batch(1, text, num_threads, (allowed_special, disallowed_special))
        if got is not None:
            return got if self._wrap is None else [n + len(self._wrap[0]) + len(self._wrap[1])
                                                   for n in got]
        from .parallel import map_batch

        from functools import partial

        fn = partial(self.count, allowed_special=allowed_special,
                     disallowed_special=disallowed_special)
        return map_batch(fn, text, [len(t) for t in text], num_threads)

    def encode_parallel(self, text: str, *, num_threads: int | None = None,
                        allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                        disallowed_special: "Literal['all'] | Collection[str]" = "all"
                        ) -> list[int]:
        """encode(text) for one large text, on all cores (or num_threads): the text is cut where
        the pretokenizer provably restarts, so the ids are exactly encode(text)'s."""
        ids = self._encode(text, allowed_special, disallowed_special, num_threads)
        return ids if self._wrap is None else [*self._wrap[0], *ids, *self._wrap[1]]

    def count_parallel(self, text: str, *, num_threads: int | None = None,
                       allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                       disallowed_special: "Literal['all'] | Collection[str]" = "all") -> int:
        """count(text) for one large text, on all cores (or num_threads)."""
        n = self._count(text, allowed_special, disallowed_special, num_threads)
        return n if self._wrap is None else n + len(self._wrap[0]) + len(self._wrap[1])

    def pretokenize(self, text: str) -> list[str]:
        """The pieces the pretokenizer cuts text into (ordinary text)."""
        from ._ids import pieces

        data = self._bytes(text)
        ends = self._model.pretokenize(data)
        return pieces(data, ends.buffer_info()[0], len(ends))

    # -- decoding ---------------------------------------------------------------------------
    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        if tokens.__class__ is not list:
            _check_tokens(tokens)
        if self._extra and not self._extra.keys().isdisjoint(tokens):
            extra, out, run = self._extra, [], []  # type: ignore[var-annotated]
            for t in tokens:
                if t in extra:
                    out += [self._model.decode(run), extra[t]] if run else [extra[t]]
                    run = []
                else:
                    run.append(t)
            return b"".join(out) + (self._model.decode(run) if run else b"")
        return self._model.decode(tokens)

    def regex_automaton(self, pattern: str, canonical: bool = False,
                        mask_cache: int = 32 << 20) -> "TokenAutomaton":
        """A token-level automaton for constrained decoding: the tokens that keep the text a
        prefix of a string matching pattern (a whole-text match; see edgetok.automata for the
        syntax and for what canonical=True guarantees). BPE models only. mask_cache: bytes of
        canonical bitsets kept for states seen again."""
        from .automata import TokenAutomaton

        return TokenAutomaton(self, pattern, canonical, mask_cache)

    def is_canonical(self, tokens: Sequence[int]) -> bool:
        """True iff encode_ordinary(decode_bytes(tokens)) == tokens (bytes that are not UTF-8
        re-encoded as _encode_bytes does). For BPE models with pair tables and a C
        pretokenizer (the built-ins, GGUF / tokenizer.json byte-level BPE models, Llama-3's
        included) this is one linear pass in C with no encoding: every piece boundary of the
        decoded text must be a token boundary, and inside each piece every adjacent pair of
        tokens a valid pair (and a piece that is a token, that token).
        Other models (regex pretokenizers, NFC, dropped bytes, added tokens, SentencePiece),
        and bytes that are not UTF-8, are decided by re-encoding. KeyError for unknown ids."""
        ids = list(tokens)
        if not self._extra.keys().isdisjoint(ids):
            self.decode_bytes(ids)  # (KeyError as decoding would)
            return False  # a special token: encode_ordinary never gives one
        if self._model.kind == "bpe":
            verdict = self._model.is_canonical(ids)
            if verdict is not None:
                return verdict
        return self.canonicalize(ids) == ids

    def canonicalize(self, tokens: Sequence[int]) -> list[int]:
        """The canonical tokens of the same bytes: encode_ordinary(decode_bytes(tokens)), or
        _encode_bytes for bytes that are not UTF-8."""
        data = self.decode_bytes(tokens)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return self._encode_bytes(data)
        return self.encode_ordinary(text)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        if not 0 <= token < 1 << 32:
            raise OverflowError("out of range integral type conversion attempted")
        b = self._model.token_bytes(token)
        if b is None:
            b = self._extra.get(token)
            if b is None:
                raise KeyError(str(token))
        return b

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        return [self.decode_single_token_bytes(t) for t in tokens]

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> list[str]:
        return [self.decode(t, errors=errors) for t in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *,
                           num_threads: int = 8) -> list[bytes]:
        return [self.decode_bytes(t) for t in batch]

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary token, sorted (as tiktoken returns them)."""
        specials = set(self._special_tokens.values())
        out = []
        for i in range(self.n_vocab):
            if i not in specials and (b := self._model.token_bytes(i)) is not None:
                out.append(b)
        return sorted(out)

    # -- the rest of tiktoken's surface -----------------------------------------------------
    def is_special_token(self, token: int) -> bool:
        assert isinstance(token, int)
        return token in self._special_values

    @_once
    def _special_values(self) -> set[int]:
        return set(self._special_tokens.values())

    @_once
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """tiktoken's mergeable_ranks: the bytes of every ordinary token and its id (its rank,
        in a tiktoken vocabulary)."""
        specials = set(self._model.special_ids())
        out = {}
        for i in range(self._model.n_vocab):
            if i not in specials and (b := self._model.token_bytes(i)) is not None:
                out[b] = i
        return out

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """(text, offsets): offsets[k] is the index in text of the first character holding
        bytes of token k (tiktoken's decode_with_offsets; UnicodeDecodeError if the tokens
        are not valid UTF-8)."""
        token_bytes = self.decode_tokens_bytes(tokens)
        text_len = 0
        offsets = []
        for token in token_bytes:
            offsets.append(max(0, text_len - (0x80 <= token[0] < 0xC0)))
            text_len += sum(1 for c in token if not 0x80 <= c < 0xC0)
        return b"".join(token_bytes).decode("utf-8", errors="strict"), offsets

    def count_messages(self, messages: "Sequence[dict[str, Any]]", model: str | None = None, *,
                       chat_template: str | None = None, template_name: str | None = None,
                       tools: Any = None, documents: Any = None,
                       add_generation_prompt: bool = False, **context: Any) -> int:
        """The exact token count of a list of chat messages ({"role": ..., "content": ...}).
        model: an OpenAI chat model (gpt-4o, gpt-4, gpt-3.5-turbo-0301, ...): the OpenAI
        cookbook's num_tokens_from_messages (per-message and per-name overheads, 3 for the
        reply's priming), contents encoded with this encoding, which must be the model's; with
        tools (function definitions, as the API takes them), plus its num_tokens_for_tools
        share (gpt-4o, gpt-4o-mini, gpt-3.5-turbo and gpt-4: the models it gives constants for).
        Without model: the model file's own chat template (a GGUF's, a Hugging Face folder's,
        or chat_template=) rendered with jinja2 as transformers' apply_chat_template(
        tokenize=True) does; special tokens come from the template only, never from message
        text."""
        from . import chat

        if model is not None:
            from .model_names import encoding_name_for_model

            want = encoding_name_for_model(model)
            if self.name != want and self._recipe != ("get", want):
                raise ValueError(f"{model} uses {want}, not {self.name}: count with "
                                 f"edgetok.encoding_for_model({model!r})")
            n = chat.count_openai(self, list(messages), model)
            return n + chat.count_openai_tools(self, tools, model) if tools is not None else n
        return len(chat.template_ids(self, list(messages), chat_template=chat_template,
                                     template_name=template_name, tools=tools,
                                     documents=documents,
                                     add_generation_prompt=add_generation_prompt, **context))

    def encode_with_offsets(self, text: str, *,
                            allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                            disallowed_special: "Literal['all'] | Collection[str]" = "all",
                            add_special_tokens: bool | None = None
                            ) -> "tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]":
        """(ids, offsets, byte_offsets): encode(text, ...)'s ids; offsets[k] = (start, end),
        the characters of text that token k's bytes come from (Hugging Face's
        encoding.offsets: a token holding part of a character spans all of it; start is
        tiktoken's decode_with_offsets offset), trimmed of spaces where a tokenizer.json's
        post-processor says trim_offsets; byte_offsets[k] the same in text's UTF-8 bytes.
        Tokens a post-processor or add_special_tokens adds get (0, 0). Byte-level BPE models
        (tiktoken's, GGUF, tokenizer.json); on a model that normalises to NFC, offsets point
        into text as given, aligned as Hugging Face aligns NFC (edgetok._align)."""
        m = self._model
        if m.kind == "wordpiece":  # through BertNormalizer, as Hugging Face aligns it
            from .wordpiece import offsets

            return offsets(self, text, allowed_special, disallowed_special, add_special_tokens)
        if m.kind != "bpe":
            raise ValueError(f"{self.name}: offsets are for byte-level BPE models, not "
                             "SentencePiece ones (their normaliser rewrites the text)")
        if self._nfc and not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        if self._nfc and _nfc(text) != text:
            from ._align import nfc_aligned

            norm, align = nfc_aligned(text)
            ids, offs, _ = self.encode_with_offsets(
                norm, allowed_special=allowed_special, disallowed_special=disallowed_special,
                add_special_tokens=add_special_tokens)
            starts = [0]  # the byte offset of each character of text
            for c in text:
                starts.append(starts[-1] + len(c.encode("utf-8", "surrogatepass")))
            orig: list[tuple[int, int]] = []
            for cs, ce in offs:
                if cs == ce == 0 or cs >= len(align):
                    at = 0 if cs == ce == 0 else len(text)
                    orig.append((at, at))
                    continue
                a = align[cs]
                start = a if a >= 0 else 0
                b = align[ce - 1] if ce > cs else a
                end = (b + 1 if b >= 0 else 0) if ce > cs else start
                orig.append((start, max(end, start)))
            return ids, orig, [(starts[a], starts[b]) for a, b in orig]
        ids = self.encode(text, allowed_special=allowed_special,
                          disallowed_special=disallowed_special, add_special_tokens=False)
        data = _utf8(text)
        drops = m.drops_bytes
        specials = {i: t for t, i in self._matchable.items()}
        post = self._post
        trim, prefix_space = (post["trim"], post["prefix_space"]) if post else (False, False)
        offsets: list[tuple[int, int]] = []
        byte_offsets: list[tuple[int, int]] = []
        pos = chars = 0  # chars: characters that start in data[:pos]
        for k, t in enumerate(ids):
            start = pos
            tb = specials[t].encode("utf-8") if t in specials else self.decode_single_token_bytes(t)
            if drops:  # bytes without a token were dropped before merging: skip them
                while pos < len(data) and not data.startswith(tb, pos):
                    pos += 1
            if not data.startswith(tb, pos):
                raise RuntimeError(f"token {t} does not match the text at byte {pos}")
            end = pos + len(tb)
            first = chars + _leads(data, start, pos + 1)  # up to the token's first byte
            cs, ce = first - 1, first + _leads(data, pos + 1, end)
            chars = ce
            bs, be = pos, end
            if trim:
                # Hugging Face's process_offsets: leading and trailing spaces off (as
                # characters, with their bytes); one leading space kept on the first token
                # with add_prefix_space
                s = specials[t] if t in specials else tb.decode("latin-1")
                ws = _HF_SPACE if t in specials else " "
                lead = len(s) - len(s.lstrip(ws))
                trail = len(s) - len(s.rstrip(ws))
                if lead and prefix_space and lead == 1 and (k == 0 or cs == 0):
                    lead = 0
                if lead:
                    nb = len(s[:lead].encode("utf-8")) if t in specials else lead
                    cs, bs = min(cs + lead, ce), min(bs + nb, be)
                if trail and ce >= trail:
                    nb = len(s[len(s) - trail:].encode("utf-8")) if t in specials else trail
                    ce, be = max(ce - trail, cs), max(be - nb, bs)
            offsets.append((cs, ce))
            byte_offsets.append((bs, be))
            pos = end
        before, after = self._special_wrap(add_special_tokens)
        if before or after:
            ids = [*before, *ids, *after]
            zero = [(0, 0)]
            offsets = zero * len(before) + offsets + zero * len(after)
            byte_offsets = zero * len(before) + byte_offsets + zero * len(after)
        return ids, offsets, byte_offsets

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """The ids of text_or_bytes as one piece: BPE with no pretokenizer split, no special
        tokens."""
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        return self._model.encode_piece(bytes(text_or_bytes))

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """encode_ordinary with the pattern applied by the `regex` module, each piece encoded
        by _encode_single_piece (tiktoken's check of its own splitter)."""
        import regex

        ret: list[int] = []
        for piece in regex.findall(regex.compile(self._pat_str), text):
            ret.extend(self._encode_single_piece(piece.encode("utf-8")))
        return ret

    def _encode_last_piece(self, text: str, allowed_special: "AbstractSet[str]"
                           ) -> tuple[list[int], int]:
        """(ids, how many of the last ones the last pretokenizer piece gave; 0 if a special
        token came last): tiktoken's CoreBPE::encode."""
        tokens: list[int] = []
        last = 0
        for seg in self._segments(text, allowed_special, ()):
            if isinstance(seg, int):
                tokens.append(seg)
                last = 0
            elif seg:
                data = self._bytes(seg)
                ends = self._model.pretokenize(data)
                tokens += self._model.encode(data)[0]
                if len(ends):
                    start = ends[-2] if len(ends) > 1 else 0
                    last = len(self._model.encode(data[start:])[0])
        return tokens, last

    def _increase_last_piece_token_len(self, tokens: list[int], last: int) -> int:
        def all_space(t: int) -> bool:
            b = self._model.token_bytes(t) if t not in self._special_values else None
            return b is not None and all(c in b" \n\t" for c in b)

        if last > 0 and all_space(tokens[len(tokens) - last]):
            while last < len(tokens) and all_space(tokens[len(tokens) - last - 1]):
                last += 1
        return last

    def _encode_bytes(self, text: bytes) -> list[int]:
        """The ids of bytes that need not be UTF-8, as tiktoken's _encode_bytes: the valid
        UTF-8 prefix encoded as text, its last piece and the rest BPE-encoded together."""
        try:
            return self.encode_ordinary(text.decode("utf-8"))
        except UnicodeDecodeError as e:
            valid = e.start
        tokens, last = self._encode_last_piece(text[:valid].decode("utf-8"), frozenset())
        last = self._increase_last_piece_token_len(tokens, last)
        if tokens and last > 0:
            unstable = self.decode_bytes(tokens[len(tokens) - last:]) + text[valid:]
            del tokens[len(tokens) - last:]
        else:
            unstable = text[valid:]
        if unstable:
            tokens += self._encode_single_piece(unstable)
        return tokens

    def encode_with_unstable(self, text: str, *,
                             allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                             disallowed_special: "Literal['all'] | Collection[str]" = "all"
                             ) -> tuple[list[int], list[list[int]]]:
        """(stable tokens, possible completions): tiktoken's encode_with_unstable (the
        completions in no particular order)."""
        if allowed_special == "all":
            allowed_special = self.special_tokens_set
        if disallowed_special == "all":
            disallowed_special = self.special_tokens_set - allowed_special  # type: ignore[operator]
        if disallowed_special:
            for _ in self._segments(text, set(), disallowed_special):
                pass
        tokens, last = self._encode_last_piece(text, allowed_special)  # type: ignore[arg-type]
        if last == 0:
            return tokens, []
        last = self._increase_last_piece_token_len(tokens, last)
        unstable = self.decode_bytes(tokens[len(tokens) - last:])
        del tokens[len(tokens) - last:]
        if not unstable:
            return tokens, []
        import bisect

        sorted_bytes = self._sorted_token_bytes
        completions: set[tuple[int, ...]] = set()
        point = bisect.bisect_left(sorted_bytes, unstable)
        while point < len(sorted_bytes) and sorted_bytes[point].startswith(unstable):
            completions.add((self._mergeable_ranks[sorted_bytes[point]],))
            point += 1
        for i in range(1, len(unstable)):
            prefix, suffix = unstable[:i], unstable[i:]
            point = bisect.bisect_left(sorted_bytes, suffix)
            while point < len(sorted_bytes) and sorted_bytes[point].startswith(suffix):
                possibility = prefix + sorted_bytes[point]
                try:
                    encoded = self.encode_ordinary(possibility.decode("utf-8"))
                except UnicodeDecodeError:
                    encoded = self._encode_single_piece(possibility)
                seq, seq_len = [], 0
                for t in encoded:
                    seq.append(t)
                    seq_len += len(self.decode_single_token_bytes(t))
                    if seq_len >= len(unstable):
                        break
                completions.add(tuple(seq))
                point += 1
        if len(unstable) > 1:
            cut = len(unstable) - 1
            while cut > 0 and 0x80 <= unstable[cut] < 0xC0:
                cut -= 1
            last_char = unstable[cut:].decode("utf-8", "replace")
            if cut > 0 and len(last_char) == 1 and last_char.isspace():
                completions.add(tuple(self._encode_single_piece(unstable[:cut])
                                      + self._encode_single_piece(unstable[cut:])))
        return tokens, [list(c) for c in completions]

    @_once
    def _sorted_token_bytes(self) -> list[bytes]:
        return sorted(self._mergeable_ranks)

    # -- pickling ---------------------------------------------------------------------------
    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        """Pickled as what rebuilds it, not its model: a built-in encoding's name, a loaded
        one's file, a constructed one's arguments (the worker maps the model itself)."""
        recipe = self._recipe
        if recipe is None:
            import os

            source = self._model.source
            if not os.path.isfile(source):
                raise TypeError(f"cannot pickle {self!r}: its model came from memory "
                                f"({source}), not from a file, a name or tiktoken's arguments")
            recipe = ("load", os.path.abspath(source), self.name, False, dict(self._special_tokens))
        return _rebuild, (recipe,)

    # -- flat results and the batch path ------------------------------------------------------
    def encode_batch_flat(self, text: Sequence[str], *, num_threads: int = 8,
                          allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                          disallowed_special: "Literal['all'] | Collection[str]" = "all",
                          numpy: bool = False) -> tuple[Any, Any]:
        """encode_batch(text, ...) as one flat run: (ids, offsets), the ids of text[i] being
        ids[offsets[i]:offsets[i + 1]]; array('I') and array('q') (len(text) + 1 offsets), or
        numpy uint32 / int64 arrays with numpy=True. No Python object per id or per document."""
        from array import array

        ids: Any = bytearray() if numpy else array("I")  # (the C path appends to it)
        offs = (self._batch(2, text, num_threads, (allowed_special, disallowed_special),
                            ids.extend if numpy else ids.frombytes)
                if self._wrap is None else None)
        if offs is None:  # per document (a normalising model, a regex pretokenizer, specials)
            import itertools

            lists = self.encode_batch(text, num_threads=num_threads,
                                      allowed_special=allowed_special,
                                      disallowed_special=disallowed_special)
            ids = array("I", itertools.chain.from_iterable(lists))
            offs = bytearray(array("q", [0, *itertools.accumulate(map(len, lists))]).tobytes())
        return _flat(ids, offs, numpy)

    def encode_to_numpy(self, text: str, *,
                        allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                        disallowed_special: "Literal['all'] | Collection[str]" = "all") -> Any:
        """encode(text, ...) as a numpy uint32 array (numpy is imported here, on first use)."""
        import numpy as np

        ids = bytearray()
        special = (allowed_special, disallowed_special)
        if self._wrap is None and self._batch(2, [text], 1, special, ids.extend) is not None:
            return np.frombuffer(ids, dtype=np.uint32)
        return np.array(self.encode(text, allowed_special=allowed_special,
                                    disallowed_special=disallowed_special), dtype=np.uint32)

    def _batch(self, mode: int, text: Sequence[str], num_threads: int,
               special: "tuple[Any, Any] | None", sink: object = None) -> Any:
        """The batch methods' C path (Model.batch: chunks of documents encoded across threads,
        the helpers never taking the GIL): mode 0 lists of ids, 1 counts, 2 the ids to sink
        (see Model.batch) and the offsets;
        special: (allowed_special, disallowed_special), None for encode_ordinary. Documents
        that may hold a special or added token are redone one by one as encode/count would.
        None where the path does not apply (a normalising model, pieces cut by a regex, many
        special tokens, disallowed_special naming strings)."""
        m = self._model
        if special is not None and special[0].__class__ not in _SETS and special[0] != "all":
            _bad_allowed(special[0])
        if self._nfc or m.regex_split:
            return None
        if special is not None and not (special[1] == "all" or not special[1]):
            return None
        if not self._matchable or (special is None and not self._added):
            heads: tuple[bytes, ...] = ()
        elif self._heads is None:
            return None
        else:
            heads = tuple(h.encode("utf-8", "surrogatepass") for h in self._heads)
        docs = text if type(text) is list else list(text)
        out, flagged = m.batch(mode, docs, heads, num_threads, sink)
        if mode == 2:
            return None if flagged else out
        for i in flagged:
            if special is None:
                out[i] = self.encode_ordinary(docs[i])
            elif mode == 0:
                out[i] = self.encode(docs[i], allowed_special=special[0],
                                     disallowed_special=special[1], add_special_tokens=False)
            else:
                out[i] = self.count(docs[i], allowed_special=special[0],
                                    disallowed_special=special[1], add_special_tokens=False)
        return out


def _flat(ids: Any, offsets: bytearray, numpy: bool) -> tuple[Any, Any]:
    """ids (an array('I'), or a bytearray of uint32) and offsets (a bytearray of int64) as
    array('I') and array('q'), or numpy's arrays over the same memory."""
    if numpy:
        import numpy as np

        return np.frombuffer(ids, dtype=np.uint32), np.frombuffer(offsets, dtype=np.int64)
    from array import array

    o = array("q")
    o.frombytes(offsets)
    return ids, o
