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
__all__ = ["get_encoding", "list_encodings", "list_encoding_names", "encoding_for_model",
           "encoding_name_for_model", "load", "Encoding", "ModelError", "__version__"]


def list_encoding_names() -> list[str]:
    """tiktoken's name for list_encodings()."""
    return list_encodings()


def __getattr__(name: str) -> object:
    if name in ("encoding_for_model", "encoding_name_for_model"):
        from . import model_names

        return getattr(model_names, name)
    if name == "Encoding":
        from .encoding import Encoding

        return Encoding
    if name == "ModelError":
        from ._ffi import ModelError

        return ModelError
    raise AttributeError(f"module 'edgetok' has no attribute {name!r}")
