"""Real sample text for `edgetok bench`: English prose, code, non-Latin scripts.

At build time the texts are cut from files every CPython installation has (the pydoc topics,
the standard library, the CJK codec tests) and shipped, gzipped, in data/, so that every board
measures the same bytes. Tests and bench/ read the same sources at full size.
"""
from __future__ import annotations

import gzip
import sysconfig
from pathlib import Path

DATA = Path(__file__).parent / "data"
KINDS = ("english", "code", "multilingual")
SHIPPED_CHARS = 200_000


def _stdlib() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def english() -> str:
    """English prose: pydoc's help topics (the Python language reference), ~0.46 MB."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


def code(limit: int = 1 << 20) -> str:
    """Python source from the standard library, about `limit` characters."""
    parts, n = [], 0
    for p in sorted(_stdlib().glob("*.py")):
        t = p.read_text("utf-8", "replace")
        parts.append(t)
        n += len(t)
        if n >= limit:
            break
    return "".join(parts)


def multilingual() -> str:
    """Non-Latin real text: the Chinese, Japanese and Korean texts of CPython's codec tests,
    then the string literals of its unicode tests (Cyrillic, Greek, Arabic, Devanagari...).
    Empty where the Python installation has no test package."""
    test = _stdlib() / "test"
    parts = [p.read_text("utf-8") for p in sorted((test / "cjkencodings").glob("*-utf8.txt"))]
    for name in ("test_codecs.py", "test_unicodedata.py", "test_str.py", "test_ucn.py",
                 "test_unicode_identifiers.py", "test_re.py"):
        p = test / name
        if p.exists():
            parts.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(parts)


def write_shipped(out_dir: Path) -> list[Path]:
    """Write data/sample-KIND.txt.gz (build time)."""
    written = []
    for kind in KINDS:
        text = globals()[kind]()[:SHIPPED_CHARS]
        if text:
            p = out_dir / f"sample-{kind}.txt.gz"
            p.write_bytes(gzip.compress(text.encode("utf-8"), 9, mtime=0))
            written.append(p)
    return written


def shipped() -> dict[str, str]:
    """The sample texts shipped in the package, by kind."""
    return {p.name[len("sample-"):-len(".txt.gz")]: gzip.decompress(p.read_bytes()).decode("utf-8")
            for p in sorted(DATA.glob("sample-*.txt.gz"))}
