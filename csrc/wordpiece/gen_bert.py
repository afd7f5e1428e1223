#!/usr/bin/env python3
"""Generate csrc/wordpiece/bert_tables.h by probing Hugging Face `tokenizers` code point by code
point: BertNormalizer (clean_text, handle_chinese_chars, strip_accents, lowercase) and
BertPreTokenizer, each asked about every code point on its own.

tokenizers takes its character classes from several Rust crates of different Unicode versions
(std's char::is_whitespace and to_lowercase, unicode_categories for control and punctuation
characters and nonspacing marks, unicode-normalization-alignments for NFD), so the tables come
from the library itself rather than from a Unicode database. Per code point: class bits and
four mappings (lowercase; NFD without nonspacing marks; both; the whole NFD where it holds a
character of a nonzero combining class: the places of a sorted run of marks come from it),
packed into a two-stage table
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


Maps = tuple[str | None, str | None, str | None, str | None]


def offsets_probe():  # type: ignore[no-untyped-def]
    """texts -> each one's characters out of strip_accents, as (start, end) places in the text
    (one token a character): how tokenizers aligns a run of marks that NFD sorts."""
    from tokenizers import Regex, Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import Split

    tok = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.normalizer = BertNormalizer(clean_text=False, handle_chinese_chars=False,
                                    strip_accents=True, lowercase=False)
    tok.pre_tokenizer = Split(Regex("."), "isolated")
    return lambda texts: [e.offsets for e in tok.encode_batch(texts, add_special_tokens=False)]


def check_mark_classes(ccc: dict[int, int], marks: dict[int, int]) -> None:
    """The classes of the marks strip_accents drops (marks, from unicodedata) as tokenizers
    sorts them: against a kept mark of each class known (ccc), the kept one moves before the
    dropped one (and takes its place) iff the dropped one's class is higher."""
    probes: dict[int, int] = {}
    for cp, k in sorted(ccc.items()):
        probes.setdefault(k, cp)
    texts, want = [], []
    for cp, k in marks.items():
        for pk, p in probes.items():
            texts.append("a" + chr(cp) + chr(p))
            want.append([(0, 1), (1, 2) if k > pk else (2, 3)])
    got = offsets_probe()(texts)
    for t, g, w in zip(texts, got, want):
        if g != w:
            raise SystemExit(f"U+{ord(t[1]):04X} (class {marks[ord(t[1])]}) against U+"
                             f"{ord(t[2]):04X}: places {g}, expected {w}")


def probe() -> tuple[list[int], list[Maps], dict[int, int]]:
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
    marks: dict[int, int] = {}
    maps: list[Maps] = [(None, None, None, None)] * NCP
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
            if k:
                marks[cp] = k
            elif not all(unicodedata.combining(x) for x in unicodedata.normalize("NFD", c)):
                raise SystemExit(f"U+{cp:04X} is of class 0 but does not end a run of marks")
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
        maps[cp] = (*m, None)  # type: ignore[assignment]
    if set(marks) & set(ccc):
        raise SystemExit("a mark both dropped and kept")
    check_mark_classes(ccc, marks)
    # the whole NFD where it has a mark of a nonzero class (the library's view: MARK/REORDER),
    # if its kept characters are the library's strip_accents map (lowercased: its both map)
    nonstarter = MARK | REORDER
    for cp in range(NCP):
        c = chr(cp)
        d = unicodedata.normalize("NFD", c)
        if d == c or cls[cp] & HANGUL or not any(cls[ord(x)] & nonstarter for x in d):
            continue
        def own(m: str | None, x: str) -> str:
            return x if m is None else m

        kept = "".join(x for x in d if maps[ord(x)][1] != "")
        if own(maps[cp][1], c) != kept or own(maps[cp][2], c) != "".join(
                own(maps[ord(x)][0], x) for x in kept):
            raise SystemExit(f"U+{cp:04X}: NFD {d!r} kept {kept!r} is not the library's "
                             f"{maps[cp][1]!r} / {maps[cp][2]!r}")
        marked = [bool(cls[ord(x)] & nonstarter) for x in d]
        if marked != sorted(marked) or marked[0] != bool(cls[cp] & nonstarter):
            # wordpiece.c: a run of marks ends before the character (its NFD starts with a
            # starter) or goes on through it (all marks); starters never follow its marks
            raise SystemExit(f"U+{cp:04X}: NFD {d!r} has a starter after a mark")
        maps[cp] = (*maps[cp][:3], d)
    ccc.update(marks)
    return cls, maps, ccc


def render(version: str, cls: list[int], maps: list[Maps], ccc: dict[int, int]) -> str:
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
        for s in maps[cp][:3]:  # (the whole NFD is not output as it is)
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
           " * accent-stripped, and accent-stripped lowercase forms, and its whole NFD where",
           " * that has a mark of a nonzero class (length 255: itself) */",
           "typedef struct { uint8_t cls, len[4]; uint16_t off[4]; } et_bert_rec;",
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
        out.append(f"    {{{key[0]}, {{{key[1]}, {key[3]}, {key[5]}, {key[7]}}}, "
                   f"{{{key[2]}, {key[4]}, {key[6]}, {key[8]}}}}},")
    out.append("};")
    out.append(f"static const uint8_t et_bert_pool[{max(len(pool), 1)}] = {{")
    for i in range(0, len(pool), 20):
        out.append("    " + ",".join(map(str, pool[i:i + 20])) + ",")
    out.append("};")
    out.append("/* the combining class of each REORDER and MARK character (by code point) */")
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
