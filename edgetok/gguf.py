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

    def value(self, vtype: int, want: bool) -> Any:
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
            return [self.value(_ARRAY, want) for _ in range(n)] if want else None
        raise ModelError(f"{self.source}: unsupported GGUF array of type {etype}")


def read_metadata(path: str | Path, prefix: str = "tokenizer.") -> dict[str, Any]:
    """The GGUF key/value pairs whose key starts with prefix (others are skipped unread),
    plus general.architecture and general.name when present."""
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
