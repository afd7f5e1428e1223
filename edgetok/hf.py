"""Import byte-level BPE models: Hugging Face tokenizer.json files and llama.cpp GGUF files.

Both describe GPT-2 style BPE: tokens spelled in the byte-to-unicode alphabet, a merge list,
a pretokenizer (one or more regexes applied in turn, each match and each gap a piece) and
added tokens. edgetok's BPE is tiktoken's (the lowest-ranked token made by any adjacent pair
merges first), with ids as ranks; that equals applying the merge list when the merges come
in the order of the ids of the tokens they make, which is checked here. Known patterns get
their regex-free pretokenizer; any other runs through the `regex` module in Python.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._ffi import ModelError, compile_bpe
from .compiler import PATTERNS

# the GPT-2 pattern as tokenizer.json's ByteLevel pre-tokenizer runs it (same pieces as
# tiktoken's r50k pattern, PATTERNS["gpt2"])
HF_GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# single patterns that a regex-free pretokenizer reproduces exactly
KNOWN = {HF_GPT2_PATTERN: "gpt2", **{p: name for name, p in PATTERNS.items()}}
# each digit split off, then GPT-2's pattern (StarCoder, Refact, Command-R): gpt2 with nd
DIGITS_THEN_GPT2 = [r"\p{N}", HF_GPT2_PATTERN]
# llama.cpp's pre-tokenizer names (tokenizer.ggml.pre): the regexes the model's tokenizer.json
# applies, and whether it normalises to NFC first
GGUF_PRE = {
    "gpt-2": ([HF_GPT2_PATTERN], False),
    "mpt": ([HF_GPT2_PATTERN], True),
    "llama-bpe": ([PATTERNS["llama3"]], False),
    "llama3": ([PATTERNS["llama3"]], False),
    "qwen2": ([PATTERNS["qwen2"]], True),
    "starcoder": (DIGITS_THEN_GPT2, False),
    "refact": (DIGITS_THEN_GPT2, False),
    "falcon": ([r"[\p{P}\$\+<=>\^~\|`]+", HF_GPT2_PATTERN, "[0-9][0-9][0-9]"], False),
    "deepseek-coder": ([r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+",
                        "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", r"\p{N}"], False),
    # DeepSeek LLM's tokenizer.json spells its letters as an explicit class (llama.cpp's copy)
    "deepseek-llm": (["[\u000d\u000a]",
                      "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf"
                      "\u01c4-\u0293\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f"
                      "\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-"
                      "\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
                      "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-"
                      "\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-"
                      "\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-"
                      "\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
                      "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-"
                      "\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b"
                      "\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-"
                      "\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17"
                      "\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
                      "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2"
                      "\U000118a0-\U000118df\U0001e900-\U0001e943]+",
                      "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
                      "\\s+$",
                      "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
                      "\\p{N}+"], False),
    "command-r": (DIGITS_THEN_GPT2, False),
    "qwen35": ([r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"""
                r"""| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""], False),
}


def _byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-to-unicode map, inverted: the character that stands for each byte."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def _unbyte(token: str, alphabet: dict[str, int], source: str) -> bytes:
    try:
        return bytes(alphabet[c] for c in token)
    except KeyError:
        raise ModelError(f"{source}: token {token!r} is not spelled in the byte-level alphabet "
                         "(only byte-level BPE models can be imported)") from None


def pretokenizer_for(patterns: list[str], source: str) -> tuple[str, str]:
    """(pretokenizer name, pattern to record) for regexes applied in turn: the regex-free one
    that reproduces a single known pattern, else "regex" with the list as JSON (each checked
    now, since the fallback only compiles them when encoding)."""
    if len(patterns) == 1 and patterns[0] in KNOWN:
        return KNOWN[patterns[0]], patterns[0]
    if patterns == DIGITS_THEN_GPT2:
        return "gpt2-digits", json.dumps(patterns)
    import regex

    for p in patterns:
        try:
            regex.compile(p)
        except Exception as e:  # noqa: BLE001 - any compile error is the file's
            raise ModelError(f"{source}: pre-tokenizer pattern {p!r} is not a regex ({e})") from None
    return "regex", json.dumps(patterns)


def compile_byte_level(vocab: list[tuple[str, int]], merges: list[tuple[str, str]],
                       added: list[tuple[bytes, int, bool]], patterns: list[str], nfc: bool,
                       source: str) -> bytes:
    """An .etok image of a byte-level BPE model: vocab as (byte-level token, id), merges in
    priority order, added tokens as (text, id, special), the pretokenizer regexes applied in
    turn. Special ones become special tokens (tiktoken's rules); the others are matched in
    ordinary text, as Hugging Face does."""
    ids = dict(vocab)
    added_ids = {i for _, i, _ in added}
    if any(not 0 <= i < 0x7FFFFFFF for i in (*ids.values(), *added_ids)):
        raise ModelError(f"{source}: token ids must be in 0 .. 2^31 - 2")
    last = -1
    seen: set[str] = set()
    for a, b in merges:
        t = a + b
        if t in seen:
            continue  # a later merge making the same token: tiktoken's rank order covers it
        seen.add(t)
        i = ids.get(t)
        if i is None or a not in ids or b not in ids:
            raise ModelError(f"{source}: merge {a!r} + {b!r} makes no token of the vocabulary")
        if i < last:
            raise ModelError(f"{source}: the merges are not in the order of the ids of the "
                             f"tokens they make ({t!r}, id {i}, comes after id {last}); "
                             "such models are not supported yet")
        last = i
    alphabet = _byte_alphabet()
    # a token spelled outside the byte-level alphabet (Command-R has 1,403 raw emoji and
    # symbols) can never come out of Hugging Face's BPE, whose text is byte-level characters,
    # unless a merge makes it: leave it out, as unreachable
    tokens = [(_unbyte(t, alphabet, source), i) for t, i in vocab
              if i not in added_ids and (t in seen or all(c in alphabet for c in t))]
    family, pattern = pretokenizer_for(patterns, source)
    return compile_bpe(tokens, [(t, i) for t, i, _ in added], pattern, family, nfc,
                       frozenset(i for _, i, special in added if not special), source)


MAX_NESTING = 32  # pre-tokenizer Sequences nested deeper than this are refused


def _obj(x: Any, what: str, source: str) -> dict[str, Any]:
    if type(x) is not dict:
        raise ModelError(f"{source}: {what} is {type(x).__name__}, not an object")
    return x


def _str(x: Any, what: str, source: str) -> str:
    if type(x) is not str:
        raise ModelError(f"{source}: {what} is {type(x).__name__}, not a string")
    return x


def _id(x: Any, what: str, source: str) -> int:
    if type(x) is not int or not 0 <= x < 0x7FFFFFFF:
        raise ModelError(f"{source}: {what} has id {x!r}; ids must be integers in 0 .. 2^31 - 2")
    return x


def _utf8(s: str, what: str, source: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, from a \ud800 escape
        raise ModelError(f"{source}: {what} {s!r} is not valid Unicode") from None


def _splits(pre: Any, source: str, depth: int = 0) -> list[str]:
    """The regexes of a tokenizer.json pre_tokenizer, applied in turn."""
    if pre is None:
        raise ModelError(f"{source}: no pre_tokenizer (byte-level BPE needs one)")
    pre = _obj(pre, "a pre_tokenizer", source)
    kind = pre.get("type")
    if kind == "Sequence":
        subs = pre.get("pretokenizers", [])
        if type(subs) is not list:
            raise ModelError(f"{source}: Sequence pretokenizers is {type(subs).__name__}, "
                             "not a list")
        if depth >= MAX_NESTING:
            raise ModelError(f"{source}: pre-tokenizer Sequences nested more than "
                             f"{MAX_NESTING} deep")
        return [p for sub in subs for p in _splits(sub, source, depth + 1)]
    if kind == "ByteLevel":
        if pre.get("add_prefix_space"):
            raise ModelError(f"{source}: ByteLevel add_prefix_space is not supported")
        return [HF_GPT2_PATTERN] if pre.get("use_regex", True) else []
    if kind == "Split":
        pat = _obj(pre.get("pattern"), "a Split pattern", source)
        if pre.get("behavior") != "Isolated" or pre.get("invert"):
            raise ModelError(f"{source}: Split with behavior {pre.get('behavior')!r} "
                             f"(invert={pre.get('invert')}) is not supported")
        if "Regex" in pat:
            return [_str(pat["Regex"], "a Split regex", source)]
        import regex

        return [regex.escape(_str(pat.get("String"), "a Split string", source))]
    if kind == "Digits":
        return [r"\p{N}" if pre.get("individual_digits") else r"\p{N}+"]
    raise ModelError(f"{source}: pre-tokenizer {kind!r} is not supported")


def _nfc(norm: Any, source: str) -> bool:
    if norm is None:
        return False
    norm = _obj(norm, "the normalizer", source)
    if norm.get("type") == "NFC":
        return True
    if norm.get("type") == "Sequence" and not norm.get("normalizers"):
        return False
    raise ModelError(f"{source}: normalizer {norm.get('type')!r} is not supported")


def _merge(m: Any, k: int, source: str) -> tuple[str, str]:
    """Merge k of a tokenizer.json: "a b" or ["a", "b"]."""
    pair = m.split(" ", 1) if type(m) is str else m
    if type(pair) is not list or len(pair) != 2 or any(type(x) is not str for x in pair):
        raise ModelError(f"{source}: merge {k} ({m!r}) is not a pair of tokens")
    return pair[0], pair[1]


MAX_TEMPLATE = 64  # tokens a post-processor may add around a text


def _special_ids(sp: Any, name: Any, source: str) -> list[int]:
    """The ids of TemplateProcessing's special token called name."""
    entry = _obj(sp.get(_str(name, "a template's special token", source)) if type(sp) is dict
                 else None, f"the post-processor's special token {name!r}", source)
    ids = entry.get("ids")
    if type(ids) is not list or not ids:
        raise ModelError(f"{source}: the post-processor's special token {name!r} has no ids")
    return [_id(i, f"the post-processor's {name!r}", source) for i in ids]


def _pair_id(x: Any, what: str, source: str) -> int:
    """The id of BertProcessing's / RobertaProcessing's ["token", id]."""
    if type(x) is not list or len(x) != 2:
        raise ModelError(f"{source}: the post-processor's {what} is not a [token, id] pair")
    return _id(x[1], f"the post-processor's {what}", source)


def post_processor(post: Any, source: str, depth: int = 0) -> dict[str, Any] | None:
    """What a tokenizer.json post_processor does to one text's encoding (Hugging Face's
    add_special_tokens=True): {"template": ids with None where the text's ids go, "trim":
    whether offsets lose their leading and trailing spaces (ByteLevel's and RobertaProcessing's
    trim_offsets), "prefix_space": their add_prefix_space, "kinds": the processors}; None
    when there is none."""
    if post is None:
        return None
    post = _obj(post, "the post_processor", source)
    kind = post.get("type")
    out: dict[str, Any] = {"template": [None], "trim": False, "prefix_space": False,
                           "kinds": [kind]}
    if kind == "Sequence":
        subs = post.get("processors")
        if type(subs) is not list:
            raise ModelError(f"{source}: the Sequence post-processor has no list of processors")
        if depth >= MAX_NESTING:
            raise ModelError(f"{source}: post-processor Sequences nested too deeply")
        out["kinds"] = []
        for sub in subs:  # applied in turn: each wraps what the previous ones made
            got = post_processor(sub, source, depth + 1)
            if got is None:
                continue
            t = got["template"]
            out["template"] = [x for item in t for x in (out["template"] if item is None
                                                          else [item])]
            out["trim"] |= got["trim"]
            out["prefix_space"] |= got["prefix_space"]
            out["kinds"] += got["kinds"]
    elif kind == "TemplateProcessing":
        single = post.get("single")
        if type(single) is not list:
            raise ModelError(f"{source}: TemplateProcessing has no 'single' template")
        template: list[int | None] = []
        for item in single:
            item = _obj(item, "a template item", source)
            if "SpecialToken" in item:
                sp = _obj(item["SpecialToken"], "a template special token", source)
                template += _special_ids(post.get("special_tokens"), sp.get("id"), source)
            elif "Sequence" in item:
                seq = _obj(item["Sequence"], "a template sequence", source)
                if seq.get("id", "A") != "A":
                    raise ModelError(f"{source}: the single template uses sequence "
                                     f"{seq.get('id')!r}, not A")
                template.append(None)
            else:
                raise ModelError(f"{source}: template item {item!r} is neither a special token "
                                 "nor a sequence")
        out["template"] = template
    elif kind in ("BertProcessing", "RobertaProcessing"):
        out["template"] = [_pair_id(post.get("cls"), "cls", source), None,
                           _pair_id(post.get("sep"), "sep", source)]
        if kind == "RobertaProcessing":
            out["trim"] = bool(post.get("trim_offsets", True))
            out["prefix_space"] = bool(post.get("add_prefix_space", True))
    elif kind == "ByteLevel":
        out["trim"] = bool(post.get("trim_offsets", True))
        out["prefix_space"] = bool(post.get("add_prefix_space", True))
    else:
        raise ModelError(f"{source}: post-processor {kind!r} is not supported")
    if out["template"].count(None) != 1 or len(out["template"]) > MAX_TEMPLATE:
        raise ModelError(f"{source}: a post-processor template must hold the text once, with "
                         f"at most {MAX_TEMPLATE} tokens around it")
    return out


def read_tokenizer_json(path: str | Path, meta: dict[str, Any] | None = None) -> bytes:
    """Compile a Hugging Face tokenizer.json holding a byte-level BPE model; meta (if given)
    gets what encoding needs beyond the model: its post-processor ("post")."""
    source = str(path)
    try:
        spec = json.loads(Path(path).read_bytes().decode("utf-8"))
    except RecursionError:
        raise ModelError(f"{source}: not a tokenizer.json (nested too deeply)") from None
    except ValueError as e:  # not UTF-8, not JSON
        raise ModelError(f"{source}: not a tokenizer.json ({e})") from None
    spec = _obj(spec, "the file", source)
    model = _obj(spec.get("model"), "the model", source)
    if model.get("type") == "WordPiece":
        from .wordpiece import from_tokenizer_json

        return from_tokenizer_json(spec, source, meta)
    if model.get("type") != "BPE":
        raise ModelError(f"{source}: model type {model.get('type')!r}; only BPE and WordPiece "
                         "are supported")
    merges_in = model.get("merges", [])
    if type(merges_in) is not list:
        raise ModelError(f"{source}: the merges are {type(merges_in).__name__}, not a list")
    merges = [_merge(m, k, source) for k, m in enumerate(merges_in)]
    added_in = spec.get("added_tokens") or []
    if type(added_in) is not list:
        raise ModelError(f"{source}: added_tokens is {type(added_in).__name__}, not a list")
    added = []
    for k, t in enumerate(added_in):
        t = _obj(t, f"added token {k}", source)
        content = _str(t.get("content"), f"added token {k}'s content", source)
        added.append((_utf8(content, "added token", source),
                      _id(t.get("id"), f"added token {content!r}", source),
                      bool(t.get("special", True))))
    vocab = [(_str(t, "a token", source), _id(i, f"token {t!r}", source))
             for t, i in _obj(model.get("vocab"), "the vocab", source).items()]
    splits = _splits(spec.get("pre_tokenizer"), source)
    nfc = _nfc(spec.get("normalizer"), source)
    post = post_processor(spec.get("post_processor"), source)
    if meta is not None:
        meta["post"] = post
    return compile_byte_level(vocab, merges, added, splits, nfc, source)


def read_gguf(path: str | Path, meta: dict[str, Any] | None = None) -> bytes:
    """Compile the tokenizer of a GGUF file (llama.cpp): byte-level BPE, or SentencePiece BPE
    or Unigram; meta (if given) gets its BOS / EOS ids and when llama.cpp adds them ("gguf")."""
    from .gguf import read_metadata, special_flags

    md = read_metadata(path)
    if meta is not None:
        meta["gguf"] = special_flags(md, str(path))
    return _compile_gguf(md, str(path))


def _compile_gguf(md: dict[str, Any], source: str) -> bytes:
    from . import gguf

    kind = gguf.string(md, "tokenizer.ggml.model", source, b"").decode("utf-8", "replace")
    if kind in ("llama", "t5"):  # SentencePiece BPE and Unigram
        from .spm import from_gguf

        return from_gguf(md, source).compile()
    if kind == "bert":  # WordPiece ([CLS] / [SEP] kept in the model)
        from .wordpiece import from_gguf as wordpiece_from_gguf

        return wordpiece_from_gguf(md, source, None)
    if kind != "gpt2":
        raise ModelError(f"{source}: {kind!r} vocabularies in GGUF files are not supported yet "
                         "(byte-level BPE and SentencePiece ones are)")
    raw = gguf.array(md, "tokenizer.ggml.tokens", bytes, source, required=True) or []
    toks = []
    for i, t in enumerate(raw):
        try:
            toks.append(t.decode("utf-8"))
        except UnicodeDecodeError:
            raise ModelError(f"{source}: token {i} ({t!r}) is not UTF-8") from None
    types = gguf.array(md, "tokenizer.ggml.token_type", int, source, len(toks)) or [1] * len(toks)
    merges = []
    for k, m in enumerate(gguf.array(md, "tokenizer.ggml.merges", bytes, source) or []):
        try:
            merges.append(_merge(m.decode("utf-8"), k, source))
        except UnicodeDecodeError:
            raise ModelError(f"{source}: merge {k} ({m!r}) is not UTF-8") from None
    pre = gguf.string(md, "tokenizer.ggml.pre", source, b"default").decode("utf-8", "replace")
    if pre not in GGUF_PRE:
        raise ModelError(f"{source}: pre-tokenizer {pre!r} is not supported "
                         f"(known: {', '.join(sorted(GGUF_PRE))})")
    patterns, nfc = GGUF_PRE[pre]
    # control (3) and user-defined (4) tokens are spelled as plain text, not in byte-level form;
    # user-defined ones are Hugging Face's non-special added tokens
    added = [(t.encode(), i, types[i] == 3) for i, t in enumerate(toks) if types[i] in (3, 4)]
    vocab = [(t, i) for i, t in enumerate(toks) if types[i] not in (3, 4)]
    return compile_byte_level(vocab, merges, added, patterns, nfc, source)
