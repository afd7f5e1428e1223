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
        "compiler.py", "hf.py", "spm.py", "gguf.py", "construct.py", "cache.py")]
    stamp = ",".join(str(t.stat().st_mtime_ns) for t in tools if t.exists())
    key = f"{what}\0{__version__}\0{stamp}"
    return cache_dir() / "models" / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".etok")


def store(cached: Path, image: bytes) -> None:
    """Writes a compiled model into cache entry cached (by rename; a read-only or full cache
    only costs the next run a compile)."""
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(image)
        tmp.replace(cached)
        from .registry import _prune

        _prune(cached.parent)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
