"""Where compiled models are kept (~/.cache/edgetok/models): entries keyed on what they were
compiled from, written by rename. Imported only when a model is compiled or looked up."""
from __future__ import annotations

import os
from pathlib import Path


def cached_key(what: str) -> Path | None:
    """The cache entry for a compiled model keyed on what (with this edgetok's version and
    installed compiler files; EDGETOK_NO_CACHE=1: None)."""
    if os.environ.get("EDGETOK_NO_CACHE", "") not in ("", "0"):
        return None
    import hashlib

    from . import __version__
    from .fetch import cache_dir

    here = Path(__file__).parent
    tools = sorted(here.glob("_native*")) + [here / f for f in (
        "compiler.py", "hf.py", "spm.py", "gguf.py", "construct.py", "cache.py", "wordpiece.py",
        "pairs.py")]
    stamp = ",".join(str(t.stat().st_mtime_ns) for t in tools if t.exists())
    key = f"{what}\0{__version__}\0{stamp}"
    return cache_dir() / "models" / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".etok")


def meta_path(cached: Path) -> Path:
    """Where the entry's metadata is kept: what encoding needs beyond the model (a
    tokenizer.json's post-processor, a GGUF's BOS and EOS), as JSON beside it."""
    return cached.with_suffix(".json")


def read_meta(cached: Path) -> dict | None:  # type: ignore[type-arg]
    """The metadata stored with a cache entry; None when missing or damaged (compile again)."""
    import json

    try:
        meta = json.loads(meta_path(cached).read_bytes())
    except (OSError, ValueError):
        return None
    return meta if type(meta) is dict else None


def store(cached: Path, image: bytes, meta: dict | None = None) -> None:  # type: ignore[type-arg]
    """Writes a compiled model into cache entry cached, its metadata first (each by rename; a
    read-only or full cache only costs the next run a compile)."""
    import json

    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(meta or {}))
        tmp.replace(meta_path(cached))
        tmp.write_bytes(image)
        tmp.replace(cached)
        from .registry import _prune

        _prune(cached.parent)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
