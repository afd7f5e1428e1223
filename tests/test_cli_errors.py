"""The `edgetok` command when its output, its input or the machine get in the way: one line on
stderr and a non-zero exit, never a traceback; Ctrl-C and a closed pipe end it quietly, as
they end Unix tools; `compile -o` replaces a model by rename."""
from __future__ import annotations

import base64
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import reference

EXE = [sys.executable, "-m", "edgetok_cli.main"]
ROOT = Path(__file__).resolve().parent.parent


def one_error_line(p: subprocess.CompletedProcess, needle: bytes) -> None:
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert b"Traceback" not in p.stderr and needle in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


COMMANDS = [(["encode"], b"hello world\n"), (["count"], b"hello world\n"),
            (["decode"], b"15339 1917"), (["chunk", "-n", "2"], b"hello world\n"),
            (["info"], None)]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args,input", COMMANDS)
def test_output_to_a_full_disk(args, input):  # type: ignore[no-untyped-def]
    with open("/dev/full", "wb") as full:
        p = subprocess.run([*EXE, *args], input=input, stdout=full, stderr=subprocess.PIPE,
                           timeout=60)
    one_error_line(p, b"No space left on device")


@pytest.mark.parametrize("args,input", COMMANDS)
def test_output_closed(args, input):  # type: ignore[no-untyped-def]
    # `edgetok encode >&-`: the command starts with descriptor 1 closed
    p = subprocess.run([*EXE, *args], input=input, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1), timeout=60)
    one_error_line(p, b"standard output is closed")


def test_decode_strict_ends_inside_a_character():  # type: ignore[no-untyped-def]
    # 9468 is the first of the tokens of an emoji: the text ends inside a character
    p = subprocess.run([*EXE, "decode", "--errors", "strict"], input=b"9468\n",
                       capture_output=True, timeout=60)
    one_error_line(p, b"do not decode to UTF-8")


def small_vocab(tmp_path: Path) -> Path:
    f = tmp_path / "bytes.tiktoken"
    f.write_bytes(b"".join(base64.b64encode(bytes([i])) + b" %d\n" % i for i in range(256)))
    return f


def test_compile_output_errors(tmp_path):  # type: ignore[no-untyped-def]
    vocab = small_vocab(tmp_path)
    p = subprocess.run([*EXE, "compile", str(vocab), "-o", str(tmp_path / "no" / "x.etok")],
                       capture_output=True, timeout=60)
    one_error_line(p, b"no such folder")
    (tmp_path / "dir").mkdir()
    p = subprocess.run([*EXE, "compile", str(vocab), "-o", str(tmp_path / "dir")],
                       capture_output=True, timeout=60)
    one_error_line(p, b"is a directory")
    assert sorted(os.listdir(tmp_path)) == ["bytes.tiktoken", "dir"]  # nothing left behind


def test_compile_replaces_by_rename(tmp_path):  # type: ignore[no-untyped-def]
    # a process that has the model mapped keeps reading the old file: rewriting it in place
    # (truncating it first) would kill that process with SIGBUS
    import edgetok

    vocab = small_vocab(tmp_path)
    out = tmp_path / "m.etok"
    cmd = [*EXE, "compile", str(vocab), "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    model = edgetok.load(str(out))
    before = os.stat(out)
    subprocess.run([*cmd, "--special", "<|x|>=256"], check=True, capture_output=True, timeout=60)
    after = os.stat(out)
    assert after.st_ino != before.st_ino  # a new file renamed over the old one
    assert after.st_mode == before.st_mode and after.st_size > before.st_size
    assert model.model.verify() and model.encode("abc") == [97, 98, 99]
    assert sorted(os.listdir(tmp_path)) == ["bytes.tiktoken", "m.etok"]  # no temporary file left
    assert edgetok.load(str(out)).n_vocab == 257


def encode_then_sigint(sigint: object) -> "subprocess.Popen[bytes]":
    """`edgetok encode` started with SIGINT's disposition sigint, given a line (its ids out),
    then sent SIGINT. The disposition is set for the start: a test run started in the
    background by a shell without job control ignores SIGINT, and its children inherit that."""
    old = signal.signal(signal.SIGINT, sigint)  # type: ignore[arg-type]
    try:
        p = subprocess.Popen([*EXE, "encode"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    finally:
        signal.signal(signal.SIGINT, old)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    p.stdin.write(b"Hello world, and more.\n")
    p.stdin.flush()
    ready, _, _ = select.select([p.stdout], [], [], 20)  # it is running: ids came out
    assert ready
    p.send_signal(signal.SIGINT)
    return p


def test_ctrl_c_ends_quietly():  # type: ignore[no-untyped-def]
    # as Unix tools: no "Aborted!", no traceback; ended by SIGINT (status 130 in a shell)
    p = encode_then_sigint(signal.default_int_handler)
    p.wait(20)
    err = p.stderr.read()  # type: ignore[union-attr]
    p.stdin.close()  # type: ignore[union-attr]
    assert p.returncode == -signal.SIGINT and err == b"", (p.returncode, err)


def test_ignored_sigint_stays_ignored():  # type: ignore[no-untyped-def]
    # started with SIGINT ignored (nohup, a background job): it goes on to the end of its input
    p = encode_then_sigint(signal.SIG_IGN)
    p.stdin.write(b"The end.\n")  # type: ignore[union-attr]
    out, err = p.communicate(timeout=20)
    want = reference.tiktoken_encoding("cl100k_base").encode("Hello world, and more.\nThe end.\n")
    assert p.returncode == 0 and err == b"", (p.returncode, err)
    assert [int(x) for x in out.split()] == want


def fake_source_tree(tmp_path: Path) -> Path:
    """A fresh clone's layout: the package's Python files and setup.py, nothing built."""
    tree = tmp_path / "checkout"
    (tree / "edgetok").mkdir(parents=True)
    for f in (ROOT / "edgetok").glob("*.py"):
        shutil.copy(f, tree / "edgetok" / f.name)
    shutil.copy(ROOT / "setup.py", tree / "setup.py")
    return tree


def test_run_from_an_unbuilt_source_folder(tmp_path):  # type: ignore[no-untyped-def]
    tree = fake_source_tree(tmp_path)
    # `python -m` imports the folder's unbuilt edgetok: one line that says what to do
    p = subprocess.run([*EXE, "encode"], input=b"hi", cwd=tree, capture_output=True, timeout=60)
    one_error_line(p, b"source folder")


@pytest.fixture
def no_tiktoken(tmp_path):  # type: ignore[no-untyped-def]
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "tiktoken.py").write_text("raise ImportError('no tiktoken here')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(hide), *filter(None, [os.environ.get("PYTHONPATH")])])}


def test_bench_without_tiktoken_from_a_source_folder(tmp_path, no_tiktoken):  # type: ignore[no-untyped-def]
    # the installed command (a script, which does not put the working folder on sys.path)
    # run from an unbuilt checkout: the processes it measures must not import the checkout
    tree = fake_source_tree(tmp_path)
    script = tmp_path / "edgetok_script.py"
    script.write_text("from edgetok_cli.main import main\nmain()\n")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, str(script), "bench", "--seconds", "0.05", "--json"],
                       cwd=tree, capture_output=True, env=no_tiktoken, timeout=120)
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr.decode()
    assert b'"reference": "tiktoken not installed"' in p.stdout
    assert time.monotonic() - t0 < 60
