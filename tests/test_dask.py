"""Beyond one machine: an Encoding pickles as what rebuilds it, so a corpus tokenizes on an
existing engine. Here a dask.distributed LocalCluster with worker processes (the same code
runs on a real cluster) gives the ids and counts of one process."""
from __future__ import annotations

import json

import pytest

import edgetok
from test_hf import tokenizer_json, vocab  # noqa: F401 - vocab is a fixture


# a cluster of worker processes takes over 10 s to start and warm on two shared cores
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():  # type: ignore[no-untyped-def]
    distributed = pytest.importorskip(
        "dask.distributed", reason="dask[distributed] is in the test extra: pip install -e '.[test]'")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def documents(corpora: dict[str, str]) -> list[str]:
    text = "".join(corpora.values())
    return [text[i:i + 2000] for i in range(0, len(text), 2000)]


def test_local_cluster_same_ids(client, corpora):  # type: ignore[no-untyped-def]
    docs = documents(corpora)
    enc = edgetok.get_encoding("o200k_base")
    got = client.gather(client.map(enc.encode, docs))
    assert got == [enc.encode(d) for d in docs]
    # the workers are other processes: each rebuilt the encoding from its pickle
    pids = client.run(lambda: __import__("os").getpid())
    assert len(set(pids.values())) == 2 and __import__("os").getpid() not in pids.values()


def test_dask_bag_loaded_model(client, corpora, vocab, tmp_path):  # type: ignore[no-untyped-def]
    # a model loaded from a file (a tokenizer.json whose post-processor adds a BOS) travels
    # as its path; dask.bag counts and encodes the corpus as tokenizers does in one process
    import dask.bag as db
    from tokenizers import Tokenizer

    spec = json.loads(tokenizer_json(vocab["gpt-2"]))
    spec["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [], "special_tokens": {"<|endoftext|>": {
            "id": "<|endoftext|>", "ids": [50256], "tokens": ["<|endoftext|>"]}}}
    f = tmp_path / "tokenizer.json"
    f.write_text(json.dumps(spec))
    enc = edgetok.load(f)
    docs = documents(corpora)
    ref = [e.ids for e in Tokenizer.from_file(str(f)).encode_batch(docs)]
    bag = db.from_sequence(docs, npartitions=6)
    assert bag.map(enc.count).compute() == [len(ids) for ids in ref]
    assert bag.map(enc.count).sum().compute() == sum(map(len, ref))
    assert bag.map(enc.encode).compute() == ref
