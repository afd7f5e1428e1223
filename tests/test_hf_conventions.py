"""Hugging Face's conventions: save_pretrained folders and hub ids from the local cache, the
post-processor's special tokens by default (tokenizer(text).input_ids), offsets; a GGUF's
declared BOS / EOS as llama.cpp adds them.

References: `tokenizers` itself on tokenizer.json files built from llama.cpp's vocabularies
(tests/test_hf.py's helpers) with each kind of post-processor put in; tiktoken's
decode_with_offsets; llama.cpp's rules (llama-vocab.cpp) for when add_special adds BOS / EOS.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import edgetok
from edgetok._ffi import ModelError
from edgetok.gguf import read_metadata
from quick import some_slow
from strategies import texts
from test_hf import tokenizer_json, vocab  # noqa: F401 - vocab is a fixture

EOT = 50256  # GPT-2's <|endoftext|>
BOT, EOT3 = 128000, 128001  # Llama-3's <|begin_of_text|>, <|end_of_text|>


def template(single: list[str], tokens: dict[str, int]) -> dict:  # type: ignore[type-arg]
    return {"type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}} if t == "$A"
                       else {"SpecialToken": {"id": t, "type_id": 0}} for t in single],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {t: {"id": t, "ids": [i], "tokens": [t]} for t, i in tokens.items()}}


def byte_level(trim: bool, prefix_space: bool = False) -> dict:  # type: ignore[type-arg]
    return {"type": "ByteLevel", "add_prefix_space": prefix_space, "trim_offsets": trim,
            "use_regex": True}


# (vocabulary, post_processor): every kind Hugging Face ships, on GPT-2's and Llama-3's vocabularies
POSTS = {
    "template-bos": ("llama-bpe", template(["<|begin_of_text|>", "$A"], {"<|begin_of_text|>": BOT})),
    "template-both": ("gpt-2", template(["<|endoftext|>", "$A", "<|endoftext|>"],
                                        {"<|endoftext|>": EOT})),
    "llama3-sequence": ("llama-bpe", {"type": "Sequence", "processors": [
        byte_level(False, True),
        template(["<|begin_of_text|>", "$A"], {"<|begin_of_text|>": BOT})]}),
    "roberta": ("gpt-2", {"type": "RobertaProcessing", "sep": ["<|endoftext|>", EOT],
                          "cls": ["<|endoftext|>", EOT], "trim_offsets": True,
                          "add_prefix_space": True}),
    "roberta-no-prefix": ("gpt-2", {"type": "RobertaProcessing", "sep": ["<|endoftext|>", EOT],
                                    "cls": ["<|endoftext|>", EOT], "trim_offsets": True,
                                    "add_prefix_space": False}),
    "bert": ("llama-bpe", {"type": "BertProcessing", "sep": ["<|end_of_text|>", EOT3],
                           "cls": ["<|begin_of_text|>", BOT]}),
    "byte-level-trim": ("gpt-2", byte_level(True, True)),
    # Qwen2 normalises to NFC: offsets into the text as given, through HF's NFC alignment
    "nfc-trim-template": ("qwen2", {"type": "Sequence", "processors": [
        byte_level(True, False), template(["$A", "<|endoftext|>"], {"<|endoftext|>": 151643})]}),
    "sequence-trim-template": ("mpt", {"type": "Sequence", "processors": [
        byte_level(True, False), template(["$A", "<|endoftext|>"], {"<|endoftext|>": 0})]}),
}

# the quick suite's: template, Roberta and ByteLevel post-processors, and NFC alignment
QUICK_POSTS = ["template-both", "roberta", "byte-level-trim", "nfc-trim-template"]


def spec_with(path: str, post: dict | None) -> str:  # type: ignore[type-arg]
    spec = json.loads(tokenizer_json(path))
    spec["post_processor"] = post
    return json.dumps(spec)


@pytest.fixture(scope="module", params=some_slow(sorted(POSTS), QUICK_POSTS))
def post_pair(request, vocab, tmp_path_factory):  # type: ignore[no-untyped-def]
    """(edgetok, tokenizers, kind) over the same tokenizer.json with one post-processor."""
    from tokenizers import Tokenizer

    name, post = POSTS[request.param]
    spec = spec_with(vocab[name], post)
    f = tmp_path_factory.mktemp("post") / "tokenizer.json"
    f.write_text(spec)
    return edgetok.load(f), Tokenizer.from_str(spec), request.param


def check_ids(enc, ref, text: str) -> None:  # type: ignore[no-untyped-def]
    want = ref.encode(text).ids  # add_special_tokens=True: tokenizer(text).input_ids
    bare = ref.encode(text, add_special_tokens=False).ids
    assert enc.encode(text, allowed_special="all") == want
    assert enc.encode(text, allowed_special="all", add_special_tokens=True) == want
    assert enc.encode(text, allowed_special="all", add_special_tokens=False) == bare
    assert enc.count(text, allowed_special="all") == len(want)
    assert enc.count(text, allowed_special="all", add_special_tokens=False) == len(bare)


def check_offsets(enc, ref, text: str) -> None:  # type: ignore[no-untyped-def]
    got = ref.encode(text)
    ids, offsets, byte_offsets = enc.encode_with_offsets(text, allowed_special="all")
    assert ids == got.ids
    assert offsets == got.offsets
    data = text.encode()
    for (cs, ce), (bs, be) in zip(offsets, byte_offsets):  # the same spans, in bytes
        if (bs, be) != (0, 0):
            assert data[bs:be] in text[cs:ce].encode()


def test_post_processor_real_text(post_pair, corpora):  # type: ignore[no-untyped-def]
    enc, ref, kind = post_pair
    wrapped = ref.encode("x").ids != ref.encode("x", add_special_tokens=False).ids
    assert wrapped == (not kind.startswith("byte-level"))  # the test covers what it says
    for text in [*corpora.values(), "", " ", "  hello  world  ", "a\n\n  b  "]:
        check_ids(enc, ref, text[:10000])
        check_offsets(enc, ref, text[:10000])
    big = "".join(corpora.values())[:150000]
    assert enc.encode_parallel(big, num_threads=2, allowed_special="all") == ref.encode(big).ids
    assert enc.count_parallel(big, num_threads=2, allowed_special="all") == len(ref.encode(big).ids)
    lines = corpora["english"][:20000].splitlines()
    assert enc.encode_batch(lines, allowed_special="all") == [ref.encode(t).ids for t in lines]
    assert enc.count_batch(lines, allowed_special="all") == [len(ref.encode(t).ids) for t in lines]
    flat, offs = enc.encode_batch_flat(lines, allowed_special="all")
    assert [list(flat[offs[i]:offs[i + 1]]) for i in range(len(lines))] == \
        [ref.encode(t).ids for t in lines]
    if not enc._matchable.keys() & {"   ", "  "}:  # (MPT's runs of spaces are special here)
        assert enc.encode_ordinary_batch(lines) == [ref.encode(t, add_special_tokens=False).ids
                                                    for t in lines]


@pytest.mark.slow
def test_post_processor_whole_corpora(post_pair, corpora):  # type: ignore[no-untyped-def]
    enc, ref, _ = post_pair
    for text in corpora.values():
        check_ids(enc, ref, text)
        check_offsets(enc, ref, text)


# text that NFC changes: marks in every order, decomposed Hangul, singletons, exclusions
MARKED = st.text(alphabet="aeoAE \u0301\u0308\u0323\u0327\u031b\u0345\u05b0\u093c\u1100"
                          "\u1161\u11a8\u212b\u2126\u0958\u0f73\u00e9\u1e69x\u3099\u304b",
                 max_size=20)


@given(MARKED)
@settings(max_examples=150, deadline=None)
def test_nfc_offsets(vocab, tmp_path_factory, text):  # type: ignore[no-untyped-def]
    """A model that normalises to NFC gives Hugging Face's offsets into the text as given."""
    enc, ref = _nfc_pair(vocab, tmp_path_factory)
    check_ids(enc, ref, text)
    check_offsets(enc, ref, text)


_NFC: list = []  # type: ignore[type-arg]


def _nfc_pair(vocab, tmp_path_factory):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer

    if not _NFC:
        name, post = POSTS["nfc-trim-template"]
        spec = spec_with(vocab[name], post)
        f = tmp_path_factory.mktemp("nfc") / "tokenizer.json"
        f.write_text(spec)
        _NFC.append((edgetok.load(f), Tokenizer.from_str(spec)))
    assert _NFC[0][0].model.nfc
    return _NFC[0]


@given(texts)
@settings(max_examples=80, deadline=None)
def test_post_processor_generated(post_pair, text):  # type: ignore[no-untyped-def]
    enc, ref, _ = post_pair
    check_ids(enc, ref, text)
    check_offsets(enc, ref, text)


def check_stream(enc, ref, text: str, sizes: list[int]) -> None:  # type: ignore[no-untyped-def]
    """encode_stream over reads of these sizes: tokenizers' ids of the whole text, with the
    post-processor's tokens by default and with add_special_tokens=True, without for False."""
    from reference import stream_ids

    want = ref.encode(text).ids
    assert stream_ids(enc, text, sizes, allowed_special="all") == want
    assert stream_ids(enc, text, sizes, allowed_special="all", add_special_tokens=True) == want
    assert stream_ids(enc, text, sizes, allowed_special="all", add_special_tokens=False) == \
        ref.encode(text, add_special_tokens=False).ids


def stream_real_text(post_pair, corpora, n: int) -> None:  # type: ignore[no-untyped-def]
    enc, ref, _ = post_pair
    for text in [*corpora.values(), ""]:
        check_stream(enc, ref, text[:300], [1])
        for sizes in ([7, 300], [4096], [1 << 20]):
            check_stream(enc, ref, text[:n], sizes)


def test_stream_post_processor_real_text(post_pair, corpora):  # type: ignore[no-untyped-def]
    stream_real_text(post_pair, corpora, 5000)


@pytest.mark.slow
def test_stream_post_processor_real_text_long(post_pair, corpora):  # type: ignore[no-untyped-def]
    stream_real_text(post_pair, corpora, 20000)


@given(texts, st.lists(st.integers(1, 40), min_size=1, max_size=4))
@settings(max_examples=60, deadline=None)
def test_stream_post_processor_generated(post_pair, text, sizes):  # type: ignore[no-untyped-def]
    enc, ref, _ = post_pair
    check_stream(enc, ref, text, sizes)


@given(texts)
@settings(max_examples=200, deadline=None)
def test_offsets_match_tiktoken(text):  # type: ignore[no-untyped-def]
    import reference

    enc = edgetok.get_encoding("cl100k_base")
    ref = reference.tiktoken_encoding("cl100k_base")
    ids, offsets, byte_offsets = enc.encode_with_offsets(text, disallowed_special=())
    assert ids == ref.encode(text, disallowed_special=())
    data = text.encode("utf-8", "surrogatepass")
    # decode_with_offsets' offset is the start of each span; the bytes tile the text
    assert [s for s, _ in offsets] == ref.decode_with_offsets(ids)[1]
    assert [data[a:b] for a, b in byte_offsets] == ref.decode_tokens_bytes(ids)
    assert all(b == c for (_, b), (c, _) in zip(byte_offsets, byte_offsets[1:]))


def test_post_processor_errors(vocab, tmp_path):  # type: ignore[no-untyped-def]
    bad = [template(["$A", "<|missing|>"], {}), {"type": "Unknown"},
           {"type": "TemplateProcessing", "single": [], "special_tokens": {}},
           {"type": "BertProcessing", "sep": "x", "cls": ["a", 1]}]
    for post in bad:
        f = tmp_path / "tokenizer.json"
        f.write_text(spec_with(vocab["gpt-2"], post))
        with pytest.raises(ModelError, match="post"):
            edgetok.load(f)


# -- where a tokenizer is: folders and the local Hugging Face cache ---------------------------
def fake_hub(root: Path, repo: str, spec: str, commit: str = "0123abcd" * 5) -> Path:
    """huggingface_hub's cache layout: blobs, snapshots/<commit>/ of links to them, refs/main."""
    folder = root / ("models--" + repo.replace("/", "--"))
    (folder / "blobs").mkdir(parents=True)
    (folder / "blobs" / "f00d").write_text(spec)
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "tokenizer.json").symlink_to(Path("../../blobs/f00d"))
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit)
    return snap


def test_hub_id_from_local_cache(vocab, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer

    name, post = POSTS["template-both"]
    spec = spec_with(vocab[name], post)
    ref = Tokenizer.from_str(spec)
    text = "Hub ids resolve offline. 12345 \u00e9t\u00e9"
    fake_hub(tmp_path / "hub", "Org/Model-7B-Instruct", spec)
    for env in ({"HF_HUB_CACHE": str(tmp_path / "hub")}, {"HF_HOME": str(tmp_path)}):
        monkeypatch.delenv("HF_HUB_CACHE", raising=False)
        monkeypatch.delenv("HF_HOME", raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        enc = edgetok.load("Org/Model-7B-Instruct")
        assert enc.name == "Org/Model-7B-Instruct"
        assert enc.encode(text) == ref.encode(text).ids
        assert edgetok.load("Org/Model-7B-Instruct@main").encode(text) == ref.encode(text).ids
    with pytest.raises(ModelError, match=str(tmp_path / "hub" / "models--Org--Other")):
        edgetok.load("Org/Other")
    # the CLI takes it as --model, and says where it looked when it is missing
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub")}
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "encode", "--model",
                        "Org/Model-7B-Instruct"], input=text.encode(), capture_output=True, env=env)
    assert p.returncode == 0, p.stderr
    assert list(map(int, p.stdout.split())) == ref.encode(text).ids
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "count", "--model", "Org/None"],
                       input=b"x", capture_output=True, env=env)
    assert p.returncode == 1 and b"models--Org--None" in p.stderr and b"never downloads" in p.stderr


def test_save_pretrained_folder(vocab, tmp_path):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer

    spec = spec_with(vocab["gpt-2"], POSTS["template-both"][1])
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(spec)
    (folder / "tokenizer_config.json").write_text("{}")
    text = "A save_pretrained folder"
    assert edgetok.load(folder).encode(text) == Tokenizer.from_str(spec).encode(text).ids
    assert edgetok.load(str(folder)).name == "my-model"
    with pytest.raises(ModelError, match="without a tokenizer.json"):
        edgetok.load(tmp_path)


def test_pickle_keeps_post_processor(vocab, tmp_path):  # type: ignore[no-untyped-def]
    import pickle

    f = tmp_path / "tokenizer.json"
    f.write_text(spec_with(vocab["gpt-2"], POSTS["template-both"][1]))
    enc = pickle.loads(pickle.dumps(edgetok.load(f)))
    assert enc.encode("hi")[0] == enc.encode("hi")[-1] == EOT


def test_cache_keeps_post_processor(vocab, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    # the compiled model is cached; what the post-processor adds is kept beside it
    monkeypatch.setenv("EDGETOK_NO_CACHE", "0")
    monkeypatch.setenv("EDGETOK_CACHE", str(tmp_path / "cache"))
    from tokenizers import Tokenizer

    f = tmp_path / "tokenizer.json"
    f.write_text(spec_with(vocab["gpt-2"], POSTS["template-both"][1]))
    want = Tokenizer.from_file(str(f)).encode("x y").ids
    assert want[0] == want[-1] == EOT
    first = edgetok.load(f)
    again = edgetok.load(f)
    assert again.model.backing == "mmap"
    assert first.encode("x y") == again.encode("x y") == want
    for meta in (tmp_path / "cache" / "models").glob("*.json"):
        meta.unlink()  # metadata lost: compiled again, not guessed
    assert edgetok.load(f).encode("x y") == want


# -- GGUF: the BOS / EOS the file declares ----------------------------------------------------
# llama.cpp (llama-vocab.cpp): add_bos defaults to true for SentencePiece BPE ("llama") and
# the Llama-3 pre-tokenizers, add_eos to true for Unigram ("t5"); the file's
# tokenizer.ggml.add_bos_token / add_eos_token override
@pytest.mark.parametrize("name", ["gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "llama-spm",
                                  "nomic-bert-moe"])
def test_gguf_bos_eos(vocab, name):  # type: ignore[no-untyped-def]
    md = read_metadata(vocab[name])
    kind, pre = md["tokenizer.ggml.model"], md.get("tokenizer.ggml.pre")
    add_bos = md.get("tokenizer.ggml.add_bos_token", kind == b"llama" or pre == b"llama-bpe")
    add_eos = md.get("tokenizer.ggml.add_eos_token", kind == b"t5")
    bos, eos = md["tokenizer.ggml.bos_token_id"], md["tokenizer.ggml.eos_token_id"]
    enc = edgetok.load(vocab[name])
    text = "Hello world"
    bare = enc.encode(text)
    assert enc.encode(text, add_special_tokens=False) == bare  # the default adds nothing
    assert enc.encode(text, add_bos=True) == [bos, *bare]
    assert enc.encode(text, add_eos=True) == [*bare, eos]
    want = [bos] * add_bos + bare + [eos] * add_eos
    assert enc.encode(text, add_special_tokens=True) == want
    assert enc.count(text, add_special_tokens=True) == len(want)
    # a stream adds the same: llama.cpp's rule, then add_bos / add_eos outermost
    from reference import stream_ids

    long = (text + ", caf\u00e9 \U0001f600\n") * 40
    for kw in ({}, {"add_special_tokens": True}, {"add_bos": True, "add_eos": True},
               {"add_special_tokens": True, "add_bos": True}):
        assert stream_ids(enc, long, [7, 300], **kw) == enc.encode(long, **kw), kw
    assert stream_ids(enc, long, [5], add_special_tokens=True) == \
        [bos] * add_bos + enc.encode(long) + [eos] * add_eos


# -- the command line --------------------------------------------------------------------------
def run(*args: str, text: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run([sys.executable, "-m", "edgetok_cli.main", *args], input=text.encode(),
                          capture_output=True)


def test_cli_post_processor_and_offsets(vocab, tmp_path):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer

    spec = spec_with(vocab["gpt-2"], POSTS["roberta"][1])
    ref = Tokenizer.from_str(spec)
    f = tmp_path / "tokenizer.json"
    f.write_text(spec)
    text = "Offsets  on the command line: caf\u00e9 \U0001f600!\n"
    want = ref.encode(text)
    ids = lambda p: list(map(int, p.stdout.split()))  # noqa: E731
    assert ids(run("encode", "--model", str(f), text=text)) == want.ids
    assert ids(run("encode", "--model", str(f), "--no-add-special-tokens", text=text)) == \
        ref.encode(text, add_special_tokens=False).ids
    assert run("count", "--model", str(f), text=text).stdout.split() == [b"%d" % len(want.ids)]
    assert run("count", "--model", str(f), "--no-add-special-tokens", text=text).stdout.split() == \
        [b"%d" % (len(want.ids) - 2)]
    lines = run("encode", "--model", str(f), "-f", "tokens", text=text).stdout.decode().splitlines()
    assert [int(line.split("\t")[0]) for line in lines] == want.ids
    assert [tuple(map(int, line.split("\t")[2].split(":"))) for line in lines] == want.offsets
    info = json.loads(run("info", "--model", str(f), "--json", text="").stdout)
    assert info["adds"]["before"] == [EOT] and info["adds"]["after"] == [EOT]
    assert "RobertaProcessing" in info["adds"]["by"]


def test_cli_tokens_offsets_stream(ref, corpora, tmp_path):  # type: ignore[no-untyped-def]
    # offsets while streaming in small chunks: those of the whole text (tiktoken's starts)
    text = corpora["multilingual"][:5000]
    f = tmp_path / "t.txt"
    f.write_text(text)
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "encode", "-f", "tokens", str(f)],
                       capture_output=True, env={**os.environ, "EDGETOK_CHUNK": "97"})
    rows = [line.split("\t") for line in p.stdout.decode().splitlines()]
    ids = [int(r[0]) for r in rows]
    assert ids == ref.encode(text)
    assert [int(r[2].split(":")[0]) for r in rows] == ref.decode_with_offsets(ids)[1]
    data = text.encode()
    assert [data[int(a):int(b)] for a, b in (r[3].split(":") for r in rows)] == \
        ref.decode_tokens_bytes(ids)


def test_stream_bos_without_one():  # type: ignore[no-untyped-def]
    from edgetok.stream import encode_stream

    enc = edgetok.get_encoding("cl100k_base")
    with pytest.raises(ValueError, match="no BOS"):
        encode_stream(enc, ["x"], add_bos=True)  # at the call, before any text is read
    p = run("encode", "--bos", text="x")
    assert p.returncode == 1 and b"no BOS" in p.stderr and b"--bos and --eos" in p.stderr
