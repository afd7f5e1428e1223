"""Long pieces in a stream (ET_SETTLE): a line with no cut for megabytes (one letter repeated,
a line of emoji, a run of spaces) comes out in parts, with the ids of the whole text whatever
follows. References: tiktoken on the whole text."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import edgetok
import reference
from edgetok.stream import encode_stream
from strategies import ALPHABET

NAMES = ["cl100k_base", "o200k_base", "r50k_base", "p50k_base"]
MIN = 4096  # SETTLE_MIN in csrc/bpe/bpe.c: shorter pieces wait for a cut

# the units a long run is made of: every kind of run the pretokenizers have (words of each
# case and script, with marks and contractions, digits, punctuation with line-break tails,
# emoji, whitespace with and without line breaks), and mixtures that are no single run
UNITS = ["a", "ab", "Z", "AB", "Ab", "\u00e9", "\u05d0\u05d1", "\u4e2d", "A\u05d0", "\u02b0a",
         "a\u0301", "\u01c5", "1", "12\u0663", "!", "?!", "'", "/", "!/", "!\n", "\U0001f600",
         "\U0001f916\U0001f44d", "\u20ac", " ", "  \t", "\u3000", "\n", "\r\n", " \n", "\n ",
         "x ", "a'", "'s", "a1", "\x00", "\ufeff"]
# what may follow: one or two characters of each class, contractions, a line break
NEXT = st.one_of(st.text(alphabet=ALPHABET, max_size=4),
                 st.sampled_from(["'s", "'ll", "'LL", "'re", "s", "A", "a", "1", " ", "\n", "/",
                                  "\u05d0", "\u02b0", "\u0301", "\U0001f600", " a", "\r\n"]))


@pytest.fixture(scope="module", params=NAMES)
def pair(request):  # type: ignore[no-untyped-def]
    return edgetok.get_encoding(request.param), reference.tiktoken_encoding(request.param)


def long_text(unit: str, size: int, head: str, tail: str) -> str:
    return head + unit * (size // len(unit.encode()) + 1) + tail


@pytest.mark.parametrize("unit", ["a", "\u4e2d", "\U0001f600", "!", " ", "AB", "\u05d0\u05d1", "1"])
def test_a_long_run_settles(pair, unit):  # type: ignore[no-untyped-def]
    """Most of a long run comes out before its end is known (memory stays bounded), and the
    ids of what came out begin the whole text's ids whatever follows."""
    enc, ref = pair
    data = long_text(unit, 5 * MIN, "x ", "").encode()
    ids, used = enc.model.encode(data, final=False, settle=True)
    assert used > len(data) - 2 * MIN, (used, len(data))
    n, counted = enc.model.count(data, final=False, settle=True)
    assert (n, counted) == (len(ids), used)
    for more in ["", "a", "A", "'s", " x", "\n", "1", "!", "\u05d0", "\U0001f600"]:
        text = data.decode() + more
        want = ref.encode_ordinary(text)
        assert ids + enc.model.encode(text.encode()[used:])[0] == want, repr(more)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unit=st.sampled_from(UNITS), size=st.integers(MIN, 3 * MIN),
       head=st.text(alphabet=ALPHABET, max_size=6), sprinkle=st.text(alphabet=ALPHABET, max_size=3),
       at=st.integers(0, 100), more=st.lists(NEXT, min_size=1, max_size=4))
def test_settled_ids_whatever_follows(pair, unit, size, head, sprinkle, at, more):  # type: ignore[no-untyped-def]
    """The settled ids of a text, then the ids of the rest of it with any continuation, are
    the reference ids of the whole: the pretokenizer and BPE cannot move what settled."""
    enc, ref = pair
    body = long_text(unit, size, head, "")
    k = len(body) * at // 100
    text = body[:k] + sprinkle + body[k:]
    data = text.encode()
    ids, used = enc.model.encode(data, final=False, settle=True)
    assert used <= len(data)
    for m in more:
        assert ids + enc.model.encode(data[used:] + m.encode())[0] == ref.encode_ordinary(text + m)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unit=st.sampled_from(UNITS), size=st.integers(2 * MIN, 6 * MIN),
       tail=st.text(alphabet=ALPHABET, max_size=8), seed=st.integers(0, 2**16))
def test_stream_of_a_long_run(pair, unit, size, tail, seed):  # type: ignore[no-untyped-def]
    """encode_stream over reads of any size gives the reference ids of the whole text."""
    import random

    enc, ref = pair
    text = long_text(unit, size, "", tail)
    rnd = random.Random(seed)
    parts, i = [], 0
    while i < len(text):
        n = rnd.choice([1, 7, 300, 2000, 9000])
        parts.append(text[i:i + n])
        i += n
    got: list[int] = []
    for ids in encode_stream(enc, parts):
        got += ids  # type: ignore[arg-type]
    assert got == ref.encode_ordinary(text)
    count = sum(encode_stream(enc, parts, count_only=True))  # type: ignore[arg-type]
    assert count == len(got)
