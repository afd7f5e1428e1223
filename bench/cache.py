"""Hit rates of the BPE workspace's piece cache (csrc/bpe/bpe.c: piece_ids), by simulation of
its geometry on the real pieces of each text: a first pass over the text (text never seen
before) and a second one (repeated text), for today's tables and the alternatives they were
chosen from. A miss costs a trie walk, and for a piece that is no single token a merge, so
"bytes merged" (the bytes of the pieces that miss, or that no table can hold) is what decides.

    python bench/cache.py

Tables: (slots, longest piece in bytes, most ids, ways, a hit moves the piece first[, shortest
piece]); a piece goes in the first that can hold it. Python's hash stands in for the C one (any
good hash gives the same rates; the huge table's is a hash of the bytes in C too)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]

import peers  # noqa: E402
import reference  # noqa: E402

import edgetok  # noqa: E402

GEOMETRIES = {
    "before: 8192 x (16 B, 3 ids)": [(8192, 16, 3, 1, False)],
    "16384 short 1-way, 2048 long": [(16384, 16, 3, 1, False), (2048, 32, 7, 2, False)],
    "16384 short 2-way, 2048 long": [(16384, 16, 3, 2, True), (2048, 32, 7, 2, True)],
    "16384 short 2-way, 4096 long 2-way, 256 huge": [
        (16384, 16, 3, 2, True), (4096, 32, 7, 2, True), (256, 256, 28, 1, False, 8)],
    "now: 16384 short, 4096 long 4-way, 512 huge": [
        (16384, 16, 3, 2, True), (4096, 32, 7, 4, True), (512, 256, 28, 4, True, 8)],
    "grown: 32768 short, 8192 long, 1024 huge": [
        (32768, 16, 3, 2, True), (8192, 32, 7, 4, True), (1024, 256, 28, 4, True, 8)],
}


def simulate(pieces: list[bytes], nids: dict[bytes, int],
             tables: list[tuple]) -> list[tuple[float, float]]:
    """[(hit rate, share of bytes merged)] for the first and the second pass."""
    sets: list[dict[int, list[bytes | None]]] = [{} for _ in tables]
    total = sum(map(len, pieces))
    out = []
    for _ in range(2):
        hits = merged = 0
        for p in pieces:
            n, k = len(p), nids[p]
            for (slots, key, most, ways, lru, *shortest), table in zip(tables, sets):
                if n <= key and k <= most and n >= (shortest or [1])[0]:
                    s = table.setdefault(hash(p) % (slots // ways), [None] * ways)
                    if p in s:
                        hits += 1
                        if lru:
                            s.remove(p)
                            s.insert(0, p)
                    else:
                        merged += n
                        s.insert(0, p)
                        s.pop()
                    break
            else:
                merged += n
        out.append((hits / len(pieces), merged / total))
    return out


def main() -> None:
    enc = edgetok.get_encoding("cl100k_base")
    tk = reference.tiktoken_encoding("cl100k_base")
    texts = dict(reference.corpora())
    man = peers.multilingual_man(1_000_000)
    if man:
        texts["multi (man)"] = man
    print(f"{'text':<14}{'tables':<44}{'unseen: hits':>13}{'merged':>8}{'repeated: hits':>16}{'merged':>8}")
    for name, text in texts.items():
        pieces = [p.encode() for p in enc.pretokenize(text)]
        nids = {p: len(tk._encode_single_piece(p)) for p in set(pieces)}
        for label, tables in GEOMETRIES.items():
            (h1, m1), (h2, m2) = simulate(pieces, nids, tables)
            print(f"{name:<14}{label:<44}{h1:>12.1%}{m1:>8.1%}{h2:>15.1%}{m2:>8.1%}")


if __name__ == "__main__":
    main()
