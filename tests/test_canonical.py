"""Encoding.is_canonical / canonicalize against the definition, with tiktoken (built-ins) and
the GGUF model's own re-encoding (its ids are checked against Hugging Face in test_hf) as the
oracle: canonical encodings of real and generated text are canonical; perturbed ones (a token
split in two, two tokens merged, a random segmentation, random ids) answer what re-encoding
answers."""
from __future__ import annotations

import functools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import edgetok
import reference
from strategies import any_text, texts

BUILTINS = ["cl100k_base", "o200k_base", "r50k_base", "p50k_base"]
LLAMA_CPP = ("llama-cpp-python", "0.3.36")


@pytest.fixture(scope="module")
def gguf():  # type: ignore[no-untyped-def]
    """Llama-3's byte-level BPE (GGUF; the Llama-3 pretokenizer in C) and GPT-2's."""
    from edgetok.fetch import sdist_members

    try:
        got = sdist_members(*LLAMA_CPP, ["models/ggml-vocab-llama-bpe.gguf",
                                         "models/ggml-vocab-gpt-2.gguf"])
    except RuntimeError as e:
        pytest.fail(f"the reference vocabularies are not available: {e}")
    return {name: edgetok.load(str(p)) for name, p in
            zip(("llama-bpe", "gpt-2"), got.values())}


def oracle(name: str):  # type: ignore[no-untyped-def]
    """What re-encoding gives for bytes: tiktoken's, or for GGUF models edgetok's own."""
    return reference.tiktoken_encoding(name)


def truth(enc, ref, ids: list[int]) -> bool:  # type: ignore[no-untyped-def]
    data = enc.decode_bytes(ids)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return bool(ref._encode_bytes(data) == ids) if ref is not None else enc._encode_bytes(data) == ids
    return bool((ref.encode_ordinary(text) if ref is not None else enc.encode_ordinary(text)) == ids)


def perturbations(enc, ids: list[int], rnd: random.Random) -> list[list[int]]:  # type: ignore[no-untyped-def]
    """A token split into two tokens, two adjacent tokens merged into one, a stretch of the
    bytes cut into random tokens (longest-first or shortest-first)."""
    out = []
    model = enc.model
    for _ in range(4):
        if not ids:
            break
        k = rnd.randrange(len(ids))
        b = enc.decode_single_token_bytes(ids[k])
        cuts = [c for c in range(1, len(b)) if model.lookup(b[:c]) is not None
                and model.lookup(b[c:]) is not None]
        if cuts:
            c = rnd.choice(cuts)
            out.append(ids[:k] + [model.lookup(b[:c]), model.lookup(b[c:])] + ids[k + 1:])
        if k + 1 < len(ids):
            m = model.lookup(enc.decode_single_token_bytes(ids[k]) + enc.decode_single_token_bytes(ids[k + 1]))
            if m is not None:
                out.append(ids[:k] + [m] + ids[k + 2:])
    if ids:
        i = rnd.randrange(len(ids))
        j = min(len(ids), i + rnd.randint(1, 6))
        data = enc.decode_bytes(ids[i:j])
        seg: list[int] = []
        p = 0
        while p < len(data):
            lens = [n for n in range(1, min(len(data) - p, model.max_token_len) + 1)
                    if model.lookup(data[p:p + n]) is not None]
            n = rnd.choice(lens) if rnd.random() < 0.5 else max(lens)
            seg.append(model.lookup(data[p:p + n]))
            p += n
        out.append(ids[:i] + seg + ids[j:])
    return out


@pytest.mark.parametrize("name", BUILTINS)
def test_real_text_is_canonical(corpora, name):  # type: ignore[no-untyped-def]
    enc, ref = edgetok.get_encoding(name), oracle(name)
    rnd = random.Random(19)
    for kind, text in corpora.items():
        lines = [ln for ln in text[:60_000].split("\n\n") if ln]
        whole = ref.encode_ordinary(text[:200_000])
        assert enc.is_canonical(whole), kind
        for line in rnd.sample(lines, min(40, len(lines))):
            ids = ref.encode_ordinary(line)
            assert enc.is_canonical(ids), line
            for p in perturbations(enc, ids, rnd):
                assert enc.is_canonical(p) == truth(enc, ref, p), (line, p)
                assert enc.canonicalize(p) == ids


@pytest.mark.parametrize("name", BUILTINS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(texts, any_text), seed=st.integers(0, 1 << 30))
def test_generated_text(name, text, seed):  # type: ignore[no-untyped-def]
    enc, ref = edgetok.get_encoding(name), oracle(name)
    ids = ref.encode_ordinary(text)
    assert enc.is_canonical(ids)
    for p in perturbations(enc, ids, random.Random(seed)):
        assert enc.is_canonical(p) == truth(enc, ref, p), (text, p)


@pytest.mark.parametrize("name", [*BUILTINS, "llama3"])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_random_ids(name, data):  # type: ignore[no-untyped-def]
    """Random ordinary ids: mostly not canonical, often not UTF-8 (tiktoken's _encode_bytes).
    Llama-3 (GGUF, no backtracking tables) against tiktoken with its ranks."""
    enc, ref = reference.llama3() if name == "llama3" else (edgetok.get_encoding(name), oracle(name))
    n = enc.model.n_vocab
    ordinary = st.integers(0, n - 1).filter(lambda i: not enc.is_special_token(i)
                                            and enc.model.token_bytes(i) is not None)
    small = st.integers(0, 1000)  # frequent short tokens: pairs that may well be canonical
    ids = data.draw(st.lists(st.one_of(ordinary, small), max_size=8))
    assert enc.is_canonical(ids) == truth(enc, ref, ids), ids


@pytest.mark.parametrize("name", [*BUILTINS, "llama3"])
def test_single_piece_and_bytes(name):  # type: ignore[no-untyped-def]
    """_encode_single_piece (BPE with no pretokenizer split) and _encode_bytes against
    tiktoken's, on real words, sentences and bytes that are not UTF-8: on Llama-3 (no
    backtracking tables) every piece of more than one token once raised ModelError."""
    enc, ref = reference.llama3() if name == "llama3" else (edgetok.get_encoding(name), oracle(name))
    rnd = random.Random(3)
    words = [b"hello world", b"antidisestablishmentarianism", b"\xa8:", b" \xe4\xb8\xad\xe6",
             "naïve café — ünïcödé ".encode() * 3, b"x", bytes(range(256))]
    words += [bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 40))) for _ in range(100)]
    for w in words:
        assert enc._encode_single_piece(w) == ref._encode_single_piece(w), w
        assert enc._encode_bytes(w) == ref._encode_bytes(w), w
    assert enc._encode_single_piece(b"") == []  # (tiktoken's panics)
    if name == "llama3":
        assert enc.is_canonical([101, 25])  # b"\xa8:": what _encode_bytes gives
    text = "antidisestablishmentarianism isn't a word you'd type 12345 times"
    assert enc._encode_only_native_bpe(text) == ref._encode_only_native_bpe(text)


def test_specials_and_unknown_ids(enc):  # type: ignore[no-untyped-def]
    eot = enc.eot_token
    assert not enc.is_canonical([eot])
    assert not enc.is_canonical(enc.encode("hi") + [eot])
    assert enc.is_canonical([])
    with pytest.raises(KeyError):
        enc.is_canonical([enc.n_vocab + 5])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(texts, any_text), seed=st.integers(0, 1 << 30))
def test_gguf(gguf, text, seed):  # type: ignore[no-untyped-def]
    """GGUF byte-level BPE against the model's re-encoding (whose ids test_hf checks against
    Hugging Face), both decided in C: GPT-2's backtracks; Llama-3's has tokens that are not
    the BPE of their own bytes (no backtracking tables, pair tables all the same)."""
    for name, enc in gguf.items():
        assert enc.model.backtracks == (name == "gpt-2") and not enc.model.regex_split, name
        assert enc.model.pair_tables, name
        ids = enc.encode_ordinary(text)
        assert enc.is_canonical(ids)
        for p in perturbations(enc, ids, random.Random(seed)):
            want = truth(enc, None, p)
            assert enc.model.is_canonical(p) in ((want, None) if utf8_bad(enc, p) else (want,)), \
                (name, text, p)
            assert enc.is_canonical(p) == want


def utf8_bad(enc, ids: list[int]) -> bool:  # type: ignore[no-untyped-def]
    try:
        enc.decode_bytes(ids).decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


@functools.lru_cache(maxsize=None)
def llama3_odd() -> "tuple[list[int], list[int]]":
    """Llama-3's tokens that are not the BPE of their own bytes (merging them gives more than
    one token: such a token is only ever a whole piece), and those that are but whose merge
    tree has a merge ranked below one of its parts (the pair walk cannot take them): the tokens
    its pair test answers by merging, found here by merging every token's bytes in Python."""
    _, ref = reference.llama3()
    ranks = ref._mergeable_ranks
    whole, odd = [], {}
    for b, t in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(b) < 2:
            continue
        parts, last = reference.bpe_merge(ranks, b)
        if len(parts) > 1:
            whole.append(t)
            continue
        assert last is not None
        x, y = ranks[last[0]], ranks[last[1]]
        odd[t] = x >= t or y >= t or odd.get(x, False) or odd.get(y, False)
    return whole, sorted(t for t, v in odd.items() if v)


def test_llama3_whole_piece_tokens():  # type: ignore[no-untyped-def]
    """Llama-3's tokens that BPE never makes from their bytes, in C, against tiktoken with the
    same ranks: alone they are canonical (the encoder looks a piece up whole first), spelled in
    the parts BPE gives they are not, and next to other tokens (one piece or two) the verdict
    is tiktoken's; each is no valid pair with any token."""
    from edgetok._native import lib

    enc, ref = reference.llama3()
    ranks = ref._mergeable_ranks
    whole, _ = llama3_odd()
    assert len(whole) > 100  # (588 in this vocabulary)
    rnd = random.Random(5)
    common = range(256, 20000)
    n = 0
    for t in whole:
        b = enc.model.token_bytes(t)
        parts = [ranks[p] for p in reference.bpe_merge(ranks, b)[0]]
        cases = [[t], parts]
        for _ in range(3):
            x = rnd.choice(common)
            cases += [[x, t], [t, x], [x] + parts, parts + [x]]
        for ids in cases:
            if utf8_bad(enc, ids):
                continue
            want = ref.encode_ordinary(enc.decode(ids)) == ids
            assert enc.model.is_canonical(ids) == want, ids
            n += 1
        x = rnd.choice(common)
        assert not lib.et_valid_pair(enc.model._h, x, t) and not lib.et_valid_pair(enc.model._h, t, x)
    assert n > 2000


def test_llama3_pairs_merged_below_a_part():  # type: ignore[no-untyped-def]
    """Llama-3's tokens made by a merge ranked below a part (at any depth): their pair test is
    BPE itself; against merging the two tokens' bytes in Python, paired with random tokens on
    either side, and with random pairs of the rest (the pair walk)."""
    from edgetok._native import lib

    enc, ref = reference.llama3()
    ranks = ref._mergeable_ranks
    _, odd = llama3_odd()
    assert len(odd) > 50  # (107 in this vocabulary)
    ids = list(ranks.values())
    rnd = random.Random(7)
    pairs = [(rnd.choice(ids), t) for t in odd for _ in range(8)]
    pairs += [(b, a) for a, b in pairs]
    pairs += [(rnd.choice(ids), rnd.randrange(256, 20000)) for _ in range(3000)]
    valid = 0
    for a, b in pairs:
        x, y = enc.model.token_bytes(a), enc.model.token_bytes(b)
        want = reference.bpe_merge(ranks, x + y)[0] == [x, y]
        assert bool(lib.et_valid_pair(enc.model._h, a, b)) == want, (a, b)
        valid += want
    assert 0 < valid < len(pairs)



def test_linear_time(enc, corpora):  # type: ignore[no-untyped-def]
    """No re-encoding: checking 1 MB of ids costs about what decoding does, well under encoding."""
    import time

    text = "".join(corpora.values())[:1_000_000]
    ids = enc.encode_ordinary(text)
    t0 = time.perf_counter()
    assert enc.is_canonical(ids)
    t1 = time.perf_counter()
    broken = ids[:-1] + [enc.model.lookup(enc.decode_single_token_bytes(ids[-1])[:1]) or ids[-1]]
    enc.is_canonical(broken)
    assert t1 - t0 < 0.5
