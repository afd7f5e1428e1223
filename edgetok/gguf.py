"""Read the tokenizer metadata out of a GGUF file (llama.cpp's model format).

Only the key/value header is parsed (tensors are never touched); every length and count is
checked against the file size before it is used, so a damaged file raises ModelError.
"""
from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import Any

from ._ffi import ModelError

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
MAX_DEPTH = 8  # arrays of arrays nested deeper than this are refused (no tokenizer has any)
_MISSING = object()


class _Reader:
    def __init__(self, buf: Any, source: str) -> None:
        self.buf, self.pos, self.source = buf, 0, source

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise ModelError(f"{self.source}: truncated GGUF header at byte {self.pos}")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return bytes(b)

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> bytes:
        return self.take(self.scalar("<Q"))

    def value(self, vtype: int, want: bool, depth: int = 0) -> Any:
        if vtype in _SCALARS:
            return self.scalar(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype != _ARRAY:
            raise ModelError(f"{self.source}: unknown GGUF value type {vtype}")
        etype, n = self.scalar("<I"), self.scalar("<Q")
        if etype in _SCALARS:
            size = struct.calcsize(_SCALARS[etype])
            raw = self.take(n * size)
            return list(struct.unpack(f"<{n}{_SCALARS[etype][1]}", raw)) if want else None
        if etype == _STRING:
            out = []
            for _ in range(n):
                s = self.string()
                if want:
                    out.append(s)
            return out if want else None
        if n and etype == _ARRAY:
            if depth >= MAX_DEPTH:
                raise ModelError(f"{self.source}: GGUF arrays nested more than {MAX_DEPTH} deep")
            out = []
            for _ in range(n):
                v = self.value(_ARRAY, want, depth + 1)
                if want:
                    out.append(v)
            return out if want else None
        raise ModelError(f"{self.source}: unsupported GGUF array of type {etype}")


def read_metadata(path: str | Path, prefix: str | tuple[str, ...] = "tokenizer.") -> dict[str, Any]:
    """The GGUF key/value pairs whose key starts with prefix (or one of several; others are
    skipped unread), plus general.architecture and general.name when present."""
    with open(path, "rb") as f:
        try:
            buf: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # empty file
            buf = b""
    try:
        r = _Reader(buf, str(path))
        if r.take(4) != b"GGUF":
            raise ModelError(f"{path}: not a GGUF file")
        version = r.scalar("<I")
        if version not in (2, 3):
            raise ModelError(f"{path}: GGUF version {version} (2 and 3 are supported)")
        r.scalar("<Q")  # tensor count
        n_kv = r.scalar("<Q")
        out: dict[str, Any] = {}
        for _ in range(n_kv):
            key = r.string().decode("utf-8", "replace")
            want = key.startswith(prefix) or key in ("general.architecture", "general.name")
            val = r.value(r.scalar("<I"), want)
            if want:
                out[key] = val
        return out
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


# typed access to read_metadata's result: a value of another type is the file's fault

def _bad(source: str, key: str, what: str, got: Any) -> ModelError:
    return ModelError(f"{source}: GGUF key {key} is {type(got).__name__}, not {what}")


def string(md: dict[str, Any], key: str, source: str, default: Any = _MISSING) -> bytes:
    """A string value (raw bytes); ModelError when missing and there is no default."""
    v = md.get(key, default)
    if v is _MISSING:
        raise ModelError(f"{source}: GGUF key {key} is missing")
    if v is not default and type(v) is not bytes:
        raise _bad(source, key, "a string", v)
    return v  # type: ignore[no-any-return]


def integer(md: dict[str, Any], key: str, source: str, default: Any = None) -> Any:
    """An integer (or boolean) value, or default when missing."""
    v = md.get(key, default)
    if v is not default and type(v) not in (int, bool):
        raise _bad(source, key, "an integer", v)
    return v


def array(md: dict[str, Any], key: str, elem: type, source: str, n: int | None = None,
          required: bool = False) -> list[Any] | None:
    """An array of strings (elem bytes), integers (int) or numbers (float: integers are
    converted) of n elements if n is given; None when missing or empty, unless required."""
    v = md.get(key)
    if v is None or v == []:
        if required:
            raise ModelError(f"{source}: GGUF key {key} is missing or empty")
        return None
    if type(v) is not list:
        raise _bad(source, key, "an array", v)
    ok = (float, int) if elem is float else (int, bool) if elem is int else (elem,)
    for i, x in enumerate(v):
        if type(x) not in ok:
            raise ModelError(f"{source}: GGUF key {key}: element {i} is {type(x).__name__}, "
                             f"not {elem.__name__}")
    if n is not None and len(v) != n:
        raise ModelError(f"{source}: GGUF key {key} has {len(v)} elements for {n} tokens")
    return [float(x) for x in v] if elem is float else v


# llama.cpp's pre-tokenizers (tokenizer.ggml.pre) of byte-level BPE vocabularies that add a
# BOS by default (llama-vocab.cpp); the tokenizer.ggml.add_*_token keys override
_BPE_ADD_BOS = frozenset({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                          "midm-2.0", "lfm2", "jina-v5-nano", "tekken", "chameleon"})


def special_flags(md: dict[str, Any], source: str) -> dict[str, Any]:
    """{"bos": id or None, "eos": id or None, "add_bos": bool, "add_eos": bool}: the BOS and
    EOS the file declares and whether llama.cpp's tokenize with add_special adds them (its
    defaults by vocabulary type: SentencePiece BPE adds BOS, Unigram EOS, byte-level BPE BOS
    for the Llama-3 family; then tokenizer.ggml.add_bos_token / add_eos_token)."""
    kind = md.get("tokenizer.ggml.model", b"")
    pre = md.get("tokenizer.ggml.pre", b"")
    n = len(md.get("tokenizer.ggml.tokens") or [])
    if kind == b"llama":
        add_bos, add_eos = True, False
    elif kind == b"t5":
        add_bos, add_eos = False, True
    else:
        add_bos = isinstance(pre, bytes) and pre.decode("utf-8", "replace") in _BPE_ADD_BOS
        add_eos = False
    out: dict[str, Any] = {}
    for what, default in (("bos", add_bos), ("eos", add_eos)):
        i = integer(md, f"tokenizer.ggml.{what}_token_id", source)
        out[what] = int(i) if i is not None and 0 <= i < n else None
        flag = integer(md, f"tokenizer.ggml.add_{what}_token", source)
        out[f"add_{what}"] = bool(default if flag is None else flag)
    return out
