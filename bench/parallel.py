"""Batch and single-text parallelism, side by side in one run:

- encode_batch / count_batch of 4 KB documents with 1, 2 and all threads: edgetok vs tiktoken
  (and HF tokenizers' encode_batch when the `tokenizers` package and a cl100k tokenizer.json
  are available: not here, so it is left out)
- tiny batches (10-byte strings): the cost of thread hand-off
- one large text: encode_parallel / count_parallel vs the sequential calls

    python bench/parallel.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import reference  # noqa: E402

import edgetok  # noqa: E402
from edgetok.parallel import cores  # noqa: E402


def best(fn, rounds: int = 5) -> float:  # type: ignore[no-untyped-def]
    b = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t0)
    return b


def main() -> None:
    enc = edgetok.get_encoding("cl100k_base")
    tk = reference.tiktoken_encoding("cl100k_base")
    c = reference.corpora()
    text = (c["english"] + c["code"] + c["multilingual"]) * 2
    mb = len(text.encode()) / 1e6
    docs = [text[i:i + 4000] for i in range(0, len(text), 4000)]
    assert enc.encode_ordinary_batch(docs) == tk.encode_ordinary_batch(docs)
    print(f"{cores()} cores; {len(docs)} documents of 4 KB ({mb:.1f} MB)")
    print(f"{'threads':<10}{'edgetok encode':>16}{'edgetok count':>15}{'tiktoken encode':>17}   MB/s")
    for n in sorted({1, 2, cores()}):
        a = best(lambda: enc.encode_ordinary_batch(docs, num_threads=n))
        b = best(lambda: enc.count_batch(docs, num_threads=n))
        t = best(lambda: tk.encode_ordinary_batch(docs, num_threads=n))
        print(f"{n:<10}{mb / a:>16.1f}{mb / b:>15.1f}{mb / t:>17.1f}")
    tiny = ["hello there"] * 200
    a = best(lambda: enc.encode_ordinary_batch(tiny), 50)
    t = best(lambda: tk.encode_ordinary_batch(tiny), 50)
    print(f"200 strings of 11 bytes: edgetok {a * 1e6:.0f} us, tiktoken {t * 1e6:.0f} us")
    assert enc.encode_parallel(text) == enc.encode_ordinary(text)
    s1, p1 = best(lambda: enc.encode_ordinary(text)), best(lambda: enc.encode_parallel(text))
    s2, p2 = best(lambda: enc.count(text)), best(lambda: enc.count_parallel(text))
    print(f"one {mb:.1f} MB text: encode {mb / s1:.0f} -> {mb / p1:.0f} MB/s ({s1 / p1:.2f}x), "
          f"count {mb / s2:.0f} -> {mb / p2:.0f} MB/s ({s2 / p2:.2f}x)")


if __name__ == "__main__":
    main()
