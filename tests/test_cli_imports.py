"""Start-up of the `edgetok` command: `count` and `encode` of a small file import only what
they use. On a small board a count of one file is mostly start-up, and every module imported
costs there (click alone cost more than edgetok's import, load and encode together); this
checks which modules, not how long (timings are for bench/ and the README)."""
from __future__ import annotations

import subprocess
import sys

import pytest

# as the installed `edgetok` script runs it: import edgetok_cli.main, call main()
# Modules of HEAVY that the interpreter's start already imported (site's .pth files can import
# typing, json, ...) are dropped from sys.modules first, so that the command importing one
# shows here wherever the test runs.
RUN = """import sys
for name in sys.argv.pop(1).split():
    sys.modules.pop(name, None)
before = set(sys.modules)
sys.argv = ["edgetok", *sys.argv[1:]]
from edgetok_cli.main import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nIMPORTED " + " ".join(sorted(set(sys.modules) - before)) + "\\n")
"""

# modules the start of these commands does not need (each of them, or what it pulls in,
# costs a millisecond or more on a board): the old CLI's click and what click imports,
# argparse (with gettext and locale: ~25M instructions in a bare venv, where the command's own
# parser costs next to nothing), json (chunk, info, --messages use it), typing (annotations
# are strings), and the like
HEAVY = {"click", "argparse", "gettext", "locale", "json", "typing", "inspect", "ast", "dis",
         "tokenize", "shutil", "tempfile", "random", "textwrap", "datetime", "uuid", "platform",
         "subprocess", "email", "zipfile", "importlib.metadata", "concurrent.futures", "logging",
         "jinja2", "regex"}


def imported_by(*args: str, input: bytes = b"") -> set[str]:
    p = subprocess.run([sys.executable, "-c", RUN, " ".join(sorted(HEAVY)), *args], input=input,
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    line = p.stderr.decode().rsplit("\nIMPORTED ", 1)[1]
    return set(line.split())


@pytest.mark.parametrize("args", [["count"], ["encode"], ["count", "-j", "1", "-e", "cl100k_base"],
                                  ["encode", "-f", "ids", "--allow-special"]])
def test_start_imports_only_what_it_uses(tmp_path, args):  # type: ignore[no-untyped-def]
    f = tmp_path / "small.txt"
    f.write_text("A small file, as a board would count it: a line or two of text.\n" * 16)
    new = imported_by(*args, str(f))
    assert "edgetok.stream" in new  # (it ran)
    assert not new & HEAVY, f"{sorted(new & HEAVY)} imported; all: {sorted(new)}"
    assert not any(m == "click" or m.startswith("click.") for m in new)


def test_the_check_sees_imports():  # type: ignore[no-untyped-def]
    # the check above would pass if nothing were ever seen: chunk writes JSON lines
    assert "json" in imported_by("chunk", "-n", "5", input=b"hello world")
