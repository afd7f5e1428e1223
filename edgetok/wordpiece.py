"""Import BERT WordPiece models: a tokenizer.json (model type WordPiece, BertNormalizer,
BertPreTokenizer), a vocab.txt (with tokenizer_config.json beside it, or the lowercase flag
given), or a GGUF file whose vocabulary is "bert" (llama.cpp's spelling: "▁" before a token
that starts a word, continuation tokens bare, "[...]" specials as they are).

The C core does the whole pipeline (csrc/wordpiece); this module reads the files, checks them
and says what is wrong in words. [CLS] / [SEP] go around the ids as the file's post-processor
says (meta["post"], as for byte-level BPE tokenizer.json files).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ._ffi import ModelError, compile_wordpiece

CLEAN, CJK, STRIP, LOWER = 1, 2, 4, 8  # et_compile_wordpiece's BertNormalizer flags
DECODE_JOIN, NO_CLEANUP = 16, 32  # and its decoder's (default: WordPiece, cleanup on)
MAX_CHARS = 100  # max_input_chars_per_word, Hugging Face's default


def bert_flags(clean_text: bool, chinese: bool, strip_accents: bool | None, lowercase: bool) -> int:
    """BertNormalizer's options as flags (strip_accents None: as lowercase, as tokenizers)."""
    strip = lowercase if strip_accents is None else strip_accents
    return (CLEAN * bool(clean_text) | CJK * bool(chinese) | STRIP * bool(strip)
            | LOWER * bool(lowercase))


def bert_post(cls: int | None, sep: int | None) -> dict[str, Any] | None:
    """BertProcessing's [CLS] ... [SEP], in the form hf.post_processor gives, with the
    templates of edgetok.pairs."""
    if cls is None or sep is None:
        return None
    from .pairs import bert_items

    return {"template": [cls, None, sep], "trim": False, "prefix_space": False,
            "kinds": ["BertProcessing"], "single_items": bert_items(cls, sep, False),
            "pair_items": bert_items(cls, sep, True)}


def compile_vocab(vocab: list[tuple[str, int]], specials: list[tuple[str, int]], unk: str,
                  cls_id: int | None, sep_id: int | None, prefix: str, max_chars: int,
                  flags: int, source: str) -> bytes:
    """The image of a WordPiece vocabulary: (token, id) pairs, special tokens (matched in text
    only where allowed, as tiktoken's; never by WordPiece), the unknown token, the ids that
    encode() puts around a text ([CLS], [SEP]; kept in the model), the continuation prefix, max
    characters per word, BertNormalizer's flags."""
    ids = {t: i for t, i in vocab}
    ids.update((t, i) for t, i in specials)
    if unk not in ids:
        raise ModelError(f"{source}: the unknown token {unk!r} is not in the vocabulary")
    if not prefix:
        raise ModelError(f"{source}: the continuing subword prefix is empty")
    if type(max_chars) is not int or max_chars < 0:
        raise ModelError(f"{source}: max_input_chars_per_word is {max_chars!r}")
    special_ids = {i for _, i in specials}
    tokens, seen_ids = [], set(special_ids)
    for t, i in vocab:
        if i in special_ids:
            continue
        if not t:
            raise ModelError(f"{source}: token id {i} is empty")
        if i in seen_ids:
            raise ModelError(f"{source}: id {i} is given to two tokens")
        seen_ids.add(i)
        try:
            tokens.append((t.encode("utf-8"), i))
        except UnicodeEncodeError:
            raise ModelError(f"{source}: token {t!r} is not valid Unicode") from None
    if len({t for t, _ in tokens}) != len(tokens):
        raise ModelError(f"{source}: a token appears twice")
    if not tokens:
        raise ModelError(f"{source}: the vocabulary has no ordinary token")
    spec = [(t.encode("utf-8", "surrogatepass"), i) for t, i in specials]
    return compile_wordpiece(tokens, spec, prefix, ids[unk], cls_id, sep_id, max_chars, flags,
                             source)


def _flags_of(norm: Any, source: str) -> int:
    """A tokenizer.json normalizer as flags: BertNormalizer, or none."""
    if norm is None:
        return 0
    if type(norm) is not dict or norm.get("type") != "BertNormalizer":
        kind = norm.get("type") if type(norm) is dict else type(norm).__name__
        raise ModelError(f"{source}: normalizer {kind!r} with a WordPiece model is not supported "
                         "(BertNormalizer is)")
    return bert_flags(norm.get("clean_text", True), norm.get("handle_chinese_chars", True),
                      norm.get("strip_accents"), norm.get("lowercase", True))


def _decoder_flags(dec: Any) -> int:
    """A tokenizer.json decoder as flags: none (tokens joined with spaces, as tokenizers' decode
    does then), WordPiece with or without its clean-up; others decode as WordPiece."""
    if dec is None:
        return DECODE_JOIN
    if type(dec) is dict and dec.get("type") == "WordPiece" and dec.get("cleanup", True) is False:
        return NO_CLEANUP
    return 0


def from_tokenizer_json(spec: dict[str, Any], source: str,
                        meta: dict[str, Any] | None) -> bytes:
    """Compile a tokenizer.json whose model is WordPiece (hf.read_tokenizer_json's dict)."""
    from .hf import post_processor

    model = spec["model"]
    pre = spec.get("pre_tokenizer")
    if type(pre) is not dict or pre.get("type") != "BertPreTokenizer":
        kind = pre.get("type") if type(pre) is dict else pre
        raise ModelError(f"{source}: pre-tokenizer {kind!r} with a WordPiece model is not "
                         "supported (BertPreTokenizer is)")
    vocab = model.get("vocab")
    if type(vocab) is not dict or any(type(t) is not str or type(i) is not int
                                      or not 0 <= i < 0x7FFFFFFF for t, i in vocab.items()):
        raise ModelError(f"{source}: the WordPiece vocab is not a map of tokens to ids")
    specials = []
    for k, t in enumerate(spec.get("added_tokens") or []):
        if type(t) is not dict or type(t.get("content")) is not str or type(t.get("id")) is not int:
            raise ModelError(f"{source}: added token {k} is not a token with an id")
        if not t.get("special", True):
            raise ModelError(f"{source}: added token {t['content']!r} is not special; such "
                             "tokens with WordPiece models are not supported yet")
        specials.append((t["content"], t["id"]))
    unk, prefix = model.get("unk_token", "[UNK]"), model.get("continuing_subword_prefix", "##")
    max_chars = model.get("max_input_chars_per_word", MAX_CHARS)
    if type(unk) is not str or type(prefix) is not str:
        raise ModelError(f"{source}: unk_token and continuing_subword_prefix must be strings")
    post = post_processor(spec.get("post_processor"), source)
    if post is not None:  # the templates for pairs (edgetok.pairs)
        from .pairs import template_items

        raw = spec.get("post_processor")
        sp = {k: v.get("ids") for k, v in (raw.get("special_tokens") or {}).items()
              if isinstance(v, dict)} if isinstance(raw, dict) else {}
        try:
            post["single_items"] = template_items(raw, "single", sp)
            post["pair_items"] = template_items(raw, "pair", sp)
        except (KeyError, TypeError, ValueError, IndexError):
            raise ModelError(f"{source}: the post-processor's templates are malformed") from None
    t = post["template"] if post else [None]
    cls, sep = (t[0], t[2]) if len(t) == 3 and t[1] is None else (None, None)
    if meta is not None:
        meta["post"] = post
    return compile_vocab(list(vocab.items()), specials, unk, cls, sep, prefix, max_chars,
                         _flags_of(spec.get("normalizer"), source)
                         | _decoder_flags(spec.get("decoder")), source)


SPECIAL_NAMES = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_vocab_txt(path: str | Path, lowercase: bool | None = None,
                   meta: dict[str, Any] | None = None) -> bytes:
    """Compile a BERT vocab.txt (token i on line i), as tokenizers' BertWordPieceTokenizer
    and transformers' BertTokenizerFast read it: BertNormalizer with the options of a
    tokenizer_config.json beside it (do_lower_case, tokenize_chinese_chars, strip_accents;
    lowercase overrides do_lower_case), [CLS] ... [SEP] around the ids."""
    import json

    source = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelError(f"{source}: not a vocab.txt ({e})") from None
    conf: dict[str, Any] = {}
    beside = Path(path).with_name("tokenizer_config.json")
    if beside.is_file():
        try:
            got = json.loads(beside.read_text(encoding="utf-8"))
        except ValueError as e:
            raise ModelError(f"{beside}: not JSON ({e})") from None
        conf = got if type(got) is dict else {}
    lower = conf.get("do_lower_case", True) if lowercase is None else lowercase
    flags = bert_flags(True, conf.get("tokenize_chinese_chars", True), conf.get("strip_accents"),
                       bool(lower))
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    ids = {line.rstrip(): i for i, line in enumerate(lines)}  # lines, trim_end, as tokenizers
    ids.pop("", None)
    names = {k: conf.get(f"{k}_token") if type(conf.get(f"{k}_token")) is str else d
             for k, d in (("unk", "[UNK]"), ("cls", "[CLS]"), ("sep", "[SEP]"),
                          ("pad", "[PAD]"), ("mask", "[MASK]"))}
    specials = [(t, ids[t]) for t in names.values() if t in ids]
    vocab = [(t, i) for t, i in ids.items()]
    cls, sep = ids.get(names["cls"]), ids.get(names["sep"])
    if meta is not None:
        meta["post"] = bert_post(cls, sep)
    return compile_vocab(vocab, specials, names["unk"], cls, sep, "##", MAX_CHARS, flags, source)


def from_gguf(md: dict[str, Any], source: str, meta: dict[str, Any] | None) -> bytes:
    """Compile a GGUF's "bert" vocabulary (llama.cpp's WPM: uncased BERT, bge and the like):
    tokens back to BERT's spelling, BertNormalizer lowercasing and stripping accents."""
    from . import gguf

    raw = gguf.array(md, "tokenizer.ggml.tokens", bytes, source, required=True) or []
    types = gguf.array(md, "tokenizer.ggml.token_type", int, source, len(raw)) or [1] * len(raw)
    vocab, specials = [], []
    for i, b in enumerate(raw):
        try:
            t = b.decode("utf-8")
        except UnicodeDecodeError:
            raise ModelError(f"{source}: token {i} ({b!r}) is not UTF-8") from None
        if types[i] == 3:
            specials.append((t, i))
        elif t.startswith("\u2581"):
            vocab.append((t[1:], i))
        elif t.startswith("[") and t.endswith("]"):
            vocab.append((t, i))
        else:
            vocab.append(("##" + t, i))

    def special(key: str, default: str) -> int | None:
        i = gguf.integer(md, f"tokenizer.ggml.{key}_token_id", source)
        if i is None:
            return next((j for t, j in specials + vocab if t == default), None)
        if not (type(i) is int and 0 <= i < len(raw)):
            raise ModelError(f"{source}: tokenizer.ggml.{key}_token_id {i!r} is no token")
        return i

    unk = special("unknown", "[UNK]")
    unk_name = raw[unk].decode("utf-8") if unk is not None else "[UNK]"
    cls, sep = special("cls", "[CLS]"), special("seperator", "[SEP]")
    if meta is not None:
        meta["post"] = bert_post(cls, sep)
    return compile_vocab(vocab, specials, unk_name, cls, sep, "##", MAX_CHARS,
                         bert_flags(True, True, None, True), source)


def describe(model: Any) -> str:
    """One line on a loaded WordPiece model (edgetok info)."""
    return ("BERT WordPiece: BertNormalizer and BertPreTokenizer, longest match first with "
            f"continuations (LinMaxMatch, linear time); [UNK] is id {model.wordpiece_ids()[0]}")


def offsets(enc: Any, text: str, allowed_special: Any, disallowed_special: Any,
            add_special_tokens: bool | None) -> tuple[list[int], list[tuple[int, int]],
                                                      list[tuple[int, int]]]:
    """Encoding.encode_with_offsets for WordPiece models: each token's characters of text (a
    normalised character spans the one it came from, [UNK] its whole word), as Hugging Face's
    encoding.offsets; special tokens found in text span their text, added ones (0, 0)."""
    ids: list[int] = []
    byte_offs: list[tuple[int, int]] = []
    names = {i: t for t, i in enc._matchable.items()}
    at = 0  # bytes of text before the segment
    for seg in enc._segments(text, allowed_special, disallowed_special):
        if isinstance(seg, int):
            n = len(names[seg].encode("utf-8", "surrogatepass"))
            ids.append(seg)
            byte_offs.append((at, at + n))
            at += n
            continue
        data = seg.encode("utf-8", "surrogatepass")
        got, spans = enc.model.encode_spans(data)
        ids += got
        byte_offs += [(at + spans[k], at + spans[k + 1]) for k in range(0, len(spans), 2)]
        at += len(data)
    chars = [0] * (at + 1)  # the character index of each byte offset of text
    pos = 0
    for k, c in enumerate(text):
        pos += len(c.encode("utf-8", "surrogatepass"))
        chars[pos] = k + 1
    for b in range(1, at + 1):  # (inside a character: the character's start)
        if not chars[b] and b:
            chars[b] = chars[b - 1]
    char_offs = [(chars[a], chars[b]) for a, b in byte_offs]
    before, after = enc._special_wrap(add_special_tokens)
    zero = [(0, 0)]
    return ([*before, *ids, *after], zero * len(before) + char_offs + zero * len(after),
            zero * len(before) + byte_offs + zero * len(after))
