"""Acceptance: tiktoken 0.14.0's own test suite (its sdist's tests/, hypothesis tests
included) passes with `tiktoken` resolving to edgetok through a module alias, run in a
subprocess so that the alias cannot leak into this session."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = ["__init__.py", "test_encoding.py", "test_helpers.py", "test_misc.py", "test_offsets.py",
         "test_pickle.py", "test_simple_public.py"]

SHIM = {
    "tiktoken/__init__.py": (
        "from edgetok import encoding_for_model, encoding_name_for_model, get_encoding\n"
        "from edgetok import list_encoding_names\n"
        "from edgetok.encoding import Encoding\n"
        "from . import core, model, registry\n"
        "__version__ = '0.14.0'\n"),
    "tiktoken/core.py": "from edgetok.encoding import Encoding\n",
    "tiktoken/model.py": ("from edgetok.model_names import *  # noqa: F403\n"
                          "from edgetok.model_names import encoding_for_model, encoding_name_for_model\n"),
    "tiktoken/registry.py": "from edgetok.registry import get_encoding, list_encodings as list_encoding_names\n",
    "tiktoken_ext/__init__.py": "",
}
# in the suite's folder: proof that the alias, not tiktoken, is what the tests import
CONFTEST = """
import edgetok, tiktoken
assert tiktoken.Encoding is edgetok.Encoding, tiktoken.__file__
assert type(tiktoken.get_encoding("cl100k_base")).__module__ == "edgetok.encoding"
"""


@pytest.mark.slow
def test_tiktoken_suite_through_alias(tmp_path: Path) -> None:
    from edgetok.fetch import sdist_members

    try:
        got = sdist_members("tiktoken", "0.14.0", [f"tests/{t}" for t in TESTS])
    except RuntimeError as e:
        pytest.fail(f"tiktoken's sdist is not available: {e}")
    suite = tmp_path / "suite"
    (suite / "tests").mkdir(parents=True)
    for t in TESTS:
        (suite / "tests" / t).write_bytes(got[f"tests/{t}"].read_bytes())
    (suite / "conftest.py").write_text(CONFTEST)
    shim = tmp_path / "shim"
    for rel, text in SHIM.items():
        (shim / rel).parent.mkdir(parents=True, exist_ok=True)
        (shim / rel).write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(shim), *filter(None, [os.environ.get("PYTHONPATH")])]))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "no:randomly", "tests", "-rf"], cwd=suite, env=env,
                       capture_output=True, text=True, timeout=1200)
    tail = r.stdout[-4000:] + r.stderr[-2000:]
    assert r.returncode == 0, tail
    assert "33 passed" in r.stdout, tail
