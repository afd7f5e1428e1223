"""Token-budget operations against what a tiktoken user would do, in one run:

- count up to a limit (1,000 tokens) on 1 MB: edgetok count_till_limit vs len(tiktoken.encode)
- cut 1 MB into 512-token chunks: `edgetok chunk`'s algorithm vs tiktoken encode + decode
- count 1,000 random ranges of a 1 MB text: RangeCounter vs tiktoken on each slice
- count while appending 1 MB in 100-byte pieces: AppendCounter vs tiktoken re-encoding the
  last 2 KB (a cheap approximation a tiktoken user might try: not exact)
- append one run of random letters (no cut in it) a byte at a time, 100 KB and 200 KB: the
  time must double, not quadruple (tiktoken: exact would mean re-encoding all of it each time)

    python bench/budget.py
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import reference  # noqa: E402

import edgetok  # noqa: E402
from edgetok.budget import chunks  # noqa: E402


def timed(fn):  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    enc = edgetok.get_encoding("cl100k_base")
    tk = reference.tiktoken_encoding("cl100k_base")
    text = (reference.corpora()["english"] * 3)[:1_000_000]
    data = text.encode()
    rows = []
    rows.append(("count to 1,000 tokens (1 MB)", timed(lambda: enc.count_till_limit(text, 1000)),
                 timed(lambda: len(tk.encode_ordinary(text)) <= 1000)))

    def tk_chunks() -> None:
        ids = tk.encode_ordinary(text)
        for i in range(0, len(ids), 512):
            tk.decode(ids[i:i + 512])

    rows.append(("512-token chunks (1 MB)", timed(lambda: list(chunks(enc, data, 512))),
                 timed(tk_chunks)))
    rng = random.Random(1)
    spans = [(i, min(len(text), i + rng.randrange(1, 4000))) for i in
             (rng.randrange(len(text)) for _ in range(1000))]
    rc = enc.range_counter(text)
    rows.append(("1,000 range counts (1 MB text)",
                 timed(lambda: [rc.count(i, j) for i, j in spans]),
                 timed(lambda: [len(tk.encode_ordinary(text[i:j])) for i, j in spans])))
    rows.append(("  of which one-time pass", timed(lambda: enc.range_counter(text)), float("nan")))

    def append_edgetok() -> None:
        c = enc.counter()
        for i in range(0, len(data), 100):
            c.append(data[i:i + 100])

    def append_tiktoken() -> None:
        acc = ""
        for i in range(0, len(text), 100):
            acc = (acc + text[i:i + 100])[-2000:]
            len(tk.encode_ordinary(acc))

    rows.append(("append 1 MB in 100 B pieces", timed(append_edgetok), timed(append_tiktoken)))
    run = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(200_000)).encode()
    for size in (100_000, 200_000):
        def append_run(size: int = size) -> None:
            c = enc.counter()
            for i in range(size):
                c.append(run[i:i + 1])
            assert c.count == enc.count(run[:size].decode())

        rows.append((f"one {size // 1000} KB run, byte by byte", timed(append_run), float("nan")))
    o200k = edgetok.get_encoding("o200k_base")
    # runs that once made appending quadratic: split inside (whitespace to its last line
    # break; upper case to its last Lm/Lo letter), "a'" (no contraction, decided one character
    # later), a letter and a combining mark (one growing piece)
    for unit, name in (("\n ", "'\\n ' x N"), ("\u4e2dA", "'\u4e2dA' x N"), ("a'", "\"a'\" x N"),
                       ("a\u0301", "'a\\u0301' x N")):
        for size in (100_000, 200_000):
            split_run = (unit * size)[:size].encode()[:size]

            def append_split(split_run: bytes = split_run) -> None:
                c = o200k.counter()
                for i in range(len(split_run)):
                    c.append(split_run[i:i + 1])
                assert c.count == o200k.count(split_run.decode("utf-8", "ignore"))

            rows.append((f"o200k {name}, {size // 1000} KB, byte by byte", timed(append_split),
                         float("nan")))
    print(f"{'operation':<34}{'edgetok ms':>12}{'tiktoken ms':>13}{'ratio':>8}")
    for name, a, b in rows:
        print(f"{name:<34}{a * 1e3:>12.2f}{b * 1e3:>13.2f}{b / a:>7.1f}x")


if __name__ == "__main__":
    main()
