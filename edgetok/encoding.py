"""Encoding: tiktoken's Encoding surface over an edgetok model."""
from __future__ import annotations

import functools
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings
    from typing import AbstractSet, Collection, Iterator, Literal, Sequence

    from .budget import AppendCounter, RangeCounter

from ._ffi import Model



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


@functools.lru_cache(maxsize=64)
def _special_regex(tokens: frozenset[str]):  # type: ignore[no-untyped-def]
    import re

    return re.compile("|".join(re.escape(t) for t in sorted(tokens, key=lambda t: (-len(t), t))))


class Encoding:
    """A tokenizer with tiktoken's interface: same ids, same exceptions, same results."""

    def __init__(self, name: str, model: Model, special_tokens: dict[str, int] | None = None):
        self.name = name
        self._model = model
        # added tokens that ordinary text matches (Hugging Face's non-special ones)
        self._added: dict[str, int] = {}
        if special_tokens is None:
            special_tokens = {}
            # SentencePiece models match no special text: "<s>" in a text is text
            added = set(model.added_ids()) if model.kind == "bpe" else set()
            for i in (model.special_ids() if model.kind == "bpe" else []):
                b = model.token_bytes(i)
                if b is not None:
                    (self._added if i in added else special_tokens)[b.decode("utf-8", "replace")] = i
        self._special_tokens = special_tokens
        self._matchable = {**special_tokens, **self._added}
        self._pat_str = model.pattern
        # the first two characters of the special and added tokens, when few: text holding
        # none of them holds no such token, which one scan each tells
        heads = {t[:2] for t in self._matchable}
        self._heads = tuple(heads) if len(heads) <= 4 else None
        self._starts = None  # see _present
        self._lens: dict[str, list[int]] = {}
        self.max_token_value = model.n_vocab - 1
        self._nfc = model.nfc  # the model's normaliser: NFC (Qwen2's tokenizer.json) or none

    def _bytes(self, text: str) -> bytes:
        """text as the model encodes it: normalised if the model says so, in UTF-8."""
        return _utf8(_nfc(text) if self._nfc else text)

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # -- properties -----------------------------------------------------------------------
    @property
    def n_vocab(self) -> int:
        return self.max_token_value + 1

    @property
    def eot_token(self) -> int:
        return self._special_tokens["<|endoftext|>"]

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    @property
    def model(self) -> Model:
        return self._model

    # -- encoding ---------------------------------------------------------------------------
    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of text, with special tokens treated as ordinary text (added tokens that are
        not special, which Hugging Face matches in any text, are still matched)."""
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
               add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Ids of text. Special tokens in allowed_special become their ids; any other special
        token found in the text raises ValueError unless disallowed_special excludes it.
        add_bos / add_eos put a SentencePiece model's BOS / EOS id around them (as
        sentencepiece's encode(text, add_bos=True, add_eos=True))."""
        if (not allowed_special and disallowed_special == "all"
                and not self._may_hold_special(text)):
            ids = self._model.encode(self._bytes(text))[0]
        else:
            ids = self._encode(text, allowed_special, disallowed_special, 1)
        if add_bos:
            ids.insert(0, self._bos_eos("bos"))
        if add_eos:
            ids.append(self._bos_eos("eos"))
        return ids

    def _bos_eos(self, which: str) -> int:
        i = self._model.bos if which == "bos" else self._model.eos
        if i is None:
            raise ValueError(f"{self.name} has no {which.upper()} token")
        return i

    def count(self, text: str, *,
              allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
              disallowed_special: "Literal['all'] | Collection[str]" = "all") -> int:
        """len(encode(text, ...)) without building the list of ids."""
        return self._count(text, allowed_special, disallowed_special, 1)

    def _encode(self, text: str, allowed_special: "Literal['all'] | AbstractSet[str]",
                disallowed_special: "Literal['all'] | Collection[str]", threads: int | None
                ) -> list[int]:
        """encode() on `threads` threads (None: all cores)."""
        ids: list[int] = []
        for seg in self._segments(text, allowed_special, disallowed_special):
            if isinstance(seg, int):
                ids.append(seg)
            elif seg and threads == 1:
                ids += self._model.encode(self._bytes(seg))[0]
            elif seg:
                from .parallel import sharded

                for part in sharded(lambda d: self._model.encode(d)[0], self._model.shard_cuts,
                                    self._bytes(seg), threads):
                    ids += part
        return ids

    def _count(self, text: str, allowed_special: "Literal['all'] | AbstractSet[str]",
               disallowed_special: "Literal['all'] | Collection[str]", threads: int | None) -> int:
        """count() on `threads` threads (None: all cores)."""
        total = 0
        for seg in self._segments(text, allowed_special, disallowed_special):
            if isinstance(seg, int):
                total += 1
            elif seg and threads == 1:
                total += self._model.count(self._bytes(seg))[0]
            elif seg:
                from .parallel import sharded

                total += sum(sharded(lambda d: self._model.count(d)[0], self._model.shard_cuts,
                                     self._bytes(seg), threads))
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
        from .parallel import map_batch

        fn = functools.partial(self.encode, allowed_special=allowed_special,
                               disallowed_special=disallowed_special)
        return map_batch(fn, text, [len(t) for t in text], num_threads)

    def count_batch(self, text: Sequence[str], *, num_threads: int = 8,
                    allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                    disallowed_special: "Literal['all'] | Collection[str]" = "all") -> list[int]:
        """[count(t) for t in text], across threads for large batches."""
        from .parallel import map_batch

        fn = functools.partial(self.count, allowed_special=allowed_special,
                               disallowed_special=disallowed_special)
        return map_batch(fn, text, [len(t) for t in text], num_threads)

    def encode_parallel(self, text: str, *, num_threads: int | None = None,
                        allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                        disallowed_special: "Literal['all'] | Collection[str]" = "all"
                        ) -> list[int]:
        """encode(text) for one large text, on all cores (or num_threads): the text is cut where
        the pretokenizer provably restarts, so the ids are exactly encode(text)'s."""
        return self._encode(text, allowed_special, disallowed_special, num_threads)

    def count_parallel(self, text: str, *, num_threads: int | None = None,
                       allowed_special: "Literal['all'] | AbstractSet[str]" = set(),  # noqa: B006
                       disallowed_special: "Literal['all'] | Collection[str]" = "all") -> int:
        """count(text) for one large text, on all cores (or num_threads)."""
        return self._count(text, allowed_special, disallowed_special, num_threads)

    def pretokenize(self, text: str) -> list[str]:
        """The pieces the pretokenizer cuts text into (ordinary text)."""
        from ._ids import pieces

        data = self._bytes(text)
        ends = self._model.pretokenize(data)
        return pieces(data, ends.buffer_info()[0], len(ends))

    # -- decoding ---------------------------------------------------------------------------
    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        return self._model.decode(tokens)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        if not 0 <= token < 1 << 32:
            raise OverflowError("out of range integral type conversion attempted")
        b = self._model.token_bytes(token)
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
