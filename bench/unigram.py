"""SentencePiece models: per-encode latency, edgetok vs the `sentencepiece` package, side by
side, on a Unigram model trained here with sentencepiece's trainer on real text (6k pieces by
default: what the corpus supports), or on XLM-R's 250k Unigram or Llama-2's 32k BPE vocabulary
from llama.cpp's vocab GGUFs (--gguf; sentencepiece gets a ModelProto of the same data), for
inputs of about 128, 512, 1k, 4k and 16k tokens. Checks identical ids first.

    python bench/unigram.py [--vocab 8000] [--model path.model] [--gguf xlmr|llama2] [--block 10]
                            [--distinct]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
os.environ.setdefault("EDGETOK_NO_CACHE", "1")  # throwaway model files: keep them out of the cache
import reference  # noqa: E402

import edgetok  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, default=6000)
    ap.add_argument("--model", help="an existing .model instead of training one")
    ap.add_argument("--block", type=int, default=1,
                    help="calls in a row per contender (1: strictly alternating, so each call "
                         "finds its caches as the other libraries left them; 10: warm, as in an "
                         "application that uses one tokenizer)")
    ap.add_argument("--distinct", action="store_true",
                    help="each round a different window of the corpus (and edgetok starting "
                         "with an empty word cache): text it has not seen, rather than one "
                         "sample again and again")
    ap.add_argument("--gguf", choices=["xlmr", "llama2"],
                    help="XLM-R's 250k Unigram or Llama-2's 32k BPE vocabulary (fetched once)")
    args = ap.parse_args()
    import sentencepiece as spm

    gguf = None
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
    contenders = {"sentencepiece": sp.encode, "edgetok": enc.encode}
    if args.gguf == "xlmr":
        # Hugging Face tokenizers' Unigram with XLM-R's tokenizer.json normaliser: the same ids
        # as sentencepiece on text whose whitespace is single spaces, so the samples are that
        contenders["tokenizers"] = hf_unigram(gguf)
        text = " ".join(text.split())
    print(f"model: {path} ({args.vocab if not args.model else '?'} pieces), edgetok model "
          f"memory: {enc.model.backing}; per encode, microseconds, p50 / p99")
    names = list(contenders)
    print(f"{'tokens':>8}{'bytes':>8}" + "".join(f"{n:>22}" for n in names) + "   edgetok speed-up")
    for target in (128, 512, 1024, 4096, 16384):
        # a slice of real text with about `target` tokens
        lo, hi = 1, len(text)
        while lo < hi:
            mid = (lo + hi) // 2
            if len(sp.encode(text[:mid])) < target:
                lo = mid + 1
            else:
                hi = mid
        runs = max(20, 20000 // target)
        rounds = max(1, runs // args.block)
        if args.distinct:  # a new window of the corpus each round, cut at a space
            step = max(1, (len(text) - lo) // rounds)
            samples = []
            for r in range(rounds):
                at = text.find(" ", r * step) + 1 if r else 0
                samples.append(text[at:at + lo].strip())  # (tokenizers keeps a last space)
        else:
            samples = [text[:lo]]
        # tokenizers' Unigram sums scores in double precision and sentencepiece in single, so
        # where two paths nearly tie (long runs of '-', say) they can differ: such windows go
        kept = []
        for sample in samples:
            want = sp.encode(sample)
            assert enc.encode(sample) == want, "edgetok differs from sentencepiece"
            if all(fn(sample) == want for fn in contenders.values()):
                kept.append(sample)
        assert kept, "every sample differs between sentencepiece and tokenizers"
        samples = kept
        sample = samples[0]
        if args.distinct:  # start from an empty word cache, as a new process would
            enc = edgetok.load(path)
            contenders["edgetok"] = enc.encode
        ts: dict[str, list[float]] = {n: [] for n in names}
        for r in range(rounds):
            sample = samples[r % len(samples)]
            for k, fn in contenders.items():
                for _ in range(args.block):
                    t0 = time.perf_counter()
                    fn(sample)
                    ts[k].append(time.perf_counter() - t0)
        q = {k: (statistics.median(v) * 1e6, statistics.quantiles(v, n=100)[98] * 1e6) for k, v in ts.items()}
        ups = ", ".join(f"{q[n][0] / q['edgetok'][0]:.2f}x {n}" for n in names if n != "edgetok")
        print(f"{target:>8}{len(sample.encode()):>8}"
              + "".join(f"{q[n][0]:>13.1f} / {q[n][1]:>6.1f}" for n in names) + f"   {ups}")
    # huge pages: the same model as an .etok file, mmapped, with and without EDGETOK_HUGEPAGES
    from edgetok._ffi import Model
    from edgetok.compiler import compile_source
    from edgetok.encoding import Encoding

    etok = Path(tempfile.mkdtemp()) / "m.etok"
    etok.write_bytes(compile_source(path))
    sample = text[:60000]
    for huge in (False, True):
        e = Encoding("m", Model.open(str(etok), hugepages=huge))
        assert e.encode(sample) == sp.encode(sample)
        ts = []
        for _ in range(30):
            t0 = time.perf_counter()
            e.encode(sample)
            ts.append(time.perf_counter() - t0)
        print(f"60k characters, model {'with' if huge else 'without'} huge pages "
              f"({e.model.backing}): p50 {statistics.median(ts) * 1e6:.0f} us")


def hf_unigram(gguf: Path):  # type: ignore[no-untyped-def]
    """A tokenizers.Tokenizer for the GGUF's Unigram vocabulary, set up as XLM-R's
    tokenizer.json: the precompiled charsmap, runs of spaces to one, Metaspace."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    from edgetok.gguf import read_metadata

    md = read_metadata(gguf)
    vocab = [(t.decode(), s) for t, s in zip(md["tokenizer.ggml.tokens"], md["tokenizer.ggml.scores"])]
    tok = Tokenizer(models.Unigram(vocab, unk_id=md["tokenizer.ggml.unknown_token_id"],
                                   byte_fallback=False))
    charsmap = bytes(x & 0xFF for x in md["tokenizer.ggml.precompiled_charsmap"])
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    return lambda t: tok.encode(t, add_special_tokens=False).ids


if __name__ == "__main__":
    main()
