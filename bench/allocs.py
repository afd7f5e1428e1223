"""Heap allocations per encode in the C core, counted by valgrind: csrc/tools/etok encodes K and
then 2K lines of real text (one et_encode_batch call, each line encoded on its own), and the
difference in valgrind's "total heap usage" over K is the allocations per encode (the driver's
own buffers do not grow with the number of lines). For cl100k_base, XLM-R's 250k Unigram and
Llama-2's SentencePiece BPE (from llama.cpp's vocab GGUFs, fetched once).

    python bench/allocs.py [--lines 500]
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import reference  # noqa: E402

import edgetok  # noqa: E402

SOURCES = ["csrc/tools/etok.c", *reference.core_sources()]


def heap_allocs(exe: Path, model: Path, text: Path) -> int:
    p = subprocess.run(["valgrind", str(exe), "lines", str(model), str(text)],
                       capture_output=True, text=True, check=True)
    m = re.search(r"total heap usage: ([\d,]+) allocs", p.stderr)
    assert m, p.stderr[-2000:]
    return int(m.group(1).replace(",", ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=500)
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("valgrind is needed (apt-get install valgrind)")
    from edgetok.compiler import compile_source
    from edgetok.fetch import sdist_members

    import test_hf

    tmp = Path(tempfile.mkdtemp())
    exe = tmp / "etok"
    subprocess.run(["gcc", "-std=c11", "-O2", "-Icsrc/include", "-Icsrc", *SOURCES, "-o", str(exe)],
                   cwd=ROOT, check=True)
    c = reference.corpora()
    lines = [x for x in (c["english"] + c["multilingual"]).splitlines() if x.strip()]
    k = args.lines
    one, two = tmp / "k.txt", tmp / "2k.txt"
    one.write_text("\n".join(lines[:k]))
    two.write_text("\n".join(lines[:2 * k]))
    models = {"cl100k_base": Path(edgetok.get_encoding("cl100k_base").model.source)}
    for label, name in [("XLM-R 250k Unigram", test_hf.XLMR), ("Llama-2 SentencePiece BPE", "llama-spm")]:
        member = f"models/ggml-vocab-{name}.gguf"
        gguf = sdist_members(*test_hf.LLAMA_CPP, [member])[member]
        models[label] = tmp / f"{name}.etok"
        models[label].write_bytes(compile_source(gguf))
    print(f"{'model':<28}{'allocs, ' + str(k) + ' lines':>20}{'allocs, ' + str(2 * k) + ' lines':>20}"
          f"{'per encode':>12}")
    for label, model in models.items():
        a, b = heap_allocs(exe, model, one), heap_allocs(exe, model, two)
        print(f"{label:<28}{a:>20}{b:>20}{(b - a) / k:>12.2f}")


if __name__ == "__main__":
    main()
