"""Start-up of the `edgetok` command and of the library: `count` and `encode` of a small
file, and `import edgetok` + get_encoding + encode/count/decode, import only what they use. On a small board a count of one file is mostly start-up, and every module imported
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
         "jinja2", "regex",
         # and what the library's own start no longer needs (a bare venv's `import edgetok`
         # + load + encode: 97M -> 48M instructions, `python -c pass` 38M): pathlib (re,
         # fnmatch, urllib), threading and functools (collections), array (collections.abc),
         # signal (enum)
         "pathlib", "re", "fnmatch", "urllib", "threading", "functools", "collections", "array",
         "enum", "signal"}


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



# the library alone, as a program that imports it would use it (ids are other tests' business)
LIBRARY = """import sys
for name in sys.argv[1].split():
    sys.modules.pop(name, None)
before = set(sys.modules)
import edgetok
enc = edgetok.get_encoding(sys.argv[2])
text = "Hello world, once more: 12345"  # (special tokens in text: a regex finds them)
ids = enc.encode(text)
assert enc.decode(ids) == text and enc.count(text) == len(enc.encode_ordinary(text))
print(" ".join(sorted(set(sys.modules) - before)))
"""


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "gpt2"])
def test_library_start_imports_only_what_it_uses(name):  # type: ignore[no-untyped-def]
    p = subprocess.run([sys.executable, "-c", LIBRARY, " ".join(sorted(HEAVY)), name],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    new = set(p.stdout.decode().split())
    assert "edgetok._ffi" in new  # (it ran)
    assert not new & HEAVY, f"{sorted(new & HEAVY)} imported; all: {sorted(new)}"
