"""edgetok: exact, fast tokenization for language models on small machines.

    >>> import edgetok
    >>> enc = edgetok.get_encoding("cl100k_base")
    >>> enc.encode("hello world")
    [15339, 1917]

A drop-in for tiktoken's get_encoding / Encoding; the C core does the work.
"""
from __future__ import annotations

from .registry import get_encoding, list_encodings, load

__version__ = "0.1.0"
__all__ = ["get_encoding", "list_encodings", "load", "Encoding", "ModelError", "__version__"]


def __getattr__(name: str) -> object:
    if name == "Encoding":
        from .encoding import Encoding

        return Encoding
    if name == "ModelError":
        from ._ffi import ModelError

        return ModelError
    raise AttributeError(f"module 'edgetok' has no attribute {name!r}")
