"""The o200k and GPT-2 Peek2 pretokenizers (csrc/pretok/o200k.h, gpt2.h) against the `regex`
module running tiktoken's own patterns, through csrc/tools/pretok_check built with
AddressSanitizer and UndefinedBehaviorSanitizer.

Thousands of texts go to one process: pretok_check -m reads length-prefixed texts and prints one
line of piece ends per text, with -s a '*' after each end that the family's safe_cut accepts.
Each safe cut is checked against its contract: the pieces before it are the same whatever
follows, as long as what follows is nothing or starts with the same character.
"""
from __future__ import annotations

import itertools
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference
from edgetok.compiler import PATTERNS
from strategies import ALPHABET, any_text

ROOT = Path(__file__).resolve().parents[1]
# Code points the `regex` module (newer Unicode) classes differently from tiktoken, whose view
# the tables follow: left out of every text compared against `regex` (see test_pretok.py).
from test_pretok import DIFFERS  # noqa: E402

ENV = {**os.environ, "ASAN_OPTIONS": "exitcode=99:detect_leaks=1",
       "UBSAN_OPTIONS": "halt_on_error=1:exitcode=98:print_stacktrace=1"}
FAMILIES = ["o200k", "gpt2", "gpt2-digits", "llama3", "qwen2"]
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-Icsrc/include", "-Icsrc"]


def compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang") or shutil.which("cc")


@pytest.fixture(scope="session")
def pretok_check(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    cc = compiler()
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("pretok") / "pretok_check"
    subprocess.run([cc, *CFLAGS, "-g", "-O1", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
                    "csrc/tools/pretok_check.c", "-o", str(exe)], cwd=ROOT, check=True)
    return exe


class Staged:
    """Regexes applied in turn as Hugging Face's Split(Isolated) pre-tokenizers apply them:
    each one's matches and the gaps between them are pieces, which the next one splits."""

    def __init__(self, *patterns: str) -> None:
        self.patterns = [regex.compile(p) for p in patterns]

    def findall(self, text: str) -> list[str]:
        pieces = [text] if text else []
        for pattern in self.patterns:
            out = []
            for piece in pieces:
                at = 0
                for m in pattern.finditer(piece):
                    out += [x for x in (piece[at:m.start()], m.group()) if x]
                    at = m.end()
                out += [piece[at:]] if at < len(piece) else []
            pieces = out
        return pieces


@pytest.fixture(scope="session")
def patterns() -> dict[str, regex.Pattern]:
    import tiktoken_ext.openai_public as op

    reference.tiktoken_encoding("o200k_base")  # seeds tiktoken's cache, offline
    return {
        "o200k": regex.compile(op.o200k_base()["pat_str"]),
        "gpt2": regex.compile(op.r50k_pat_str),
        # StarCoder, Refact, Command-R: each digit split off, then GPT-2's pattern
        "gpt2-digits": Staged(r"\p{N}", op.r50k_pat_str),  # type: ignore[dict-item]
        "cl100k": regex.compile(op.cl100k_base()["pat_str"]),
        # the patterns of Llama-3's and Qwen2's tokenizer.json files
        "llama3": regex.compile(PATTERNS["llama3"]),
        "qwen2": regex.compile(PATTERNS["qwen2"]),
    }


def comparable(text: str) -> str:
    return "".join(c for c in text if ord(c) not in DIFFERS)


def encode(text: str) -> bytes:
    # lone surrogates stand for invalid bytes (from bytes.decode(..., "surrogateescape"))
    return text.encode("utf-8", "surrogateescape")


def run_many(exe: Path, family: str, texts: list[str]) -> list[list[tuple[int, str]]]:
    """For each text, the (byte end, mark) of each piece pretok_check finds: mark "*" for a
    safe cut, "+" for a streaming-only cut, "" for neither."""
    return [[(int(x.rstrip("*+")), x[-1] if x[-1] in "*+" else "") for x in line.split()]
            for line in pretok_lines(exe, "-s", family, texts)]


def pretok_lines(exe: Path, flag: str, family: str, texts: list[str]) -> list[str]:
    """pretok_check -m FLAG FAMILY over texts: its output line for each."""
    data = b"".join(b"%d\n%s" % (len(b), b) for b in map(encode, texts))
    p = subprocess.run([str(exe), "-m", flag, family], input=data, capture_output=True, env=ENV,
                       timeout=600)
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-3000:]
    lines = p.stdout.decode().split("\n")
    assert len(lines) == len(texts) + 1 and lines[-1] == ""
    return lines[:-1]


def byte_ends(pieces: list[str]) -> list[int]:
    return list(itertools.accumulate(len(encode(p)) for p in pieces))


# What may follow a safe cut, after the character at it: every class, contractions, case runs.
CONTINUATIONS = ["", "a", "A", "s", "S", "ll", "LL", "e", "'s", "'ll", "1", "12", " ", "  x", "\n",
                 "!", "/", "\u0301", "\u4e2d", "Ab", "AB.", "\u01c5", "\u02b0a"]


def check(pattern: regex.Pattern, texts: list[str], got: list[list[tuple[int, str]]],
          safe_conts: list[str] = CONTINUATIONS, max_cuts: int = 40) -> int:
    """Asserts pretok_check's pieces and cuts of texts; returns the number of cuts checked. A
    safe cut must keep the pieces before it when the text stops there or goes on with its own
    next character and any continuation; a streaming cut, when the text goes on. Of a text with
    more than max_cuts cuts, max_cuts spread over it are checked (each check runs the regex
    over the text up to the cut)."""
    nsafe = 0
    for text, ends in zip(texts, got):
        pieces = pattern.findall(text)
        assert "".join(pieces) == text
        if [e for e, _ in ends] != byte_ends(pieces):
            mine, at = [], 0
            for e, _ in ends:
                mine.append(encode(text)[at:e].decode("utf-8", "surrogateescape"))
                at = e
            pytest.fail(f"{text!r}: pretok_check {mine!r} != regex {pieces!r}")
        offsets = {b: k for k, b in enumerate(byte_ends(pieces))}
        marks = dict(ends)
        cuts = [e for e, mark in ends if mark]
        if len(cuts) > max_cuts:
            cuts = [cuts[i * len(cuts) // max_cuts] for i in range(max_cuts)]
        for e in cuts:
            nsafe += 1
            k = offsets[e]
            b = len("".join(pieces[: k + 1]))  # the cut as a character index
            stops = [""] if marks[e] == "*" else []  # a streaming cut: the text goes on
            tails = [text[b] + z for z in safe_conts]
            if marks[e] == "+" and text[b] == "'":
                # o200k streams past an apostrophe once what follows it rules a contraction
                # out: the text it has is kept, anything may follow
                tails = [text[b:] + z for z in safe_conts]
            for tail in stops + tails:
                other = pattern.findall(text[:b] + tail)
                assert other[: k + 1] == pieces[: k + 1], (
                    f"unsafe cut {e} in {text!r}: with {tail!r} after it, "
                    f"{other[:k + 2]!r} != {pieces[:k + 2]!r}")
    return nsafe


def run_forced(exe: Path, family: str, texts: list[str]) -> list[list[int]]:
    """For each text, the byte offsets of its shard cuts (the family's forced_cut)."""
    return [[int(x) for x in line.split()] for line in pretok_lines(exe, "-f", family, texts)]


# What may stand before and after the characters a shard cut looks at (the one before it, the
# one at it and the one after): every class, whitespace runs and line breaks, contractions.
AROUND = ["", "a", "A", "1", " ", "  ", "\t", "\n", "\n\n", "  \n\n", "\r\n", "'", "'l", "!", "#",
          "/", "\u4e2d", "\u0301", " x", "x ", "\n/", "'s", "AB"]


def check_shard_cuts(exe: Path, pattern: regex.Pattern, family: str, texts: list[str],
                     max_cuts: int = 40, max_windows: int = 80) -> int:
    """Asserts every shard cut of texts: the text's pieces are those of the part before the
    cut followed by those of the part after it, and stay so whatever stands before and after
    the three characters the cut looked at (AROUND on either side, for up to max_windows of
    the distinct windows). Returns the cuts checked."""
    def verify(texts: list[str], cuts: list[list[int]], windows: list[str] | None) -> int:
        n = 0
        for text, bs in zip(texts, cuts):
            data = encode(text)
            pieces = pattern.findall(text)
            if len(bs) > max_cuts:
                bs = [bs[i * len(bs) // max_cuts] for i in range(max_cuts)]
            for b in bs:
                c = len(data[:b].decode("utf-8", "surrogateescape"))
                assert pattern.findall(text[:c]) + pattern.findall(text[c:]) == pieces, (
                    f"shard cut {b} in {text!r}")
                n += 1
                if windows is not None:
                    windows.append(text[max(c - 1, 0):c + 2])
        return n

    windows: list[str] = []
    n = verify(texts, run_forced(exe, family, texts), windows)
    distinct = sorted(set(windows))
    if len(distinct) > max_windows:
        distinct = [distinct[i * len(distinct) // max_windows] for i in range(max_windows)]
    around = [a + w + z for w in distinct for a in AROUND for z in AROUND]
    return n + verify(around, run_forced(exe, family, around), None)


def check_texts(exe: Path, patterns, family: str, texts: list[str], **kw) -> int:  # type: ignore[no-untyped-def]
    texts = [comparable(t) for t in texts]
    check_shard_cuts(exe, patterns[family], family, texts)
    return check(patterns[family], texts, run_many(exe, family, texts), **kw)


# ---------------------------------------------------------------------------------------------
# Real text


@pytest.mark.parametrize("kind", ["english", "code", "multilingual"])
@pytest.mark.parametrize("family", FAMILIES + ["cl100k"])
def test_real_text(pretok_check, patterns, corpora, family, kind):  # type: ignore[no-untyped-def]
    text = comparable(corpora[kind])
    (got,) = run_many(pretok_check, family, [text])
    pieces = patterns[family].findall(text)
    want = byte_ends(pieces)
    ends = [e for e, _ in got]
    if ends != want:
        i = next(i for i, (a, b) in enumerate(zip(ends, want)) if a != b)
        pytest.fail(f"piece {i}: ends {ends[i - 2:i + 3]} != {want[i - 2:i + 3]}, "
                    f"regex {pieces[i - 2:i + 3]!r}")
    assert len(ends) > 10000
    # streaming must be able to cut real text often (and safely: see test_safe_cuts_real_text)
    assert sum(m == "*" for _, m in got) > len(ends) // 10


@pytest.mark.parametrize("family", FAMILIES + ["cl100k"])
def test_shard_cuts(pretok_check, patterns, corpora, family):  # type: ignore[no-untyped-def]
    # outside testing found GPT-2's pattern cut with cl100k's rule: "  \n\n" + "#" pieces
    # differently from "  \n\n#" (\s++$ against \s+(?!\S))
    repro = (ROOT / "tests/data/repro/gpt2-shard-cut/libfuzzer-r50k-shard.bin").read_bytes()
    texts = [repro.decode("utf-8", "surrogateescape"), "w  \n\n#" * 50, "a  \n\nb c\n d",
             "x\n  \ny z\n\n#\r\n!"]
    lines = [line for kind in ("english", "code", "multilingual")
             for line in corpora[kind][:20000].splitlines(keepends=True)]
    texts += ["".join(lines[i:i + 8]) for i in range(0, len(lines), 8)]
    assert check_shard_cuts(pretok_check, patterns[family], family,
                            [comparable(t) for t in texts]) > 500


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES + ["cl100k"])
def test_safe_cuts_real_text(pretok_check, patterns, corpora, family):  # type: ignore[no-untyped-def]
    # every safe cut of the first lines of each corpus, in texts of about 600 characters
    texts = []
    for kind in ("english", "code", "multilingual"):
        lines = corpora[kind][:40000].splitlines(keepends=True)
        chunk = ""
        for line in lines:
            chunk += line
            if len(chunk) > 600:
                texts.append(chunk)
                chunk = ""
    assert check_texts(pretok_check, patterns, family, texts, max_cuts=1000,
                       safe_conts=["", "a", "A", "'s", " ", "\u0301"]) > 5000


# ---------------------------------------------------------------------------------------------
# Subtle cases, checked against the regex too (documentation of what the scanners reproduce)

SUBTLE = {
    "o200k": [
        ("\u4e2dA.", ["\u4e2d", "A", "."]),            # A1 backtracks into the upper-case run
        ("\u4e2dAB.", ["\u4e2d", "AB", "."]),
        ("\u4e2dABc", ["\u4e2dABc"]),                   # ... unless a lower-case letter follows
        ("x\u02b0Y.", ["x\u02b0", "Y", "."]),           # Lm is upper and lower
        ("Xa\u4e2dB", ["Xa\u4e2d", "B"]),
        ("\u4e2dA'll", ["\u4e2d", "A'll"]),
        ("\u0301AB.", ["\u0301", "AB", "."]),           # a mark: A1 without prefix before A2
        ("\u0301's", ["\u0301's"]),
        ("!\u0301", ["!\u0301"]),                      # a mark after a prefix is a word
        ("!!\u0301", ["!!\u0301"]),
        ("HELLO's", ["HELLO's"]),                      # A2 with a contraction
        ("YOU'RE", ["YOU'RE"]),
        ("IT'SA", ["IT'S", "A"]),
        ("it'sa", ["it's", "a"]),
        ("abc'S\u017f", ["abc'S", "\u017f"]),          # (?i) contraction: S, and LONG S
        ("it'\u017f", ["it'\u017f"]),
        ("ab'lx", ["ab", "'lx"]),
        (" 's", [" '", "s"]),                          # no contraction of its own
        ("''s", ["''", "s"]),
        ("A\u01c5b", ["A\u01c5b"]),                    # Lt is upper only
        ("\n ", ["\n", " "]),                          # \s*[\r\n]+ before the end of text
        ("  hello", [" ", " hello"]),
        ("\t!", ["\t", "!"]),
        ("  1", [" ", " ", "1"]),
        ("!\n/\nx", ["!\n/\n", "x"]),                  # [\r\n/]* after punctuation
        ("1234", ["123", "4"]),
    ],
    "gpt2": [
        ("'s", ["'s"]),
        ("'S", ["'", "S"]),                            # case-sensitive
        ("'\u017f", ["'", "\u017f"]),                  # ASCII only
        ("'sa", ["'s", "a"]),
        ("'lx", ["'", "lx"]),
        ("!'ll", ["!'", "ll"]),
        (" 's", [" '", "s"]),
        ("x'll", ["x", "'ll"]),
        ("  1", [" ", " 1"]),
        ("a \n", ["a", " \n"]),
        ("e\u0301", ["e", "\u0301"]),                  # marks are not \p{L}
        ("1234", ["1234"]),
    ],
    "gpt2-digits": [
        ("  1", ["  ", "1"]),                          # the stretch before a digit ends there
        (" 12", [" ", "1", "2"]),
        ("x \n1", ["x", " \n", "1"]),
        ("'1", ["'", "1"]),
        ("ab1cd", ["ab", "1", "cd"]),
        ("\u0663\u00bd", ["\u0663", "\u00bd"]),      # any \p{N}
    ],
    "llama3": [
        ("a \n\n", ["a", " \n\n"]),                  # \s*[\r\n]+ at the end: no \s++$
        ("a\n  ", ["a", "\n", "  "]),                 # ... then \s+(?!\S) takes the rest
        ("a\n \n  ", ["a", "\n \n", "  "]),
        ("x  \t", ["x", "  \t"]),                      # no line break: the whole run
        ("\n\n\nx", ["\n\n\n", "x"]),
        ("IT'S", ["IT", "'S"]),
        ("1234", ["123", "4"]),
    ],
    "qwen2": [
        ("1234", ["1", "2", "3", "4"]),
        ("a\r\n ", ["a", "\r\n", " "]),
        (" 12", [" ", "1", "2"]),
    ],
}


@pytest.mark.parametrize("family", FAMILIES)
def test_subtle_cases(pretok_check, patterns, family):  # type: ignore[no-untyped-def]
    texts = [t for t, _ in SUBTLE[family]]
    for text, want in SUBTLE[family]:
        assert patterns[family].findall(text) == want, text
    check(patterns[family], texts, run_many(pretok_check, family, texts))


# ---------------------------------------------------------------------------------------------
# Generated text

# The cl100k alphabet (strategies.ALPHABET) and more of what o200k tells apart: upper-case and
# title-case letters (Lu, Lt), lower-case ones (Ll), Lm and Lo, which count as both, and marks
# of each kind (Mn, Mc, Me), which are not letters but count as both too.
UPPER = "AZ\u00c9\u03a9\u0416\u0130\u01c5\u01c8\u1f88\u2126\U0001d400"
LOWER = "az\u00e9\u00df\u03c9\u0436\u0131\u017f\U0001d41a"
BOTH = "\u02b0\u02c6\u3005\u30fc\u4e2d\u05d0\u0e01\u0301\u0903\u20dd\u0489\u093f"
ALPHA = "".join(dict.fromkeys(ALPHABET + UPPER + LOWER + BOTH + "/\u2028\u0085"))

CONTRACTIONS = ["'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'ve", "'Ve", "'m", "'M", "'ll",
                "'LL", "'lL", "'d", "'D", "'\u017f", "'x", "''s", "'l", "'r", "'v", "'"]

words = st.builds(lambda u, lo, c: u + lo + c,
                  st.text(alphabet=UPPER + BOTH, max_size=4),
                  st.text(alphabet=LOWER + BOTH, max_size=4),
                  st.sampled_from([""] + CONTRACTIONS))
pieces = st.one_of(
    st.text(alphabet=ALPHA, max_size=12),
    words,
    st.sampled_from(CONTRACTIONS),
    st.builds(lambda c, n: c * n,
              st.sampled_from([" ", "\n", "\r\n", "\t", "0", "a", "A", "'", "\u3000", "-", "/",
                               "\n/", " \n", "\u0301", "A\u4e2d"]),
              st.integers(1, 12)),
)
texts = st.lists(pieces, max_size=16).map("".join)
BATCH = 60
SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
@given(batch=st.lists(texts, min_size=BATCH, max_size=BATCH))
@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
def test_category_mixes(pretok_check, patterns, family, batch):  # type: ignore[no-untyped-def]
    check_texts(pretok_check, patterns, family, batch)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
@given(batch=st.lists(any_text, min_size=BATCH, max_size=BATCH))
@settings(max_examples=25, deadline=None, suppress_health_check=SLOW)
def test_any_unicode(pretok_check, patterns, family, batch):  # type: ignore[no-untyped-def]
    check_texts(pretok_check, patterns, family, batch, safe_conts=["", "a", "A", "'s", " "])


# Invalid UTF-8: every invalid byte is a character of its own that is none of L, N, \s -- as a
# lone surrogate from surrogateescape is for the regex.
BYTES = b"\x80\xbf\xc0\xc1\xc3\xcc\xe0\xe4\xed\xf0\xf4\xf5\xff\x81\xb8\x9f 'aAsl1\n\r/.\t"
binaries = st.lists(st.sampled_from([bytes([c]) for c in BYTES] + ["\u4e2d\u0301\U0001f600".encode()]),
                    max_size=24).map(b"".join)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
@given(batch=st.lists(binaries, min_size=BATCH, max_size=BATCH))
@settings(max_examples=25, deadline=None, suppress_health_check=SLOW)
def test_invalid_utf8(pretok_check, patterns, family, batch):  # type: ignore[no-untyped-def]
    texts = [b.decode("utf-8", "surrogateescape") for b in batch]
    check(patterns[family], texts, run_many(pretok_check, family, texts))


# Scripts beyond ASCII in runs longer than a block (64 bytes), so that the blocks class them
# (et_uni_classes64: SIMD groups of one class -- Cyrillic, Latin-1, CJK, Hangul -- and a lookup
# for the rest), next to what they leave to the scalar code: marks, digits and spaces beyond
# ASCII, invalid bytes' neighbours, an upper-case letter after Lm/Lo, contractions with LONG S.
SCRIPT_WORDS = ["\u043f\u0440\u0438\u0432\u0435\u0442", "\u041f\u0420\u0418", "\u0416\u0436",
                "\u0457\u0491\u0454", "\u0463\u0462", "caf\u00e9", "\u00c9T\u00c9", "\u00d7", "\u00f7",
                "\u010d\u0159\u017e", "\u0130", "\u4e2d\u6587", "\u5b57", "\u3042\u30a2\u30fc",
                "\u3002", "\u3001", "\ud55c\uad6d\uc5b4", "\u4e2dA", "\u4e2dAb", "\u02b0Y",
                "\u0301", "e\u0301", "\u00a0", "\u3000", "\u00b3", "\u0663", "\uff11", "\u2019",
                "\u00ab", "\u00bb", "\u1ea1", "\u03a9\u03c9", "\U0001f600", "\u017f", "'\u017f",
                "'s", "'LL", "a", "AB", "word", " ", "  ", "\n", "\t", ".", "!", "'", "/", "12", "1234"]


@pytest.mark.parametrize("family", FAMILIES + ["cl100k"])
def test_scripts_in_blocks(pretok_check, patterns, family):  # type: ignore[no-untyped-def]
    rng = random.Random(16)
    texts = []
    for _ in range(400):
        bias = rng.sample(SCRIPT_WORDS, 6)  # mostly a few words, as text in one language is
        words = [rng.choice(bias if rng.random() < 0.7 else SCRIPT_WORDS)
                 for _ in range(rng.randint(10, 80))]
        texts.append("".join(w + (" " if rng.random() < 0.4 else "") for w in words))
    texts.append(("\u043f\u0440\u0438\u0432\u0435\u0442 " * 40) + "\u4e2d\u6587" * 40)
    texts = [comparable(t) for t in texts]
    assert sum(len(t.encode()) for t in texts) > 40000
    # the pieces of every text; its safe cuts only a few (the blocks do not make them)
    check(patterns[family], texts, run_many(pretok_check, family, texts), safe_conts=["", "a"],
          max_cuts=3)


# ---------------------------------------------------------------------------------------------
# Exhaustive small cases

# A representative of every class either pattern tells apart, and the strings the
# contractions and the upper/lower interplay turn on.
REPS = ["a", "A", "\u00e9", "\u00c9", "\u01c5", "\u02b0", "\u4e2d", "\u0301", "\u0903", "1",
        "\u0663", "\u00bd", " ", "\n", "\r", "\t", "\u3000", "'", "\u2019", ".", "/",
        "\U0001f600", "s", "S", "\u017f", "ll", "LL", "Ve", "re", "d", "M", "\udcff"]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_all_triples(pretok_check, patterns, family):  # type: ignore[no-untyped-def]
    texts = []
    for a, b, c in itertools.product(REPS, repeat=3):
        texts += [a + b + c, a + b + c + " ", " " + a + b + c, a + b + b + c]
    # the safe cuts of all of them, against the continuations that matter most
    assert check_texts(pretok_check, patterns, family, texts,
                       safe_conts=["", "a", "A", "ll", "'s", "\u0301"]) > 1000


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_runs(pretok_check, patterns, family):  # type: ignore[no-untyped-def]
    units = ["1", " ", "\n", " \n", "\r\n", "a", "A", "'", "!", " !", "\u3000", "'s", "/", "\n/",
             "\u0301", "\u4e2dA", "A\u4e2d", "\u0301A", "Ab", "aB", " A", "A'S", "\t "]
    texts = [f.format(u * n) for u in units for n in (1, 2, 3, 4, 5, 7, 100)
             for f in ("{}", "x{}", "{}x", " {}\n", "{}.", "{}a", "\u4e2d{}", "{}'ll")]
    check_texts(pretok_check, patterns, family, texts)


@pytest.mark.parametrize("family", FAMILIES)
def test_long_pieces(pretok_check, patterns, family):  # type: ignore[no-untyped-def]
    # each scans its input a bounded number of times: these finish at once
    n = 5000
    texts = ["\u4e2dA" * n + ".", "\u4e2d" + "A" * n + ".", "\u0301" + "A" * n, "A" * n + "a",
             " " * n + "a", "\n " * n, "'" * n + "s", "1" * n, "\u0301" * n, "x" + "'s" * n,
             "\U0001f600" * n, "/\n" * n, "\t" * n + "!"]
    check_texts(pretok_check, patterns, family, texts, safe_conts=["", "a", "'s"], max_cuts=10)


def test_empty_and_usage(pretok_check):  # type: ignore[no-untyped-def]
    for family in FAMILIES + ["cl100k"]:
        assert run_many(pretok_check, family, ["", ""]) == [[], []]
    p = subprocess.run([str(pretok_check), "nope"], capture_output=True, env=ENV)
    assert p.returncode == 2


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_headers_compile_cleanly(cc, tmp_path):  # type: ignore[no-untyped-def]
    if shutil.which(cc) is None:
        pytest.skip(f"no {cc}")
    for header in ("o200k", "gpt2"):  # each on its own, and all three in one program
        src = tmp_path / f"{header}.c"
        src.write_text(f'#include "pretok/{header}.h"\nint main(void) {{ return 0; }}\n')
        subprocess.run([cc, *CFLAGS, "-O2", "-c", str(src), "-o", str(tmp_path / "x.o")],
                       cwd=ROOT, check=True)
    subprocess.run([cc, *CFLAGS, "-O2", "csrc/tools/pretok_check.c", "-o", str(tmp_path / "pc")],
                   cwd=ROOT, check=True)
