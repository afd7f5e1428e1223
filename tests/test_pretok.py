"""The Peek2 pretokenizer against the `regex` module running tiktoken's cl100k pattern."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import any_text, texts

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gen_tables", ROOT / "csrc/unicode/gen_tables.py")
gen_tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen_tables)  # type: ignore[union-attr]

# Code points whose class the `regex` module (newer Unicode) and tiktoken disagree on: our
# tables follow tiktoken, so they are compared against tiktoken (test_encode), not regex.
DIFFERS = frozenset([cp for lo, hi in gen_tables.TIKTOKEN_UNASSIGNED for cp in range(lo, hi + 1)]
                    + list(gen_tables.TIKTOKEN_LIKE))


@pytest.fixture(scope="module")
def pattern(enc):  # type: ignore[no-untyped-def]
    import tiktoken_ext.openai_public as op

    # the pattern under test is tiktoken's own, not our copy of it
    pat = op.cl100k_base.__code__.co_consts
    ours = enc._pat_str
    assert ours in pat, "the model's pattern is not tiktoken's current cl100k pattern"
    return regex.compile(ours)


def comparable(text: str) -> str:
    return "".join(c for c in text if ord(c) not in DIFFERS)


def check(enc, pattern, text: str) -> None:  # type: ignore[no-untyped-def]
    assert enc.pretokenize(text) == pattern.findall(text)


@pytest.mark.parametrize("kind", ["english", "code", "multilingual"])
def test_real_text(enc, pattern, corpora, kind):  # type: ignore[no-untyped-def]
    text = comparable(corpora[kind])
    got = enc.pretokenize(text)
    want = pattern.findall(text)
    if got != want:
        i = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
        pytest.fail(f"piece {i}: {got[i - 2:i + 3]!r} != {want[i - 2:i + 3]!r}")
    assert len(got) > 10000


@pytest.mark.slow
@given(texts)
@settings(max_examples=3000, deadline=None)
def test_category_mixes(enc, pattern, text):  # type: ignore[no-untyped-def]
    check(enc, pattern, text)


@given(any_text)
@settings(max_examples=1000, deadline=None)
def test_any_unicode(enc, pattern, text):  # type: ignore[no-untyped-def]
    check(enc, pattern, comparable(text))


# Every ordered pair and triple of category representatives: each cell of the branch table,
# and what follows it, appears in some input.
REPS = ["a", "\u00e9", "1", "\u0663", " ", "\n", "\r", "\t", "\u3000", "'", "\u2019", ".",
        "\u0301", "\U0001f600", "s", "\u017f", "ll", "VE"]


def test_all_triples(enc, pattern):  # type: ignore[no-untyped-def]
    for a in REPS:
        for b in REPS:
            for c in REPS:
                for t in (a + b + c, a + b + c + " ", " " + a + b + c, a + b + b + c):
                    check(enc, pattern, t)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 1000])
@pytest.mark.parametrize("unit", ["1", " ", "\n", " \n", "\r\n", "a", "'", "!", " !", "\u3000", "'s"])
def test_runs(enc, pattern, unit, n):  # type: ignore[no-untyped-def]
    for t in (unit * n, "x" + unit * n, unit * n + "x", " " + unit * n + "\n"):
        check(enc, pattern, t)


def test_empty(enc):  # type: ignore[no-untyped-def]
    assert enc.pretokenize("") == []


@given(st.binary(max_size=64))
@settings(max_examples=500, deadline=None)
def test_invalid_utf8_bytes_never_crash(enc, data):  # type: ignore[no-untyped-def]
    # pieces of arbitrary bytes cover the input exactly, in order
    ends = list(enc.model.pretokenize(data))
    assert ends == sorted(ends) and (ends[-1] if ends else 0) == len(data)


def tiktoken_matches(pattern: str, text: str) -> set[int]:
    """The code points of text that tiktoken's own regex engine matches with pattern (one
    character a match): an encoding whose tokens are the 256 bytes encodes only the matches."""
    import tiktoken

    ranks = {bytes([b]): b for b in range(256)}
    probe = tiktoken.Encoding("probe", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    return {ord(c) for c in probe.decode_bytes(probe.encode_ordinary(text)).decode()}


def test_classes_are_tiktokens():
    # every class the pretokenizers use (\p{L}, \p{N}, \s, o200k's case classes and \p{M}) and
    # the contraction letters' case folds, for every code point, as tiktoken 0.14 (Unicode 16)
    # matches them; the tables come from these lists (test_model checks they are fresh)
    chars = gen_tables.all_chars()
    text = "".join(c for c in chars if not 0xD800 <= ord(c) <= 0xDFFF)
    cls = gen_tables.classes(chars)
    for bit, (name, pattern) in enumerate(gen_tables.BITS):
        got = tiktoken_matches(pattern, text)
        want = {cp for cp in range(gen_tables.NCP) if cls[cp] >> bit & 1}
        assert got == want, (name, sorted(map(hex, got ^ want))[:20])
    folds = gen_tables.folds(chars)
    for letter in gen_tables.CONTRACTION_LETTERS:
        got = {cp for cp in tiktoken_matches(f"(?i:{letter})", text) if cp >= 0x80}
        assert got == {cp for cp, x in folds if x == letter}, letter
