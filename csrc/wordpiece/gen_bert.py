#!/usr/bin/env python3
"""Generate csrc/wordpiece/bert_tables.h by probing Hugging Face `tokenizers` code point by code
point: BertNormalizer (clean_text, handle_chinese_chars, strip_accents, lowercase) and
BertPreTokenizer, each asked about every code point on its own.

tokenizers takes its character classes from several Rust crates of different Unicode versions
(std's char::is_whitespace and to_lowercase, unicode_categories for control and punctuation
characters and nonspacing marks, unicode-normalization-alignments for NFD), so the tables come
from the library itself rather than from a Unicode database. Per code point: class bits and
three mappings (lowercase; NFD without nonspacing marks; both), packed into a two-stage table
(stage1[cp >> 7] -> block, stage2[block * 128 + (cp & 127)] -> record) of records that point
into a pool of UTF-8 bytes. Hangul syllables decompose algorithmically (checked here).

Usage: python csrc/wordpiece/gen_bert.py [--check]   (--check: fail if the file would change)
"""
from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).with_name("bert_tables.h")
NCP = 0x110000
BLOCK = 128
IDENT = 0xFF  # map length meaning "the character itself"

# class bits (keep in sync with wordpiece.c); REORDER: kept by strip_accents and of a nonzero
# combining class (NFD sorts a run of them by class); MARK: dropped by strip_accents and of a
# nonzero class (it does not end such a run; other characters strip_accents drops do)
CTRL, WS, CJK, SPACE, PUNCT, HANGUL, REORDER, MARK = 1, 2, 4, 8, 16, 32, 64, 128
# two characters of known, different combining classes that strip_accents keeps: the probes
# of the reordering
HIGH, LOW = "\U0001D16D", "\U0001D165"  # 226, 216


def hangul_nfd(cp: int) -> str:
    s = cp - 0xAC00
    lv, t = divmod(s, 28)
    l_, v = divmod(lv, 21)
    return chr(0x1100 + l_) + chr(0x1161 + v) + (chr(0x11A7 + t) if t else "")


def probe() -> tuple[list[int], list[tuple[str | None, str | None, str | None]], dict[int, int]]:
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    def norm(clean: bool, cjk: bool, strip: bool, lower: bool):  # type: ignore[no-untyped-def]
        return BertNormalizer(clean_text=clean, handle_chinese_chars=cjk, strip_accents=strip,
                              lowercase=lower).normalize_str

    clean, chinese = norm(True, False, False, False), norm(False, True, False, False)
    lower, strip, both = norm(False, False, False, True), norm(False, False, True, False), \
        norm(False, False, True, True)
    pre = BertPreTokenizer().pre_tokenize_str
    import unicodedata

    cls: list[int] = [0] * NCP
    ccc: dict[int, int] = {}
    maps: list[tuple[str | None, str | None, str | None]] = [(None, None, None)] * NCP
    for cp in range(NCP):
        if 0xD800 <= cp < 0xE000:
            continue  # not text: invalid UTF-8 decodes as U+FFFD
        c = chr(cp)
        bits = 0
        got = clean(c)
        if got == "":
            bits |= CTRL
        elif got == " " and c != " ":
            bits |= WS
        elif got != c:
            raise SystemExit(f"clean_text maps U+{cp:04X} to {got!r}")
        if c == " ":
            bits |= WS
        got = chinese(c)
        if got == f" {c} ":
            bits |= CJK
        elif got != c:
            raise SystemExit(f"handle_chinese_chars maps U+{cp:04X} to {got!r}")
        pieces = [p for p, _ in pre("a" + c + "a")]
        if pieces == ["a", "a"]:
            bits |= SPACE
        elif pieces == ["a", c, "a"]:
            bits |= PUNCT
        elif pieces != ["a" + c + "a"]:
            raise SystemExit(f"BertPreTokenizer splits a U+{cp:04X} a into {pieces!r}")
        m = tuple(None if (g := f(c)) == c else g for f in (lower, strip, both))
        if 0xAC00 <= cp <= 0xD7A3:
            if m != (None, hangul_nfd(cp), hangul_nfd(cp)):
                raise SystemExit(f"Hangul U+{cp:04X} does not decompose as expected: {m!r}")
            bits |= HANGUL
            m = (None, None, None)
        k = unicodedata.combining(c)
        if m[1] == "" and strip("a" + HIGH + c + LOW) == "a" + LOW + HIGH:
            bits |= MARK
        elif m[1] is None and k:
            # sorted against the probes as its class says (else the library knows it as a
            # starter: Unicode versions differ)
            hi = strip("a" + HIGH + c) == "a" + (c + HIGH if k < 226 else HIGH + c)
            lo = strip("a" + c + LOW) == "a" + (LOW + c if k > 216 else c + LOW)
            if hi and lo:
                bits |= REORDER
                ccc[cp] = k
            elif strip("a" + HIGH + c) != "a" + HIGH + c or strip("a" + c + LOW) != "a" + c + LOW:
                raise SystemExit(f"U+{cp:04X} sorts neither as class {k} nor as a starter")
        cls[cp] = bits
        maps[cp] = m  # type: ignore[assignment]
    return cls, maps, ccc


def render(version: str, cls: list[int], maps: list[tuple[str | None, str | None, str | None]],
           ccc: dict[int, int]) -> str:
    pool = bytearray()
    at: dict[bytes, int] = {}

    def put(s: str | None) -> tuple[int, int]:
        if s is None:
            return IDENT, 0
        b = s.encode("utf-8")
        if b not in at:
            at[b] = len(pool)
            pool.extend(b)
        assert len(b) < IDENT
        return len(b), at[b]

    recs: dict[tuple[int, ...], int] = {}
    per_cp = []
    expand = 1.0  # most output characters per input byte
    for cp in range(NCP):
        lens_offs = [put(s) for s in maps[cp]]
        for s in maps[cp]:
            if s is not None:
                expand = max(expand, len(s) / len(chr(cp).encode("utf-8")))
        key = (cls[cp], *[x for lo in lens_offs for x in lo])
        per_cp.append(recs.setdefault(key, len(recs)))
    assert len(recs) < 0x10000 and len(pool) < 0x10000
    blocks: dict[tuple[int, ...], int] = {}
    stage1 = []
    for b in range(NCP // BLOCK):
        blk = tuple(per_cp[b * BLOCK:(b + 1) * BLOCK])
        stage1.append(blocks.setdefault(blk, len(blocks)))
    out = [f"/* Generated by csrc/wordpiece/gen_bert.py from tokenizers {version} "
           "(BertNormalizer, BertPreTokenizer). Do not edit. */",
           "#ifndef ET_BERT_TABLES_H", "#define ET_BERT_TABLES_H", "#include <stdint.h>", "",
           "/* a character's record: class bits, then (length, pool offset) of its lowercase,",
           " * accent-stripped, and accent-stripped lowercase forms (length 255: itself) */",
           "typedef struct { uint8_t cls, len[3]; uint16_t off[3]; } et_bert_rec;",
           f"#define ET_BERT_EXPAND {int(-(-expand // 1))} /* most characters out per byte in */",
           f"static const uint16_t et_bert_stage1[{len(stage1)}] = {{"]
    for i in range(0, len(stage1), 16):
        out.append("    " + ",".join(map(str, stage1[i:i + 16])) + ",")
    out.append("};")
    flat = [x for blk in blocks for x in blk]
    out.append("/* the class bits of the ASCII characters (the records' cls, for the fast path) */")
    out.append("static const uint8_t et_bert_ascii[128] = {")
    for i in range(0, 128, 16):
        out.append("    " + ",".join(str(cls[c]) for c in range(i, i + 16)) + ",")
    out.append("};")
    out.append(f"static const uint16_t et_bert_stage2[{len(flat)}] = {{")
    for i in range(0, len(flat), 16):
        out.append("    " + ",".join(map(str, flat[i:i + 16])) + ",")
    out.append("};")
    out.append(f"static const et_bert_rec et_bert_recs[{len(recs)}] = {{")
    for key in recs:
        out.append(f"    {{{key[0]}, {{{key[1]}, {key[3]}, {key[5]}}}, "
                   f"{{{key[2]}, {key[4]}, {key[6]}}}}},")
    out.append("};")
    out.append(f"static const uint8_t et_bert_pool[{max(len(pool), 1)}] = {{")
    for i in range(0, len(pool), 20):
        out.append("    " + ",".join(map(str, pool[i:i + 20])) + ",")
    out.append("};")
    out.append("/* the combining class of each REORDER character (sorted by code point) */")
    out.append(f"static const uint32_t et_bert_ccc[{len(ccc)}] = {{")
    items = [cp << 8 | k for cp, k in sorted(ccc.items())]
    for i in range(0, len(items), 8):
        out.append("    " + ",".join(f"0x{x:08X}" for x in items[i:i + 8]) + ",")
    out.append("};")
    out += ["", "#endif", ""]
    return "\n".join(out)


def main() -> int:
    import tokenizers

    text = render(tokenizers.__version__, *probe())
    if "--check" in sys.argv:
        if OUT.read_text() != text:
            print(f"{OUT} is out of date: run {sys.argv[0]}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
