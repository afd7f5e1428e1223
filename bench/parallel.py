"""Batch and single-text parallelism, side by side in one run:

- batches of 4 KB documents, per text: edgetok's encode_ordinary_batch, encode_batch,
  count_batch and encode_batch_flat on 1, 2 and all threads, and how 1 -> 2 threads scales,
  in blocks of --warm + 1 calls of one function on one thread count, as a program that keeps
  its thread count makes them (steady: the block's last call; after the switch: its first).
  Each thread keeps a piece cache of its own, grown for the batch (262,144 slots, 13.6 MB, for
  2 MB of documents), and calls on one thread push the helper's out of the shared L3: traced
  per chunk on the Python stdlib, the helper encoded at 540 MB/s against the calling thread's
  850 in the second call on 2 threads after calls on one, and both at 870-900 from the fourth
  on (count_batch 2.0x one thread's speed),
  then the peers' batch APIs on all cores (bench/peers.py: tiktoken's encode_ordinary_batch,
  fastokens' encode_batch_flat, gigatoken's encode_batch, Hugging Face tokenizers'
  encode_batch), each checked for tiktoken's ids first
- every timed call is given fresh copies of the documents (made outside the timing): a str
  that has been through tiktoken or another Rust peer (PyUnicode_AsUTF8AndSize) keeps a UTF-8
  copy of itself, which a later call reads instead of encoding the text, as documents just
  read from a file or a socket never have
- tiny batches (11-byte strings): the cost of the call
- one large text: encode_parallel / count_parallel vs the sequential calls

    python bench/parallel.py [--rounds 5] [--warm 3] [--peers fastokens,gigatoken,tokenizers]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]

import peers as peer_mod  # noqa: E402
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


def fresh(docs: list[str]) -> list[str]:
    """New str objects equal to docs, none holding a UTF-8 copy of itself (see above)."""
    return [d.encode().decode() for d in docs]


def best_fresh(fn, docs: list[str], rounds: int) -> float:  # type: ignore[no-untyped-def]
    """The best time of fn(copy) over rounds calls, each on a fresh copy of docs."""
    b = float("inf")
    for _ in range(rounds):
        d = fresh(docs)
        t0 = time.perf_counter()
        fn(d)
        b = min(b, time.perf_counter() - t0)
    return b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warm", type=int, default=3,
                    help="calls before the steady one, in each block of one thread count")
    ap.add_argument("--peers", default="fastokens,gigatoken,tokenizers")
    ap.add_argument("--size", type=int, default=4000, help="characters per document")
    args = ap.parse_args()
    enc = edgetok.get_encoding("cl100k_base")
    tk = reference.tiktoken_encoding("cl100k_base")
    corpora = dict(reference.corpora())
    man = peer_mod.multilingual_man()
    if man:
        corpora["multi (man)"] = man
    notes: list[str] = []
    peers = peer_mod.load(tuple(filter(None, args.peers.split(","))), notes)
    n_all = cores()
    threads = sorted({1, 2, n_all})
    print(f"{n_all} cores; documents of {args.size} characters; MB/s (best of {args.rounds})")
    for kind, text in corpora.items():
        if len(text) < 2_000_000:
            text = text * (2_000_000 // len(text) + 1)
        docs = [text[i:i + args.size] for i in range(0, len(text), args.size)]
        mb = sum(len(d.encode()) for d in docs) / 1e6
        want = tk.encode_ordinary_batch(docs, num_threads=n_all)
        assert enc.encode_ordinary_batch(docs) == want
        assert enc.count_batch(docs) == [len(w) for w in want]
        ids, offs = enc.encode_batch_flat(docs)
        assert all(ids[offs[i]:offs[i + 1]].tolist() == w for i, w in enumerate(want))
        ok = peer_mod.check(peers, {}, notes, docs)
        print(f"\n{kind}: {len(docs)} documents, {mb:.1f} MB")
        ours = {"encode_ordinary_batch": lambda d, n: enc.encode_ordinary_batch(d, num_threads=n),
                "encode_batch": lambda d, n: enc.encode_batch(d, num_threads=n),
                "count_batch": lambda d, n: enc.count_batch(d, num_threads=n),
                "encode_batch_flat": lambda d, n: enc.encode_batch_flat(d, num_threads=n)}
        res: dict[str, dict[int, float]] = {k: {} for k in ours}  # steady
        first: dict[str, dict[int, float]] = {k: {} for k in ours}  # after the switch
        for r in range(args.rounds):  # rounds interleave everything: drift hits all alike
            for k, fn in ours.items():
                for n in threads:
                    for c in range(args.warm + 1):  # a block (see the docstring)
                        d = fresh(docs)
                        t0 = time.perf_counter()
                        fn(d, n)
                        el = time.perf_counter() - t0
                        if c == 0:
                            first[k][n] = min(first[k].get(n, el), el)
                        if c == args.warm:
                            res[k][n] = min(res[k].get(n, el), el)
        print(f"  {'edgetok':<28}" + "".join(f"{f'{n} thr':>9}" for n in threads)
              + "   1 -> 2 threads (after the switch)")
        for k in ours:
            print(f"  {k:<28}" + "".join(f"{mb / res[k][n]:>9.0f}" for n in threads)
                  + f"   {res[k][1] / res[k][2]:.2f}x ({first[k][1] / first[k][2]:.2f}x)")
        flat = res["encode_batch_flat"][n_all]
        for p in ok:
            sec = best_fresh(p["batch"], docs, args.rounds)
            print(f"  {p['name'] + ' ' + p['version']:<28}{mb / sec:>9.0f} on all cores"
                  f"   (edgetok encode_batch_flat {sec / flat:.2f}x, encode_ordinary_batch "
                  f"{sec / res['encode_ordinary_batch'][n_all]:.2f}x)")
    tiny = ["hello there"] * 200
    a = best(lambda: enc.encode_ordinary_batch(tiny), 50)
    t = best(lambda: tk.encode_ordinary_batch(tiny), 50)
    print(f"\n200 strings of 11 bytes: edgetok {a * 1e6:.0f} us, tiktoken {t * 1e6:.0f} us")
    text = (corpora["english"] + corpora["code"] + corpora["multilingual"]) * 2
    mb = len(text.encode()) / 1e6
    assert enc.encode_parallel(text) == enc.encode_ordinary(text)
    s1, p1 = best(lambda: enc.encode_ordinary(text)), best(lambda: enc.encode_parallel(text))
    s2, p2 = best(lambda: enc.count(text)), best(lambda: enc.count_parallel(text))
    print(f"one {mb:.1f} MB text: encode {mb / s1:.0f} -> {mb / p1:.0f} MB/s ({s1 / p1:.2f}x), "
          f"count {mb / s2:.0f} -> {mb / p2:.0f} MB/s ({s2 / p2:.2f}x)")
    for n in notes:
        print("note:", n)


if __name__ == "__main__":
    main()
