"""Which encodings exist and where their models are: built-in ones ship compiled in data/."""
from __future__ import annotations

import os
import _thread  # (threading imports functools and collections: start-up)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ._ffi import Model
    from .encoding import Encoding

# the built-in models' folder (os.path, not pathlib: pathlib imports re, fnmatch and urllib,
# a third of `import edgetok` on a bare interpreter; load() imports it when it runs)
DATA = os.path.join(os.path.dirname(__file__), "data")
_cache: dict[str, "Encoding"] = {}
_lock = _thread.allocate_lock()


# tiktoken's encodings that are a built-in model with other special tokens: their model
DERIVED = {"gpt2": "r50k_base", "p50k_edit": "p50k_base", "o200k_harmony": "o200k_base"}


def list_encodings() -> list[str]:
    """Names of the built-in encodings: the models shipped in the package's data/, and
    tiktoken's encodings made of one of them with other special tokens (DERIVED)."""
    try:
        names = {f[:-5] for f in os.listdir(DATA) if f.endswith(".etok")}
    except OSError:
        names = set()
    return sorted(names | {d for d, base in DERIVED.items() if base in names})


def _hugepages() -> bool:
    return os.environ.get("EDGETOK_HUGEPAGES", "") not in ("", "0")


def get_encoding(name: str) -> "Encoding":
    """The built-in encoding called name (cached; ValueError for an unknown name)."""
    enc = _cache.get(name)
    if enc is not None:
        return enc
    if name in DERIVED and os.path.exists(os.path.join(DATA, f"{DERIVED[name]}.etok")):
        from .encoding import Encoding
        from .model_names import derived_specials

        base = get_encoding(DERIVED[name])
        with _lock:
            if name not in _cache:
                enc = Encoding(name, base.model, derived_specials(name))
                enc._recipe = ("get", name)
                _cache[name] = enc
            return _cache[name]
    path = os.path.join(DATA, f"{name}.etok")
    if not name.replace("_", "").isalnum() or not os.path.exists(path):
        known = list_encodings()
        hint = "" if known else " (none: the package was built without its models; reinstall)"
        raise ValueError(f"Unknown encoding {name!r}. Plugins found: {known}{hint}")
    from ._ffi import Model
    from .encoding import Encoding

    with _lock:
        if name not in _cache:
            enc = Encoding(name, Model.open(path, hugepages=_hugepages()))
            enc._recipe = ("get", name)
            _cache[name] = enc
        return _cache[name]


def _cached(p: Path, options: str = "") -> Path | None:
    """Where the compiled form of source file p is kept: the cache, keyed on the file's path,
    size and modification time, the compile options, and this edgetok's version and installed
    compiler files (a reinstall recompiles; EDGETOK_NO_CACHE=1: None)."""
    if os.environ.get("EDGETOK_NO_CACHE", "") not in ("", "0"):
        return None
    from .cache import cached_key

    st = p.stat()
    return cached_key(f"{p.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0{options}")


CACHE_KEEP = 16  # compiled models kept in the cache; the least recently used go first
STALE_TMP = 600  # seconds after which a *.tmp in the cache is a failed write's leftover
# cache entries whose checksum this process has verified, by (device, inode, size): each is
# checked once per process, as it is first opened (the cache writes by rename, so a new
# entry is a new inode)
_verified: set[tuple[int, int, int]] = set()


def _prune(folder: Path) -> None:
    """Keeps the CACHE_KEEP most recently used compiled models (an entry is touched on use)
    and removes *.tmp files older than STALE_TMP seconds (writes that failed half-way)."""
    import time

    def mtime(q: Path) -> float:
        try:
            return q.stat().st_mtime
        except OSError:  # gone: pruned by another process
            return 0.0

    entries = sorted(folder.glob("*.etok"), key=mtime, reverse=True)
    stale = time.time() - STALE_TMP
    kept = {e.stem for e in entries[:CACHE_KEEP]}
    # metadata beside an entry that is gone (an old one's is written before the entry: keep it
    # while it is young, its entry may be on the way)
    metas = [m for m in folder.glob("*.json") if m.stem not in kept and mtime(m) < stale]
    for old in (entries[CACHE_KEEP:] + [e.with_suffix(".json") for e in entries[CACHE_KEEP:]]
                + metas + [t for t in folder.glob("*.tmp") if mtime(t) < stale]):
        try:
            old.unlink()
        except OSError:
            pass


def _open_cached(cached: Path) -> "Model | None":
    """The compiled model in cache entry cached, its checksum verified if this process has not
    done so yet; None when it is missing, damaged, or from another format."""
    from ._ffi import Model, ModelError

    try:
        st = cached.stat()
        key = (st.st_dev, st.st_ino, st.st_size)
        model = Model.open(str(cached), hugepages=_hugepages(), verify=key not in _verified)
    except (OSError, ModelError):
        return None
    _verified.add(key)
    try:
        os.utime(cached)  # most recently used: kept longest
    except OSError:
        pass
    return model


def load(path: str | os.PathLike[str], *, name: str | None = None,
         fairseq_ids: bool = False) -> "Encoding":
    """An Encoding for a model file: an .etok model, or a source compiled on first use and
    kept in the cache (~/.cache/edgetok/models; then mmapped like an .etok): a GGUF file or a
    tokenizer.json (byte-level BPE, SentencePiece from GGUF), a SentencePiece .model, or a
    tiktoken vocabulary (with the cl100k_base pattern, no special tokens). A folder holding
    tokenizer.json (save_pretrained's), or a hub id ("Qwen/Qwen2.5-7B-Instruct") found in the
    local Hugging Face cache, is that tokenizer.json (edgetok.hub; never a download).
    fairseq_ids=True: a SentencePiece .model with the ids Hugging Face's XLM-RoBERTa gives
    (<s> 0, <pad> 1, </s> 2, <unk> 3, every other piece one up, <mask> last)."""
    from pathlib import Path

    from ._ffi import Model
    from .encoding import Encoding

    p = Path(path)
    if not p.is_file():
        from .hub import resolve

        p, hub_name = resolve(path)
        name = name or hub_name
    meta: dict | None = {}  # type: ignore[type-arg]
    with open(p, "rb") as f:
        magic = f.read(8)
    if magic == b"EDGETOK\0":
        if fairseq_ids:
            raise ValueError(f"{p}: already compiled; fairseq_ids applies when compiling a "
                             "SentencePiece .model")
        model = Model.open(str(p), hugepages=_hugepages())
    else:
        cached = _cached(p, "fairseq" if fairseq_ids else "")
        model = _open_cached(cached) if cached is not None else None
        if model is not None:
            from .cache import read_meta

            assert cached is not None
            model.source = str(p)
            meta = read_meta(cached)
        if model is None or meta is None:
            # not cached, or a damaged entry: compile (again), replace the entry by rename
            from .compiler import compile_source

            meta = {}
            image = compile_source(p, fairseq_ids=fairseq_ids, meta=meta)
            model = Model.from_bytes(image, str(p))
            if cached is not None:
                from .cache import store

                store(cached, image, meta)
    enc = Encoding(name or p.name.split(".")[0], model)
    enc._conventions(meta)
    enc._recipe = ("load", str(p.absolute()), name, fairseq_ids, None)
    return enc
