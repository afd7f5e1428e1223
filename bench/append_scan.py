"""The appending counter against adversarial repetition: every unit of two (or three)
characters from a set of sixteen classes (letters of each case, Lm/Lo letters, a combining
mark, digits, whitespace, line breaks, apostrophes, punctuation, '/', emoji), repeated N and
4N times and appended two bytes at a time. Linear work takes 4x the time (quadratic: 16x);
the table lists the units whose time grew the most, and the worst growth per encoding.

    python bench/append_scan.py [--units 3] [--n 1000] [--encodings o200k_base cl100k_base r50k_base]
"""
from __future__ import annotations

import argparse
import itertools
import time

import edgetok

CLASSES = ["a", "A", "\u01c5", "\u02b0", "\u4e2d", "\u0301", "1", " ", "\n", "\t", "'", "!",
           "/", "\u3000", "s", "\U0001f600"]
SMALL = ["a", "A", "\u4e2d", "\u0301", "1", " ", "\n", "'", "!", "/", "s"]  # for triples


def grow(enc: "edgetok.Encoding", unit: str, n: int) -> float:
    """Seconds to append unit * n two bytes at a time (the better of two runs)."""
    data = (unit * n).encode()
    best = float("inf")
    for _ in range(2):
        c = enc.counter()
        t0 = time.perf_counter()
        for i in range(0, len(data), 2):
            c.append(data[i:i + 2])
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", type=int, choices=[2, 3], default=2, help="characters per unit")
    ap.add_argument("--n", type=int, default=1000, help="repetitions (then 4x as many)")
    ap.add_argument("--encodings", nargs="+", default=["o200k_base", "cl100k_base", "r50k_base"])
    args = ap.parse_args()
    alphabet = CLASSES if args.units == 2 else SMALL
    for name in args.encodings:
        enc = edgetok.get_encoding(name)
        rows = []
        for combo in itertools.product(alphabet, repeat=args.units):
            unit = "".join(combo)
            a, b = grow(enc, unit, args.n), grow(enc, unit, 4 * args.n)
            rows.append((b / a, unit, a, b))
        rows.sort(reverse=True)
        print(f"{name}: {len(rows)} units, worst growth {rows[0][0]:.1f}x for 4x the text")
        for ratio, unit, a, b in rows[:5]:
            print(f"  {unit!r:>16}  {a * 1e3:7.1f} ms -> {b * 1e3:7.1f} ms  {ratio:.1f}x")


if __name__ == "__main__":
    main()
