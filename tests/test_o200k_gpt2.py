"""The o200k_base, r50k_base and p50k_base encodings and the GPT-2 pretokenizer, end to end
against tiktoken: encode,
streaming cuts, parallel shards, token budgets."""
from __future__ import annotations

import base64
import os
import subprocess
import sys
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import edgetok
import edgetok.parallel as parallel
import reference
from strategies import any_text, texts
from test_pretok import DIFFERS

# letters of every case class, marks, apostrophes and '/' after line breaks: o200k's corners
O200K_ALPHABET = "aZ\u01c5\u02b0\u4e2dAB\u0301'sSlLtT\u017f /\n\r!.1 \t"
o200k_texts = st.one_of(texts, st.text(st.sampled_from(O200K_ALPHABET), max_size=30),
                        any_text.map(lambda t: "".join(c for c in t if ord(c) not in DIFFERS)))


@pytest.fixture(scope="module")
def o2():  # type: ignore[no-untyped-def]
    return edgetok.get_encoding("o200k_base"), reference.tiktoken_encoding("o200k_base")


def test_real_text(o2, corpora):  # type: ignore[no-untyped-def]
    enc, ref = o2
    assert enc.n_vocab == ref.n_vocab and enc.special_tokens_set == ref.special_tokens_set
    for kind, text in corpora.items():
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text), kind
        import regex

        sample = "".join(c for c in text[:50000] if ord(c) not in DIFFERS)
        assert enc.pretokenize(sample) == regex.findall(ref._pat_str, sample)
    text = "a<|endoftext|>b<|endofprompt|>"
    assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    with pytest.raises(ValueError):
        enc.encode(text)


@given(o200k_texts)
@settings(max_examples=1500, deadline=None)
def test_generated(o2, text):  # type: ignore[no-untyped-def]
    enc, ref = o2
    assert enc.encode_ordinary(text) == ref.encode_ordinary(text)


@given(o200k_texts, st.integers(0, 30))
@settings(max_examples=300, deadline=None)
def test_budgets(o2, text, n):  # type: ignore[no-untyped-def]
    enc, ref = o2
    i, ids = enc.split_at(text, n)
    assert ref.encode_ordinary(text[:i]) == ids == ref.encode_ordinary(text)[: len(ids)]
    rc = enc.range_counter(text)
    for a in range(0, len(text) + 1, 3):
        assert rc.count(a, len(text)) == len(ref.encode_ordinary(text[a:]))


@given(st.lists(o200k_texts, max_size=8).map("\n".join))
@settings(max_examples=300, deadline=None)
def test_shards_and_streaming_cuts(o2, text):  # type: ignore[no-untyped-def]
    enc, ref = o2
    want = ref.encode_ordinary(text * 3)
    with mock.patch.object(parallel, "SHARD_MIN_BYTES", 8), mock.patch.object(parallel, "cores", lambda: 8):
        assert enc.encode_parallel(text * 3, disallowed_special=()) == want
    c = enc.counter()
    data = (text * 3).encode()
    for k in range(0, len(data), 5):
        c.append(data[k:k + 5])
    assert c.count == len(want)


def test_streaming_cli(corpora, tmp_path):  # type: ignore[no-untyped-def]
    ref = reference.tiktoken_encoding("o200k_base")
    text = corpora["multilingual"][:40000] + "\n/x \u4e2dABc.\n" * 50
    f = tmp_path / "t.txt"
    f.write_text(text)
    out = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "encode", "-e", "o200k_base", str(f)],
                         capture_output=True, env={**os.environ, "EDGETOK_CHUNK": "97"}, timeout=300)
    assert out.returncode == 0, out.stderr
    assert list(map(int, out.stdout.split())) == ref.encode_ordinary(text)


@pytest.fixture(scope="module")
def gpt2_small(tmp_path_factory):  # type: ignore[no-untyped-def]
    """The first 20,000 ranks of cl100k_base split by the GPT-2 pattern: edgetok's gpt2
    pretokenizer and BPE against tiktoken with tiktoken's own r50k pattern."""
    import tiktoken
    import tiktoken_ext.openai_public as op

    cl = reference.tiktoken_encoding("cl100k_base")
    ranks = dict(sorted(cl._mergeable_ranks.items(), key=lambda kv: kv[1])[:20000])
    f = tmp_path_factory.mktemp("gpt2") / "small.tiktoken"
    f.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items()))
    out = f.with_suffix(".etok")
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "compile", str(f), "-o", str(out),
                        "--pretokenizer", "gpt2"], capture_output=True)
    assert p.returncode == 0, p.stderr
    ref = tiktoken.Encoding("gpt2small", pat_str=op.r50k_pat_str, mergeable_ranks=ranks,
                            special_tokens={})
    return edgetok.load(out), ref


@pytest.fixture(scope="module")
def gpt2_digits(gpt2_small, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The same vocabulary compiled with --pretokenizer gpt2-digits (each digit split off, then
    GPT-2's pattern): (edgetok, a function giving the reference ids: each digit split off and
    GPT-2's pattern applied in turn as Hugging Face does, then tiktoken's BPE of each piece)."""
    import tiktoken_ext.openai_public as op

    from test_pretok_families import Staged

    _, ref = gpt2_small
    src = next(tmp_path_factory.getbasetemp().glob("gpt2*/small.tiktoken"))
    out = tmp_path_factory.mktemp("gpt2d") / "digits.etok"
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "compile", str(src), "-o",
                        str(out), "--pretokenizer", "gpt2-digits"], capture_output=True)
    assert p.returncode == 0, p.stderr
    staged = Staged(r"\p{N}", op.r50k_pat_str)

    def want(text: str) -> list[int]:
        return [i for piece in staged.findall(text)
                for i in ref._core_bpe.encode_single_piece(piece.encode())]
    return edgetok.load(out), want


@given(st.one_of(texts, st.text(st.sampled_from(" \n\t!a1\u0663'sx\u00bd"), max_size=30)))
@settings(max_examples=400, deadline=None)
def test_gpt2_digits(gpt2_digits, corpora, text):  # type: ignore[no-untyped-def]
    enc, want = gpt2_digits
    text = "".join(c for c in text if ord(c) not in DIFFERS)
    assert enc.encode_ordinary(text) == want(text)
    c = enc.counter()
    data = text.encode()
    for k in range(0, len(data), 3):
        c.append(data[k:k + 3])
    assert c.count == len(want(text))


def test_gpt2_digits_real_text(gpt2_digits, corpora):  # type: ignore[no-untyped-def]
    enc, want = gpt2_digits
    for kind, text in corpora.items():
        assert enc.encode_ordinary(text) == want(text), kind
    info = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "info", "--model",
                           enc.model.source], capture_output=True, text=True)
    assert "each digit split off first" in info.stdout, info.stdout


def test_gpt2_real_text(gpt2_small, corpora):  # type: ignore[no-untyped-def]
    enc, ref = gpt2_small
    for kind, text in corpora.items():
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text), kind


@given(st.one_of(texts, st.text(st.sampled_from("'sSlLvVrRdDmMtT \n\t!a1\u017f\u00e9"), max_size=30)))
@settings(max_examples=800, deadline=None)
def test_gpt2_generated(gpt2_small, text):  # type: ignore[no-untyped-def]
    enc, ref = gpt2_small
    text = "".join(c for c in text if ord(c) not in DIFFERS)
    assert enc.encode_ordinary(text) == ref.encode_ordinary(text)
    c = enc.counter()
    data = text.encode()
    for k in range(0, len(data), 3):
        c.append(data[k:k + 3])
    assert c.count == len(ref.encode_ordinary(text))


@pytest.fixture(scope="module", params=["r50k_base", "p50k_base"])
def gpt2_family(request):  # type: ignore[no-untyped-def]
    if request.param not in edgetok.list_encodings():
        pytest.fail(f"{request.param} was not built (the openai-whisper sdist could not be had)")
    return edgetok.get_encoding(request.param), reference.tiktoken_encoding(request.param)


def test_gpt2_builtin_real_text(gpt2_family, corpora):  # type: ignore[no-untyped-def]
    enc, ref = gpt2_family
    assert (enc.n_vocab, enc.eot_token, enc.special_tokens_set) == (
        ref.n_vocab, ref.eot_token, ref.special_tokens_set)
    for kind, text in corpora.items():
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text), kind
    code = "def f(x):\n" + " " * 24 + "return x  \n\n"  # p50k's space-run tokens
    assert enc.encode(code) == ref.encode(code)
    text = "a<|endoftext|>b"
    assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")


@given(st.one_of(texts, st.text(st.sampled_from("'sSlLvVrRdDmMtT \n\t!a1\u017f\u00e9"), max_size=40)))
@settings(max_examples=500, deadline=None)
def test_gpt2_builtin_generated(gpt2_family, text):  # type: ignore[no-untyped-def]
    enc, ref = gpt2_family
    text = "".join(c for c in text if ord(c) not in DIFFERS)
    want = ref.encode_ordinary(text)
    assert enc.encode_ordinary(text) == want
    i, ids = enc.split_at(text, 7)
    assert ref.encode_ordinary(text[:i]) == ids == want[: len(ids)]


def test_tiktoken_file_named_model(tmp_path, corpora):  # type: ignore[no-untyped-def]
    # Llama-3 ships its tiktoken-format vocabulary as tokenizer.model: the content decides
    from edgetok.compiler import gpt2_vocabularies

    f = tmp_path / "tokenizer.model"
    f.write_bytes(gpt2_vocabularies()["r50k_base"])
    out = tmp_path / "r50k.etok"
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "compile", str(f), "-o", str(out),
                        "--pretokenizer", "gpt2"], capture_output=True)
    assert p.returncode == 0, p.stderr
    text = corpora["english"][:20000]
    assert edgetok.load(out).encode(text) == reference.tiktoken_encoding("r50k_base").encode(text)


@pytest.mark.parametrize("pattern", ["r50k", r"""\p{N}|'s|'t| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""])
def test_compile_with_pattern(tmp_path, corpora, pattern):  # type: ignore[no-untyped-def]
    # --pattern: tiktoken's own r50k pattern gets the regex-free GPT-2 pretokenizer; a pattern
    # of our own (every digit alone) runs through the `regex` module; tiktoken runs the same
    import tiktoken
    import tiktoken_ext.openai_public as op

    pat = op.r50k_pat_str if pattern == "r50k" else pattern
    cl = reference.tiktoken_encoding("cl100k_base")
    ranks = dict(sorted(cl._mergeable_ranks.items(), key=lambda kv: kv[1])[:20000])
    f = tmp_path / "small.tiktoken"
    f.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items()))
    out = tmp_path / "small.etok"
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "compile", str(f), "-o", str(out),
                        "--pattern", pat], capture_output=True)
    assert p.returncode == 0, p.stderr
    enc = edgetok.load(out)
    assert enc.model.regex_split == (pattern != "r50k")
    ref = tiktoken.Encoding("small", pat_str=pat, mergeable_ranks=ranks, special_tokens={})
    for kind, text in corpora.items():
        text = "".join(c for c in text[:50000] if ord(c) not in DIFFERS)
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text), kind


@given(st.lists(st.one_of(texts, st.sampled_from(["\n", "  \n\n", "w  \n\n#", "a b", " x", "x ",
                                                  "\t!", "' s", "1 2"])), max_size=30).map("".join))
@settings(max_examples=400, deadline=None)
def test_gpt2_shard_cuts(gpt2_family, text):  # type: ignore[no-untyped-def]
    enc, ref = gpt2_family
    reference.check_shard_cuts(enc, ref, "".join(c for c in text if ord(c) not in DIFFERS))


def test_gpt2_shard_cut_repro(gpt2_family):  # type: ignore[no-untyped-def]
    # outside testing: `edgetok count -e r50k_base` gave 1,199,998 for ("w  \n\n#" * 200000)
    # on all cores, cl100k's cut after a line break applied to GPT-2's pattern
    enc, ref = gpt2_family
    text = "w  \n\n#" * 200000
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "count", "-e", enc.name,
                        "--jobs", "2"], input=text.encode(), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert int(p.stdout.split()[0]) == len(ref.encode_ordinary(text))
    mixed = ("w  \n\n#" * 40 + "the cat sat\n") * 2000
    with mock.patch.object(parallel, "SHARD_MIN_BYTES", 64), \
            mock.patch.object(parallel, "PARALLEL_MIN_BYTES", 1), \
            mock.patch.object(parallel, "JOB_MIN_CHARS", 1), \
            mock.patch.object(parallel, "cores", lambda: 8):
        assert enc.encode_parallel(mixed) == ref.encode_ordinary(mixed)
        assert enc.count_parallel(mixed) == len(ref.encode_ordinary(mixed))
