"""Which encodings exist and where their models are: built-in ones ship compiled in data/."""
from __future__ import annotations

import os
import threading
from pathlib import Path
TYPE_CHECKING = False

if TYPE_CHECKING:
    from .encoding import Encoding

DATA = Path(__file__).parent / "data"
_cache: dict[str, "Encoding"] = {}
_lock = threading.Lock()


def list_encodings() -> list[str]:
    """Names of the built-in encodings: the models shipped in the package's data/."""
    return sorted(p.name[:-5] for p in DATA.glob("*.etok"))


def _hugepages() -> bool:
    return os.environ.get("EDGETOK_HUGEPAGES", "") not in ("", "0")


def get_encoding(name: str) -> "Encoding":
    """The built-in encoding called name (cached; ValueError for an unknown name)."""
    enc = _cache.get(name)
    if enc is not None:
        return enc
    path = DATA / f"{name}.etok"
    if not name.replace("_", "").isalnum() or not path.exists():
        known = list_encodings()
        hint = "" if known else " (none: the package was built without its models; reinstall)"
        raise ValueError(f"Unknown encoding {name!r}. Plugins found: {known}{hint}")
    from ._ffi import Model
    from .encoding import Encoding

    with _lock:
        if name not in _cache:
            _cache[name] = Encoding(name, Model.open(str(path), hugepages=_hugepages()))
        return _cache[name]


def load(path: str | os.PathLike[str], *, name: str | None = None) -> "Encoding":
    """An Encoding for a model file: an .etok model, or compiled in memory: a GGUF file or a
    tokenizer.json (byte-level BPE), a SentencePiece .model (Unigram), or a tiktoken
    vocabulary (with the cl100k_base pattern, no special tokens)."""
    from ._ffi import Model
    from .encoding import Encoding

    p = Path(path)
    with open(p, "rb") as f:
        magic = f.read(8)
    if magic == b"EDGETOK\0":
        model = Model.open(str(p), hugepages=_hugepages())
    else:
        from .compiler import compile_source

        model = Model.from_bytes(compile_source(p), str(p))
    return Encoding(name or p.name.split(".")[0], model)
