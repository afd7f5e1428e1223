from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# tests load many throwaway model files: keep their compiled forms out of the user's cache
# (test_model_cache turns it on in a directory of its own)
os.environ["EDGETOK_NO_CACHE"] = "1"

import reference  # noqa: E402


@pytest.fixture(scope="session")
def enc():  # type: ignore[no-untyped-def]
    import edgetok

    return edgetok.get_encoding("cl100k_base")


@pytest.fixture(scope="session")
def ref():  # type: ignore[no-untyped-def]
    return reference.tiktoken_encoding("cl100k_base")


@pytest.fixture(scope="session")
def corpora() -> dict[str, str]:
    return reference.corpora()
