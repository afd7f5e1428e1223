"""Writes the committed seed corpus of each fuzz target into csrc/fuzz/corpus/ (run once;
the files are committed, so this only documents and regenerates them)."""
from __future__ import annotations

import gzip
import hashlib
import struct
import sys
from pathlib import Path

import edgetok
from edgetok._native import ffi, lib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = Path(edgetok.__file__).parent / "data"


def put(target: str, blob: bytes) -> None:
    d = HERE / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(blob).hexdigest()).write_bytes(blob)


def texts() -> list[bytes]:
    out = []
    for p in sorted(DATA.glob("sample-*.txt.gz")):
        t = gzip.decompress(p.read_bytes())
        out += [t[:300], t[5000:5600]]
    out += ["caf\u00e9 \U0001f600 \u4e2d\u6587 \u041f\u0440\u0438 \u1acf's".encode(),
            b"x" * 300 + b" \n\n  \t 12345678 ''ll 'S", b"\xff\xfe\x80abc\xc3\xe2\x82 \xf0\x9f",
            b"w  \n\n#" * 20, b"   \r\n\r\n  a   b\n", "\u2581\u2581a b".encode() * 10,
            # runs of marks NFD sorts, kept and dropped (WordPiece's strip_accents)
            "a\u0301\u302e \u00e1\u0323\u302f\U0001d165 \u0344\u0f73\x01\u302b\U0001d160 "
            "\u1ec7\u0301\u0301\u302e\U0001d16d\U0001d165x".encode()]
    return out


def compile_bpe(tokens: list[bytes], pretok: int, param: int) -> bytes:
    off = [0]
    for t in tokens:
        off.append(off[-1] + len(t))
    out, n = ffi.new("uint8_t **"), ffi.new("size_t *")
    soff, sids = ffi.new("uint32_t[]", [0, 5]), ffi.new("uint32_t[]", [len(tokens) + 3])
    rc = lib.et_compile_bpe(b"".join(tokens), ffi.new("uint32_t[]", off),
                            ffi.new("uint32_t[]", list(range(len(tokens)))), len(tokens), b"<eot>",
                            soff, sids, ffi.NULL, 1, pretok, param, 0, b"pattern", out, n)
    assert rc == 0, rc
    img = bytes(ffi.buffer(out[0], n[0]))
    lib.et_free(out[0])
    return img


def compile_unigram(pieces: list[bytes], scores: list[float], types: list[int], flags: int) -> bytes:
    off = [0]
    for p in pieces:
        off.append(off[-1] + len(p))
    out, n = ffi.new("uint8_t **"), ffi.new("size_t *")
    rc = lib.et_compile_unigram(b"".join(pieces), ffi.new("uint32_t[]", off), len(pieces),
                                ffi.new("float[]", scores), ffi.new("uint8_t[]", types), ffi.NULL,
                                0, flags, 0, 1, 2, b" \xe2\x81\x87 ", out, n)
    assert rc == 0, rc
    img = bytes(ffi.buffer(out[0], n[0]))
    lib.et_free(out[0])
    return img


def compile_wordpiece(tokens: list[bytes], flags: int) -> bytes:
    """A small WordPiece model: tokens[0] is [UNK], tokens[1] [CLS], tokens[2] [SEP]."""
    off = [0]
    for t in tokens:
        off.append(off[-1] + len(t))
    out, n = ffi.new("uint8_t **"), ffi.new("size_t *")
    rc = lib.et_compile_wordpiece(b"".join(tokens), ffi.new("uint32_t[]", off),
                                  ffi.new("uint32_t[]", list(range(len(tokens)))), len(tokens),
                                  b"", ffi.new("uint32_t[]", [0]), ffi.new("uint32_t[]", [0]), 0,
                                  b"##", 0, 1, 2, 20, flags, out, n)
    assert rc == 0, rc
    img = bytes(ffi.buffer(out[0], n[0]))
    lib.et_free(out[0])
    return img


WORDPIECE = [b"[UNK]", b"[CLS]", b"[SEP]", b"the", b"t", b"h", b"e", b"##h", b"##e", b"##the",
             b"a", b"aa", b"aaa", b"##a", b"##aa", b"hello", b"##llo", b"##lo", b"##o", b",",
             b"!", b"caf", b"##\xc3\xa9", b"\xe4\xb8\xad", b"'", b"s", b"##s", b"12", b"##3"]


def main() -> None:
    from edgetok._ffi import Model

    # encode: byte 0 picks the model, 7 parameter bytes, then the text
    for i, t in enumerate(texts()):
        for pick in range(7):
            if (i + pick) % 3 == 0:
                put("encode", bytes([pick, i * 37 % 256, i * 11 % 256, 5 + i, 3, 7 * i % 256, 40, 1]) + t)
    shard = ROOT / "tests" / "data" / "repro" / "gpt2-shard-cut" / "libfuzzer-r50k-shard.bin"
    if shard.exists():
        put("encode", shard.read_bytes())
    # load: small models of each pretokenizer and family, and the damaged ones from the repros
    for name, pretok, param in (("cl100k_base", 1, 3), ("o200k_base", 2, 0), ("r50k_base", 3, 0),
                                ("cl100k_base", 4, 3), ("p50k_base", 3, 1)):
        m = Model.open(str(DATA / f"{name}.etok"))
        toks = [m.token_bytes(i) for i in range(600)]
        put("load", compile_bpe([t for t in toks if t], pretok, param))
    # pair tables without backtracking (ET_FLAG_WHOLE): "xyz" is no merge of its bytes (a whole
    # piece only), "pqr" is merged from "pq", which ranks after it
    small = [bytes([b]) for b in range(256)] + [b"xyz", b"pqr", b"pq", b"th", b"the", b" the"]
    img = compile_bpe(small, 1, 3)
    assert Model.from_bytes(img).pair_tables and not Model.from_bytes(img).backtracks
    put("load", img)
    words = [b"\xe2\x96\x81" + w for w in (b"the", b"a", b"of", b"and", b"to", b"in", b"is")]
    chars = [bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyz.,'"] + [b"\xe2\x96\x81"]
    bytes_ = [b"<0x%02X>" % b for b in range(256)]
    pieces = [b"<unk>", b"<s>", b"</s>"] + words + chars + bytes_ + [b"<sep>"]
    types = [2, 3, 3] + [1] * (len(words) + len(chars)) + [6] * 256 + [4]
    scores = [0.0, 0.0, 0.0] + [-1.0 - i / 4 for i in range(len(words) + len(chars))] + [0.0] * 257
    put("load", compile_unigram(pieces, scores, types, 1 | 4 | 8))
    put("load", compile_unigram(pieces, scores, types, 1 | 4 | 8 | 64))
    put("load", compile_wordpiece(WORDPIECE, 15))
    put("load", compile_wordpiece(WORDPIECE, 1))
    for repro in ("model-prefix-cycle/prefix_self_loop.etok",
                  "split-at-read-past-text/damaged-resealed.etok"):
        p = ROOT / "tests" / "data" / "repro" / repro
        if p.exists():
            put("load", p.read_bytes())
    # compile: option byte, argument byte, then tokens (a length byte and its bytes)
    def toks(ws: list[bytes]) -> bytes:
        return b"".join(bytes([len(w) - 1]) + w for w in ws)
    vocab = [b"th", b"the", b"he", b" t", b" the", b"in", b"ing", b"aa", b"aaaa", b"ab", b"abab"]
    put("compile", bytes([2, 0]) + toks(vocab))
    put("compile", bytes([2, 1]) + toks(vocab))
    put("compile", bytes([2 | 4 | 8, 2]) + toks(vocab))
    put("compile", bytes([0, 0]) + toks(vocab))
    uni = b"".join(bytes([len(w) - 1]) + w + bytes([0, 5 + i]) for i, w in enumerate(vocab))
    put("compile", bytes([1, 1 | 4]) + uni)
    put("compile", bytes([1, 1 | 4 | 8 | 64]) + uni)
    put("compile", bytes([1, 0]))  # no ordinary piece (issue 15, item 5)
    # automata: byte 0 picks the model, byte 1 the mode; soundness (mode 0): a text
    for i, t in enumerate(texts()):
        try:
            t[:600].decode()
        except UnicodeDecodeError:
            continue
        put("automata", bytes([i % 4, 0]) + t[:600])

    def dfa(states: list[tuple[int, list[tuple[int, int, int]]]]) -> bytes:
        out = bytes([len(states) - 1])
        for accept, ranges in states:
            out += bytes([accept | (len(ranges) - 1) << 1])
            out += b"".join(bytes([lo, hi, to + 1]) for lo, hi, to in ranges)
        return out
    digits = dfa([(0, [(0x30, 0x39, 1)]), (1, [(0x30, 0x39, 1), (0x2E, 0x2E, 2)]), (1, [(0x30, 0x39, 2)])])
    words = dfa([(1, [(0x61, 0x7A, 0), (0x20, 0x20, 1), (0x27, 0x27, 0)]), (0, [(0x61, 0x7A, 0)])])
    anything = dfa([(1, [(0, 255, 0)])])
    for pick in range(4):
        for mode in (1, 3):
            for d in (digits, words, anything):
                put("automata", bytes([pick, mode]) + d + bytes(range(7, 200, 3)))


if __name__ == "__main__":
    sys.exit(main())
