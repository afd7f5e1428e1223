#!/usr/bin/env python3
"""Generate csrc/unicode/ucd_tables.h by probing the `regex` module code point by code point.

The pretokenizers must split text exactly as the model's regex does, so the character classes
come from the regex engine itself, not from a Unicode database: every code point is matched
against \\p{L}, \\p{N}, \\s, \\p{Lu} ... and the result is packed into a two-stage table
(stage1[cp >> 8] -> block, stage2[block][cp & 255] -> class bits).

Where the `regex` module's Unicode version is newer than that of tiktoken's engine, the code
points assigned in between are classified as tiktoken sees them (see TIKTOKEN_UNASSIGNED):
users compare against tiktoken's ids.

Usage: python csrc/unicode/gen_tables.py [--check]   (--check: fail if the file would change)
"""
from __future__ import annotations

import sys
from pathlib import Path

import regex

OUT = Path(__file__).with_name("ucd_tables.h")
NCP = 0x110000

# class bits (keep in sync with csrc/unicode/ucd.h)
BITS = [
    ("ET_U_L", r"\p{L}"),
    ("ET_U_N", r"\p{N}"),
    ("ET_U_S", r"\s"),
    ("ET_U_UP", r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),  # o200k's upper-case word head
    ("ET_U_LO", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),  # o200k's lower-case word tail
    ("ET_U_M", r"\p{M}"),
]

# Code points that are assigned in the regex module's Unicode version (17.0, regex 2026.5.9) but
# unassigned in Unicode 16.0, the version of tiktoken 0.14's regex engine (regex-syntax 0.8):
# tiktoken classes them as none of L, N, \s. See csrc/unicode/README.md.
REGEX_VERSION = "2026.5.9"
TIKTOKEN_UNASSIGNED: list[tuple[int, int]] = [
    (0x088F, 0x088F), (0x0C5C, 0x0C5C), (0x0CDC, 0x0CDC), (0xA7CE, 0xA7CF), (0xA7D2, 0xA7D2),
    (0xA7D4, 0xA7D4), (0xA7F1, 0xA7F1), (0x10940, 0x10959), (0x10EC5, 0x10EC7),
    (0x11DB0, 0x11DDB), (0x16EA0, 0x16EB8), (0x16EBB, 0x16ED3), (0x16FF2, 0x16FF3),
    (0x187F8, 0x187FF), (0x18D09, 0x18D1E), (0x18D80, 0x18DF2), (0x1E6C0, 0x1E6DE),
    (0x1E6E0, 0x1E6E2), (0x1E6E4, 0x1E6E5), (0x1E6E7, 0x1E6ED), (0x1E6F0, 0x1E6F4),
    (0x1E6FE, 0x1E6FF), (0x2B73A, 0x2B73F), (0x2CEA2, 0x2CEAD), (0x323B0, 0x33479),
    (0x11DE0, 0x11DE9), (0x16FF4, 0x16FF6),
    # combining marks new in 17.0 (\p{M}, and o200k's word classes that hold it)
    (0x1ACF, 0x1ADD), (0x1AE0, 0x1AEB), (0x10EFA, 0x10EFB), (0x11B60, 0x11B67),
    (0x1E6E3, 0x1E6E3), (0x1E6E6, 0x1E6E6), (0x1E6EE, 0x1E6EF), (0x1E6F5, 0x1E6F5),
]

# Code points whose general category changed between tiktoken's Unicode 16.0 and the regex
# module's 17.0: each is classed as the character given (of its 16.0 category) is.
TIKTOKEN_LIKE: dict[int, str] = {
    0x0295: "a",  # LATIN LETTER PHARYNGEAL VOICED FRICATIVE: Ll in 16.0, Lo in 17.0
}

CONTRACTION_LETTERS = "sdmtlver"


def all_chars() -> str:
    # Surrogates are included so that indices equal code points; they never occur in UTF-8.
    return "".join(map(chr, range(NCP)))


def probe(chars: str, pattern: str) -> list[tuple[int, int]]:
    return [m.span() for m in regex.finditer(f"(?:{pattern})+", chars)]


def classes(chars: str) -> bytearray:
    """The class bits of every code point, as tiktoken's engine sees them."""
    cls = bytearray(NCP)
    for bit, (_, pat) in enumerate(BITS):
        for lo, hi in probe(chars, pat):
            for cp in range(lo, hi):
                cls[cp] |= 1 << bit
    for lo, hi in TIKTOKEN_UNASSIGNED:
        for cp in range(lo, hi + 1):
            cls[cp] = 0
    for cp, like in TIKTOKEN_LIKE.items():
        cls[cp] = cls[ord(like)]
    return cls


def folds(chars: str) -> list[tuple[int, str]]:
    """Non-ASCII code points that the regex's case-insensitive match accepts for a
    contraction letter, e.g. U+017F LATIN SMALL LETTER LONG S for 's'."""
    return [(cp, letter) for letter in CONTRACTION_LETTERS
            for lo, hi in probe(chars, f"(?i:{letter})") for cp in range(lo, hi) if cp >= 0x80]


# Class bits of o200k's three letter classes (see csrc/pretok/o200k.h): Lu/Lt, Ll, Lm/Lo.
L, UP, LO = 0x01, 0x08, 0x10
CASE_CLASSES = (L | UP, L | LO, L | UP | LO)
CONT = (0x80, 0xBF)  # UTF-8 continuation bytes
SET_RANGES = 4  # the most byte ranges a set of lead bytes holds (more: a group of its own)
# The 2-byte lead bytes whose case groups o200k's blocks test (Latin-1 and Cyrillic, the commonest
# in translated man pages; each costs the blocks a range test or more). Which characters the
# groups hold, and their classes, come from the tables all the same.
CASE_LEADS = (0xC3, 0xD0, 0xD1)


def utf8_cp(lead: int, c1: int, c2: int = 0x80) -> int | None:
    """The code point of the 2-byte (lead < 0xE0) or 3-byte UTF-8 sequence, None if invalid."""
    if 0xC2 <= lead <= 0xDF:
        return ((lead & 0x1F) << 6) | (c1 & 0x3F)
    cp = ((lead & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F)
    return cp if 0xE0 <= lead <= 0xEF and cp >= 0x800 and not 0xD800 <= cp <= 0xDFFF else None


def group_class(cls: bytearray, lead: int, lo: int, hi: int, key) -> int | None:
    """key() of the class of every character with this lead byte and second byte in lo..hi
    (any third byte), where they all agree and are valid; None otherwise."""
    seen = set()
    for c1 in range(lo, hi + 1):
        for c2 in range(0x80, 0xC0) if lead >= 0xE0 else (0x80,):
            cp = utf8_cp(lead, c1, c2)
            if cp is None:
                return None
            seen.add(key(cls[cp]))
    return seen.pop() if len(seen) == 1 else None


def groups(cls: bytearray, key, classes, min_run: int, leads=None) -> tuple[list, list]:
    """The byte ranges and the groups (lead range, second-byte range, length, class) of the
    2- and 3-byte characters that the blocks class with SIMD range tests: per lead byte, runs
    of at least min_run second bytes whose characters all have one of `classes` (key() of
    their bits); consecutive lead bytes with the same runs merge; 2-byte leads only from
    `leads` where given (each range costs the blocks a test of 64 bytes). Range 0 is CONT."""
    per_lead = []
    two = [b for b in range(0xC2, 0xE0) if leads is None or b in leads]
    for lead in two + list(range(0xE0, 0xF0)):
        runs, c1 = [], 0x80
        while c1 <= 0xBF:
            k = group_class(cls, lead, c1, c1, key)
            end = c1
            while (k in classes and end < 0xBF
                   and group_class(cls, lead, end + 1, end + 1, key) == k):
                end += 1
            if k in classes and end - c1 + 1 >= min_run and (lead < 0xE0 or (c1, end) == CONT):
                runs.append((c1, end, k))
            c1 = end + 1
        per_lead.append((lead, tuple(runs)))
    merged: list[list] = []
    for lead, runs in per_lead:
        n = 2 if lead < 0xE0 else 3
        if merged and merged[-1][1] == lead - 1 and merged[-1][2] == runs and merged[-1][3] == n:
            merged[-1][1] = lead
        elif runs:
            merged.append([lead, lead, runs, n])
    ranges, out = [CONT], []
    def index(r):
        if r not in ranges:
            ranges.append(r)
        return ranges.index(r)
    for lo, hi, runs, n in merged:
        for c_lo, c_hi, k in runs:
            out.append((index((lo, hi)), index((c_lo, c_hi)), n, k))
    return ranges, out


def wrapped(items: list[str], indent: str = "    ") -> list[str]:
    """items, comma-separated, in lines of at most 99 characters."""
    lines = [indent]
    for item in items:
        if len(lines[-1]) + len(item) + 2 > 99:
            lines.append(indent)
        lines[-1] += item + ", "
    return [line.rstrip() for line in lines]


def merged_sets(ranges: list, grp: list) -> tuple[list, list]:
    """The groups with the same second byte range, length and class merged into one group whose
    lead bytes are a set of ranges (the blocks OR a set's range tests before taking their bit
    mask: one mask a set). Returns the sets (tuples of ranges; [0]: CONT) and the groups
    (lead set, second byte set, length, class)."""
    leads: dict[tuple, list] = {}
    for lead, cont, n, k in grp:
        leads.setdefault((cont, n, k), []).append(ranges[lead])
    sets: list[tuple] = [(CONT,)]
    def index(st):
        if st not in sets:
            sets.append(st)
        return sets.index(st)
    out = []
    for (cont, n, k), lead_ranges in leads.items():
        for i in range(0, len(lead_ranges), SET_RANGES):
            out.append((index(tuple(lead_ranges[i:i + SET_RANGES])), index((ranges[cont],)), n, k))
    return sets, out


def emit_groups(out: list, name: str, what: str, ranges: list, grp: list) -> None:
    sets, grp = merged_sets(ranges, grp)
    out.append(f"/* {what}: the byte sets the groups test, each the bytes in one of its")
    out.append(" * ranges (first, last), [0] the continuation bytes; the groups: lead byte set,")
    out.append(" * second byte set, length, bits */")
    out.append(f"#define ET_UCD_N{name.upper()}_SET {len(sets)}")
    out.append(f"static const struct et_ucd_set et_ucd_{name}_set[] = {{")
    out += wrapped(["{%d, {%s}}" % (len(st), ", ".join(f"{{0x{a:X}, 0x{b:X}}}" for a, b in st))
                    for st in sets])
    out.append("};")
    out.append(f"#define ET_UCD_N{name.upper()}_GROUP {len(grp)}")
    out.append(f"static const struct et_ucd_group et_ucd_{name}_group[] = {{")
    out += wrapped([f"{{{a}, {b}, {n}, {k}}}" for a, b, n, k in grp])
    out.append("};")


def build() -> str:
    chars = all_chars()
    cls = classes(chars)
    blocks: dict[bytes, int] = {}
    stage1 = []
    for b in range(NCP >> 8):
        blk = bytes(cls[b << 8 : (b + 1) << 8])
        stage1.append(blocks.setdefault(blk, len(blocks)))
    fold = folds(chars)
    out = [
        "/* Generated by csrc/unicode/gen_tables.py from the `regex` module "
        f"{regex.__version__}. Do not edit. */",
        "#ifndef ET_UCD_TABLES_H",
        "#define ET_UCD_TABLES_H",
        "#include <stdint.h>",
        "",
        f"#define ET_UCD_NBLOCKS {len(blocks)}",
        f"static const uint16_t et_ucd_stage1[{len(stage1)}] = {{",
    ]
    for i in range(0, len(stage1), 16):
        out.append("    " + ",".join(str(x) for x in stage1[i : i + 16]) + ",")
    out.append("};")
    out.append(f"static const uint8_t et_ucd_stage2[{len(blocks)}][256] = {{")
    for blk in blocks:
        out.append("    {")
        for i in range(0, 256, 32):
            out.append("        " + ",".join(str(x) for x in blk[i : i + 32]) + ",")
        out.append("    },")
    out.append("};")
    out.append("/* non-ASCII code points matching a contraction letter case-insensitively */")
    out.append(f"#define ET_UCD_NFOLD {len(fold)}")
    body = ", ".join(f"{{0x{cp:X}, '{ch}'}}" for cp, ch in fold) or "{0, 0}"
    out.append(f"static const struct {{ uint32_t cp; char ascii; }} et_ucd_fold[] = {{{body}}};")
    out += [
        "/* Groups of UTF-8 characters of 2 or 3 bytes whose code points all have one class,",
        " * for the block pretokenizers' SIMD range tests (et_uni_classes64): every character",
        " * whose lead byte is in set `lead` and second byte in set `cont` (any third byte)",
        " * is valid and has the class bits `bits` (of those the family tells apart). */",
    ]
    out.append("struct et_ucd_group { uint8_t lead, cont, len, bits; };")
    out.append(f"#define ET_UCD_SET_RANGES {SET_RANGES} /* the most ranges a set holds */")
    out.append("struct et_ucd_set { uint8_t n, range[ET_UCD_SET_RANGES][2]; };")
    emit_groups(out, "letter", "\\p{L} (cl100k)", *groups(cls, lambda b: b & L, (L,), 64))
    emit_groups(out, "case", "o200k's letter classes (L, UP, LO)",
                *groups(cls, lambda b: b & (L | UP | LO) if b & L else 0, CASE_CLASSES, 16,
                        CASE_LEADS))
    out.append("#endif")
    return "\n".join(out) + "\n"


def main() -> int:
    if regex.__version__ != REGEX_VERSION:
        print(f"regex {regex.__version__} installed, TIKTOKEN_UNASSIGNED was derived for "
              f"{REGEX_VERSION}: re-derive it (csrc/unicode/README.md) first", file=sys.stderr)
        return 2
    text = build()
    if "--check" in sys.argv:
        if OUT.read_text() != text:
            print(f"{OUT} is stale: run {sys.argv[0]}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
