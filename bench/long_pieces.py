"""Encode time of one long piece (no pretokenizer cuts), growing from 1 KB to 1 MB: letters,
punctuation, digits, multi-byte letters, random letters; edgetok vs tiktoken vs quicktok-v1,
side by side. A linear encoder's time grows 10x per row.

    python bench/long_pieces.py [--max 1000000]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import reference  # noqa: E402

import edgetok  # noqa: E402


def texts(n: int) -> dict[str, str]:
    rng = random.Random(n)
    return {
        "a" * 3: "a" * n,
        "letters": "".join(rng.choice("etaoinshrdlu") for _ in range(n)),
        "=====": "=" * n,
        "punct": "".join(rng.choice("!#$%&()*+,-./:;<=>?@[]^_{|}~") for _ in range(n)),
        "digits": "7" * n,
        "\u00e9\u4e2d": "".join(rng.choice("\u00e9\u00fc\u4e2d\u6587\u0436") for _ in range(n // 2)),
        "base64": "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") for _ in range(n)),
    }


def best(fn, x: str, budget: float = 1.0) -> float:  # type: ignore[no-untyped-def]
    t_end, b = time.perf_counter() + budget, float("inf")
    for _ in range(50):
        t0 = time.perf_counter()
        fn(x)
        b = min(b, time.perf_counter() - t0)
        if time.perf_counter() > t_end:
            break
    return b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max", type=int, default=1_000_000)
    args = ap.parse_args()
    enc = edgetok.get_encoding("cl100k_base")
    tk = reference.tiktoken_encoding("cl100k_base")
    contenders = {"edgetok": enc.encode_ordinary, "tiktoken": tk.encode_ordinary}
    try:
        import quicktok

        contenders["quicktok"] = quicktok.get_encoding("cl100k_base").encode_ordinary
    except Exception as e:  # not installed, or another package of that name (PyPI's 0.2)
        print(f"quicktok-v1 unavailable: {e}", file=sys.stderr)
    print(f"{'input':<10}{'bytes':>9}" + "".join(f"{k + ' ms':>14}" for k in contenders))
    n = 1000
    while n <= args.max:
        for kind, text in texts(n).items():
            want = tk.encode_ordinary(text) if n <= 100_000 else None
            row = []
            for name, fn in contenders.items():
                if want is not None:
                    assert fn(text) == want, (name, kind, n)
                row.append(best(fn, text) * 1e3)
            print(f"{kind:<10}{len(text.encode()):>9}" + "".join(f"{x:>14.2f}" for x in row))
        n *= 10


if __name__ == "__main__":
    main()
