"""Pickling: every kind of Encoding travels as what rebuilds it (a name, a file, tiktoken's
constructor arguments), and works in process pools."""
from __future__ import annotations

import base64
import os
import copy
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import edgetok
import reference

DOCS = ["hello world", "a <|endoftext|> b", "我非常渴望与人工智能一起工作", "  x\n\n" * 50]


def _tiny_vocab(tmp_path: Path) -> Path:
    ranks = [bytes([b]) for b in range(256)] + [b"he", b"ll", b"hell", b"hello", b" w"]
    p = tmp_path / "tiny.tiktoken"
    p.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(ranks)))
    return p


def _encodings(tmp_path: Path) -> dict[str, edgetok.Encoding]:
    r50k = reference.tiktoken_encoding("r50k_base")
    return {
        "builtin": edgetok.get_encoding("cl100k_base"),
        "derived": edgetok.get_encoding("p50k_edit"),
        "loaded etok": edgetok.load(os.path.join(edgetok.registry.DATA, "r50k_base.etok"), name="mine"),
        "loaded source": edgetok.load(_tiny_vocab(tmp_path)),
        "constructed": edgetok.Encoding("custom_enc", pat_str=r50k._pat_str,
                                        mergeable_ranks=r50k._mergeable_ranks,
                                        special_tokens={"<|pickle|>": 100_000}),
        "constructed new": edgetok.Encoding("tiny", pat_str=r"\w+|\s+|[^\w\s]+",
                                            mergeable_ranks={bytes([b]): b for b in range(256)},
                                            special_tokens={"<|x|>": 300}),
    }


def test_pickle_round_trips(tmp_path: Path) -> None:
    for kind, enc in _encodings(tmp_path).items():
        data = pickle.dumps(enc)
        for other in (pickle.loads(data), copy.deepcopy(enc), copy.copy(enc)):
            assert other.name == enc.name, kind
            for d in DOCS:
                assert other.encode(d, allowed_special="all") == enc.encode(d, allowed_special="all")
            assert other._special_tokens == enc._special_tokens and other.n_vocab == enc.n_vocab
        if kind in ("builtin", "derived"):
            assert pickle.loads(data) is enc and len(data) < 200
        if kind in ("loaded etok", "constructed"):  # the file or the built-in's name, not bytes
            assert len(data) < 1000, (kind, len(data))


def test_pickle_like_tiktoken() -> None:
    """tiktoken's test_pickle, with tiktoken as the reference for the ids."""
    r50k = reference.tiktoken_encoding("r50k_base")
    enc = edgetok.Encoding("custom_enc", pat_str=r50k._pat_str, mergeable_ranks=r50k._mergeable_ranks,
                           special_tokens={"<|pickle|>": 100_000})
    new = pickle.loads(pickle.dumps(enc))
    assert new.encode("<|pickle|>", allowed_special="all") == [100_000]
    assert new.decode([100_000, 31373]) == "<|pickle|>hello"
    assert new.encode("hello world") == r50k.encode("hello world")


def test_memory_model_refuses_clearly() -> None:
    from edgetok._ffi import Model

    image = Path(edgetok.registry.DATA, "r50k_base.etok").read_bytes()
    enc = edgetok.Encoding("mem", Model.from_bytes(image))
    with pytest.raises(TypeError, match="from memory"):
        pickle.dumps(enc)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_process_pools(tmp_path: Path, method: str) -> None:
    encs = _encodings(tmp_path)
    ctx = multiprocessing.get_context(method)
    ref = reference.tiktoken_encoding("cl100k_base")
    docs = [d.replace("<|endoftext|>", "") for d in DOCS]
    with ctx.Pool(2) as pool:
        assert pool.map(encs["builtin"].encode, docs) == [ref.encode(d) for d in docs]
        assert pool.map(encs["loaded source"].encode, docs) == [encs["loaded source"].encode(d) for d in docs]
    with ProcessPoolExecutor(2, mp_context=ctx) as ex:
        enc = encs["constructed"]
        assert list(ex.map(enc.encode, docs)) == [enc.encode(d) for d in docs]
