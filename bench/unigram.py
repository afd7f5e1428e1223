"""SentencePiece models: per-encode latency, edgetok vs the `sentencepiece` package, side by
side, on a Unigram model trained here with sentencepiece's trainer on real text (6k pieces by
default: what the corpus supports), or on XLM-R's 250k Unigram or Llama-2's 32k BPE vocabulary
from llama.cpp's vocab GGUFs (--gguf; sentencepiece gets a ModelProto of the same data), for
inputs of about 128, 512, 1k, 4k and 16k tokens. Checks identical ids first.

    python bench/unigram.py [--vocab 8000] [--model path.model] [--gguf xlmr|llama2]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import reference  # noqa: E402

import edgetok  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, default=6000)
    ap.add_argument("--model", help="an existing .model instead of training one")
    ap.add_argument("--gguf", choices=["xlmr", "llama2"],
                    help="XLM-R's 250k Unigram or Llama-2's 32k BPE vocabulary (fetched once)")
    args = ap.parse_args()
    import sentencepiece as spm

    if args.gguf:
        from edgetok.fetch import sdist_members

        import test_hf

        name = {"xlmr": test_hf.XLMR, "llama2": "llama-spm"}[args.gguf]
        member = f"models/ggml-vocab-{name}.gguf"
        gguf = sdist_members(*test_hf.LLAMA_CPP, [member])[member]
        args.model = str(Path(tempfile.mkdtemp()) / f"{name}.model")
        Path(args.model).write_bytes(reference.sentencepiece_proto_from_gguf(str(gguf)))

    c = reference.corpora()
    text = c["english"] + c["multilingual"]
    path = args.model
    if not path:
        d = tempfile.mkdtemp()
        Path(d, "train.txt").write_text(text)
        spm.SentencePieceTrainer.train(input=f"{d}/train.txt", model_prefix=f"{d}/m",
                                       vocab_size=args.vocab, model_type="unigram",
                                       byte_fallback=True, minloglevel=2)
        path = f"{d}/m.model"
    sp = spm.SentencePieceProcessor(model_file=path)
    enc = edgetok.load(path)
    print(f"model: {path} ({args.vocab if not args.model else '?'} pieces), edgetok model memory: {enc.model.backing}")
    print(f"{'tokens':>8}{'bytes':>9}{'sp p50 us':>12}{'sp p99':>9}{'edgetok p50':>13}{'p99':>9}{'speed-up':>10}")
    for target in (128, 512, 1024, 4096, 16384):
        # a slice of real text with about `target` tokens
        lo, hi = 1, len(text)
        while lo < hi:
            mid = (lo + hi) // 2
            if len(sp.encode(text[:mid])) < target:
                lo = mid + 1
            else:
                hi = mid
        sample = text[:lo]
        assert enc.encode(sample) == sp.encode(sample)
        runs = max(20, 20000 // target)
        ts: dict[str, list[float]] = {"sp": [], "et": []}
        for _ in range(runs):
            for k, fn in (("sp", sp.encode), ("et", enc.encode)):
                t0 = time.perf_counter()
                fn(sample)
                ts[k].append(time.perf_counter() - t0)
        q = {k: (statistics.median(v) * 1e6, statistics.quantiles(v, n=100)[98] * 1e6) for k, v in ts.items()}
        print(f"{target:>8}{len(sample.encode()):>9}{q['sp'][0]:>12.1f}{q['sp'][1]:>9.1f}"
              f"{q['et'][0]:>13.1f}{q['et'][1]:>9.1f}{q['sp'][0] / q['et'][0]:>9.2f}x")


if __name__ == "__main__":
    main()
