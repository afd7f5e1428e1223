"""Malformed vocabulary files: every one is a ModelError that names the file and says what is
wrong (never a TypeError, OverflowError, RecursionError, a gzip error or a crash), found fast.

The reproducers under data/repro come from outside testing (atheris on the parsers); the fuzz
tests mutate small valid GGUF, tokenizer.json, SentencePiece and tiktoken sources (bytes
flipped, cut, inserted, repeated; JSON values replaced) and load each: it loads, or it is a
ModelError naming the file.
"""
from __future__ import annotations

import base64
import gzip
import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import edgetok
from edgetok._ffi import ModelError
from edgetok.compiler import compile_source

DATA = Path(__file__).parent / "data" / "repro"
MALFORMED = sorted((DATA / "malformed-sources").iterdir())
NO_ORDINARY = sorted(p for p in (DATA / "compile-no-ordinary-token").iterdir()
                     if p.suffix in (".model", ".json"))


@pytest.mark.parametrize("path", MALFORMED + NO_ORDINARY, ids=lambda p: p.name)
def test_malformed_source_is_a_model_error(path):  # type: ignore[no-untyped-def]
    for attempt in (lambda: edgetok.load(path), lambda: compile_source(path)):
        t = time.perf_counter()
        with pytest.raises(ModelError) as e:
            attempt()
        assert time.perf_counter() - t < 1.0  # a 200 KB varint too
        assert path.name in str(e.value)
        assert "not an edgetok model" not in str(e.value)  # what is wrong, in words


@pytest.mark.parametrize("path", [p for p in NO_ORDINARY if p.name != "atheris-spm.model"],
                         ids=lambda p: p.name)
def test_no_ordinary_token_is_refused_before_the_compiler(path):  # type: ignore[no-untyped-def]
    # the C compiler read uninitialised memory on these (a segfault): refused in Python first
    with pytest.raises(ModelError, match="the vocabulary has no ordinary token"):
        edgetok.load(path)


def test_missing_single_byte_tokens_say_which():  # type: ignore[no-untyped-def]
    with pytest.raises(ModelError, match=r"no token for 254 bytes \(0x00-0x60, 0x63-0xff\)"):
        edgetok.load(DATA / "malformed-sources" / "tiktoken_no_bytes.txt")


SPARSE = ["tiktoken_sparse_id.tiktoken", "hf_bpe_vocab_sparse.json", "hf_added_sparse.json",
          "hf_wordpiece_sparse.json"]


@pytest.fixture
def bounded_memory():  # type: ignore[no-untyped-def]
    """The address space capped 4 GiB above what the process maps now, for the test: a
    vocabulary that asks for tens of gigabytes fails here instead of taking the machine."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * resource.getpagesize()
    cap = mapped + (4 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY
                                            else min(cap, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.parametrize("name", SPARSE)
def test_sparse_ids_are_refused(name, bounded_memory):  # type: ignore[no-untyped-def]
    # one token with id 1,212,121,212 made a 24 GB model image (the slow fuzz test was killed
    # for memory in CI): ids may leave at most ET_MAX_UNUSED_IDS unused
    with pytest.raises(ModelError, match=r"ids may leave at most 1048576 unused"):
        edgetok.load(DATA / "malformed-sources" / name)


def test_sparse_ids_are_refused_in_c(bounded_memory):  # type: ignore[no-untyped-def]
    from edgetok._native import ffi, lib

    for top in (255 + lib.ET_MAX_UNUSED_IDS + 2, 0x7FFFFFFE):  # first refused, the largest
        ids = [*range(256), top]
        off = [*range(257), 258]
        blob = bytes(range(256)) + b"zz"
        out, out_len = ffi.new("uint8_t **"), ffi.new("size_t *")
        rc = lib.et_compile_bpe(blob, ffi.new("uint32_t[]", off), ffi.new("uint32_t[]", ids), 257,
                                b"", ffi.new("uint32_t[]", [0]), ffi.new("uint32_t[]", [0]),
                                ffi.NULL, 0, lib.ET_PRETOK_CL100K, 3, 0, b"", out, out_len)
        assert rc == lib.ET_E_VOCAB
    ids[-1] = 255 + lib.ET_MAX_UNUSED_IDS + 1  # the most unused ids allowed: compiles
    rc = lib.et_compile_bpe(blob, ffi.new("uint32_t[]", off), ffi.new("uint32_t[]", ids), 257,
                            b"", ffi.new("uint32_t[]", [0]), ffi.new("uint32_t[]", [0]),
                            ffi.NULL, 0, lib.ET_PRETOK_CL100K, 3, 0, b"", out, out_len)
    assert rc == lib.ET_OK
    lib.et_free(out[0])


def test_cli_prints_one_line(tmp_path):  # type: ignore[no-untyped-def]
    for name in ("gguf_nested_arrays_5000.gguf", "spm_type_as_bytes.model",
                 "BadGzipFile_compiler.py_63_fb590de8f5"):
        path = DATA / "malformed-sources" / name
        for args in (["count", "--model", str(path), "-"],
                     ["compile", str(path), "-o", str(tmp_path / "x.etok")]):
            p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", *args], input=b"",
                               capture_output=True)
            err = p.stderr.decode()
            assert p.returncode == 1 and err.startswith("edgetok: error: ") and name in err
            assert err.count("\n") == 1, err


# -- small valid sources ---------------------------------------------------------------------

def _gguf(kv: dict[str, object]) -> bytes:
    """A GGUF file (version 3, no tensors) holding kv: bytes values as strings, lists of
    bytes as string arrays, (type, list) as arrays of GGUF scalar type `type`."""
    fmt = {4: "<I", 5: "<i", 6: "<f", 0: "<B"}

    def string(b: bytes) -> bytes:
        return struct.pack("<Q", len(b)) + b

    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
    for key, v in kv.items():
        out += string(key.encode())
        if isinstance(v, bytes):
            out += struct.pack("<I", 8) + string(v)
        elif isinstance(v, list):
            out += struct.pack("<IIQ", 9, 8, len(v)) + b"".join(string(x) for x in v)
        elif isinstance(v, tuple):
            t, xs = v
            out += struct.pack("<IIQ", 9, t, len(xs)) + b"".join(struct.pack(fmt[t], x) for x in xs)
        else:
            out += struct.pack("<Ii", 5, v)
    return out


def _byte_level() -> tuple[list[str], list[tuple[str, str]]]:
    """A byte-level BPE vocabulary: the 256 byte characters, then tokens made by merges."""
    from edgetok.hf import _byte_alphabet

    chars = sorted(_byte_alphabet().items(), key=lambda kv: kv[1])
    vocab = [c for c, _ in chars]
    merges = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("i", "n"), ("\u0120", "a")]
    vocab += [a + b for a, b in merges]
    return vocab, merges


@pytest.fixture(scope="module")
def sources(tmp_path_factory, corpora):  # type: ignore[no-untyped-def]
    """name: bytes of a small valid source of each kind (each loads)."""
    import reference

    ranks = reference.tiktoken_encoding("cl100k_base")._mergeable_ranks
    tik = b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items() if r < 300)
    vocab, merges = _byte_level()
    hf = json.dumps({
        "model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(vocab)},
                  "merges": [f"{a} {b}" for a, b in merges]},
        "added_tokens": [{"id": len(vocab), "content": "<|end|>", "special": True}],
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"\p{N}"}, "behavior": "Isolated",
             "invert": False}, {"type": "ByteLevel", "add_prefix_space": False}]},
        "normalizer": {"type": "NFC"}}).encode()
    gguf_bpe = _gguf({"general.architecture": b"gpt2", "tokenizer.ggml.model": b"gpt2",
                      "tokenizer.ggml.pre": b"gpt-2",
                      "tokenizer.ggml.tokens": [t.encode() for t in vocab] + [b"<|end|>"],
                      "tokenizer.ggml.token_type": (5, [1] * len(vocab) + [3]),
                      "tokenizer.ggml.merges": [f"{a} {b}".encode() for a, b in merges],
                      "tokenizer.ggml.bos_token_id": len(vocab)})
    pieces = [b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % b for b in range(256)]
    words = [b"\xe2\x96\x81", b"t", b"h", b"e", b"\xe2\x96\x81t", b"he", b"\xe2\x96\x81the"]
    gguf_spm = _gguf({"tokenizer.ggml.model": b"llama", "tokenizer.ggml.tokens": pieces + words,
                      "tokenizer.ggml.scores": (6, [0.0] * len(pieces)
                                                + [-float(i) for i in range(len(words))]),
                      "tokenizer.ggml.token_type": (5, [2, 3, 3] + [6] * 256 + [1] * len(words)),
                      "tokenizer.ggml.unknown_token_id": 0, "tokenizer.ggml.bos_token_id": 1,
                      "tokenizer.ggml.precompiled_charsmap": (0, [])})
    spm = pytest.importorskip("sentencepiece")
    d = tmp_path_factory.mktemp("sources")
    (d / "train.txt").write_text(corpora["english"][:30000].encode("ascii", "ignore").decode())
    out = {"tiktoken": tik, "tiktoken.gz": gzip.compress(tik, mtime=0), "tokenizer.json": hf,
           "gguf-bpe": gguf_bpe, "gguf-spm": gguf_spm}
    for name, opts in (("unigram", {"normalization_rule_name": "identity"}),
                       ("bpe", {"model_type": "bpe", "byte_fallback": True})):
        spm.SentencePieceTrainer.train(input=str(d / "train.txt"), model_prefix=str(d / name),
                                       vocab_size=400, num_threads=1, minloglevel=2, **opts)
        out[f"spm-{name}"] = (d / f"{name}.model").read_bytes()
    for name, data in out.items():  # each loads as it is
        (d / name).write_bytes(data)
        edgetok.load(d / name)
    return out


SOURCES = ["tiktoken", "tiktoken.gz", "tokenizer.json", "gguf-bpe", "gguf-spm", "spm-unigram",
           "spm-bpe"]


@st.composite
def mutated(draw, data: bytes) -> bytes:  # type: ignore[no-untyped-def]
    """data with a few byte-level mutations: flips, overwrites, cuts, insertions, repeats."""
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(len(b) - 1, 0)))
        op = draw(st.sampled_from(["flip", "set", "cut", "insert", "delete", "repeat"]))
        if op == "flip" and b:
            b[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and b:
            b[at] = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, draw(st.integers(0, 255))]))
        elif op == "cut":
            del b[at:]
        elif op == "insert":
            b[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del b[at:at + draw(st.integers(1, 16))]
        elif op == "repeat":
            b[at:at] = b[at:at + draw(st.integers(1, 64))] * draw(st.integers(1, 100))
    return bytes(b)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=8)


@st.composite
def mutated_json(draw, data: bytes) -> bytes:  # type: ignore[no-untyped-def]
    """A tokenizer.json with one value somewhere in its tree replaced (or removed)."""
    spec = json.loads(data)
    node: dict | list = spec  # type: ignore[type-arg]
    for _ in range(draw(st.integers(0, 3))):  # down a few levels
        inner = [v for v in (node.values() if isinstance(node, dict) else node)
                 if isinstance(v, (dict, list)) and v]
        if not inner:
            break
        node = draw(st.sampled_from(inner))
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    if keys:
        key = draw(st.sampled_from(keys))
        if isinstance(node, dict) and draw(st.booleans()):
            del node[key]
        else:
            node[key] = draw(JSON_VALUES)  # type: ignore[index]
    return json.dumps(spec).encode()


def _loads_or_model_error(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        edgetok.load(path)
    except ModelError as e:
        assert path.name in str(e), str(e)


def _fuzz(sources, tmp_path_factory, name: str, data) -> None:  # type: ignore[no-untyped-def]
    src = sources[name]
    strategy = mutated(src)
    if name == "tokenizer.json":
        strategy = st.one_of(strategy, mutated_json(src))
    _loads_or_model_error(tmp_path_factory.getbasetemp() / f"fuzz-{name}", data.draw(strategy))


FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("name", SOURCES)
@FUZZ
@given(data=st.data())
def test_fuzz_parsers(sources, tmp_path_factory, name, data):  # type: ignore[no-untyped-def]
    _fuzz(sources, tmp_path_factory, name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", SOURCES)
@settings(FUZZ, max_examples=5000, derandomize=False)
@given(data=st.data())
def test_fuzz_parsers_long(sources, tmp_path_factory, name, data):  # type: ignore[no-untyped-def]
    _fuzz(sources, tmp_path_factory, name, data)
