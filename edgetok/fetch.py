"""Files out of source distributions on PyPI, for the build (vocabularies) and the tests
(reference data): `pip download` of the sdist into a cache, then the members asked for.
Never imported at run time."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("EDGETOK_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "edgetok")
    return Path(base)


def _download(spec: str, dest: Path, binary: bool) -> list[Path]:
    """`pip download` of one package's sdist or wheel into dest (if none is there yet)."""
    dest.mkdir(parents=True, exist_ok=True)
    pattern = "*.whl" if binary else "*.tar.gz"
    got = list(dest.glob(pattern))
    if not got:
        kind = ["--only-binary" if binary else "--no-binary", ":all:"]
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            *kind, spec, "-d", str(dest)], capture_output=True, text=True)
        got = list(dest.glob(pattern))
        if r.returncode or not got:
            what = "wheel" if binary else "sdist"
            raise RuntimeError(f"cannot download the {spec} {what}: {r.stderr.strip()[-500:]}")
    return got


def _members(package: str, version: str, suffixes: list[str], sha256: dict[str, str] | None,
             binary: bool) -> dict[str, Path]:
    """The members of package==version's sdist (or wheel: binary) whose paths end with one of
    suffixes, extracted into the cache once; checked against sha256 (by suffix)."""
    root = cache_dir() / f"{package}-{version}"
    out = {s: root / "files" / s.replace("/", "_") for s in suffixes}
    if not all(p.exists() for p in out.values()):
        root.mkdir(parents=True, exist_ok=True)
        with open(root / ".lock", "wb") as lock:  # one process fetches (pytest -n: workers)
            _lock(lock)
            if not all(p.exists() for p in out.values()):
                _extract(package, version, root, out, binary)
    for s, p in out.items():
        if not p.exists():
            raise RuntimeError(f"{package}=={version}: no file ending in {s}")
        want = (sha256 or {}).get(s)
        if want and hashlib.sha256(p.read_bytes()).hexdigest() != want:
            raise RuntimeError(f"{p}: sha256 differs from {want}")
    return out


def _lock(f) -> None:  # type: ignore[no-untyped-def]
    """Waits for an exclusive lock on the open file f (released when f is closed)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: one process at a time is the caller's business
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)


def _extract(package: str, version: str, root: Path, out: dict[str, Path], binary: bool) -> None:
    """Downloads the archive and writes each member wanted in out (by suffix) atomically."""
    archives = _download(f"{package}=={version}", root / ("wheel" if binary else "sdist"), binary)
    (root / "files").mkdir(exist_ok=True)
    for name, read in _entries(archives[0], binary):
        for s in out:
            if name.endswith("/" + s):
                tmp = out[s].with_suffix(f".{os.getpid()}")
                tmp.write_bytes(read())
                tmp.replace(out[s])
    if binary:  # a wheel may be large (model weights): keep only the members
        for a in archives:
            a.unlink()


def _entries(archive: Path, wheel: bool):  # type: ignore[no-untyped-def]
    """(name, function reading its bytes) for each file of a tar.gz or a wheel (zip)."""
    if wheel:
        import zipfile

        z = zipfile.ZipFile(archive)
        return [(n, lambda n=n: z.read(n)) for n in z.namelist()]
    tar = tarfile.open(archive)
    return [(m.name, lambda m=m: tar.extractfile(m).read())  # type: ignore[union-attr]
            for m in tar if m.isfile()]


def sdist_members(package: str, version: str, suffixes: list[str],
                  sha256: dict[str, str] | None = None) -> dict[str, Path]:
    """The members of package==version's sdist whose paths end with one of suffixes, extracted
    into the cache (downloaded once). sha256 maps a suffix to the hash its file must have.
    Raises RuntimeError when the sdist cannot be had or a member is missing or altered."""
    return _members(package, version, suffixes, sha256, False)


def wheel_members(package: str, version: str, suffixes: list[str]) -> dict[str, Path]:
    """The members of package==version's wheel (pure Python: any platform) whose paths end
    with one of suffixes, extracted into the cache (downloaded once, then deleted: only the
    members are kept). Raises RuntimeError as sdist_members does."""
    return _members(package, version, suffixes, None, True)
