"""The `edgetok` command through a real subprocess, checked against tiktoken."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

EXE = [sys.executable, "-m", "edgetok_cli.main"]


def run(*args: str, input: bytes | None = None, env: dict[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([*EXE, *args], input=input, capture_output=True,
                       env={**os.environ, **(env or {})}, timeout=120)
    if check:
        assert p.returncode == 0, p.stderr.decode()
    return p


def ids(out: bytes) -> list[int]:
    return [int(x) for x in out.split()]


def test_encode_stdin_and_file(ref, tmp_path):  # type: ignore[no-untyped-def]
    text = "Hello, world! It's 2026.\n  indented\tline\r\n日本語 😀\n"
    assert ids(run("encode", input=text.encode()).stdout) == ref.encode(text)
    f = tmp_path / "t.txt"
    f.write_text(text, encoding="utf-8")
    assert ids(run("encode", str(f)).stdout) == ref.encode(text)
    assert json.loads(run("encode", str(f), "--format", "json").stdout) == ref.encode(text)
    lines = run("encode", str(f), "--format", "tokens").stdout.decode().splitlines()
    assert [int(line.split("\t")[0]) for line in lines] == ref.encode(text)


def test_streaming_equals_whole(ref, corpora, tmp_path):  # type: ignore[no-untyped-def]
    # tiny read chunks force many streaming cuts, inside characters too
    text = corpora["multilingual"][:60000] + "\n\n   \n" + "x" * 3000 + "   "
    f = tmp_path / "t.txt"
    f.write_bytes(text.encode())
    for chunk in ("7", "100", "4096"):
        out = run("encode", str(f), env={"EDGETOK_CHUNK": chunk}).stdout
        assert ids(out) == ref.encode_ordinary(text), chunk
        out = run("count", str(f), env={"EDGETOK_CHUNK": chunk}).stdout
        assert int(out.split()[0]) == len(ref.encode_ordinary(text))


def test_streaming_specials_across_reads(ref, tmp_path):  # type: ignore[no-untyped-def]
    text = "a<|endoftext|>b<|endof<|endoftext|>" * 50
    f = tmp_path / "t.txt"
    f.write_text(text)
    out = run("encode", str(f), "--allow-special", env={"EDGETOK_CHUNK": "5"}).stdout
    assert ids(out) == ref.encode(text, allowed_special="all")
    out = run("encode", str(f), "--special-as-text", env={"EDGETOK_CHUNK": "3"}).stdout
    assert ids(out) == ref.encode(text, disallowed_special=())


def test_disallowed_special_is_an_error(tmp_path):  # type: ignore[no-untyped-def]
    p = run("encode", input=b"x <|endoftext|>", check=False)
    assert p.returncode == 1
    assert p.stderr.startswith(b"edgetok: error: ") and b"Traceback" not in p.stderr


def test_decode(ref):  # type: ignore[no-untyped-def]
    text = "round trip: caf\u00e9 \U0001f600\n"
    got = run("decode", input=" ".join(map(str, ref.encode(text))).encode()).stdout
    assert got.decode() == text
    got = run("decode", input=json.dumps(ref.encode(text)).encode()).stdout
    assert got.decode() == text
    p = run("decode", input=b"1 2 100256", check=False)
    assert p.returncode == 1 and b"100256" in p.stderr and b"Traceback" not in p.stderr
    p = run("decode", input=b"1 two", check=False)
    assert p.returncode == 1 and b"two" in p.stderr


def test_count_like_wc(ref, tmp_path):  # type: ignore[no-untyped-def]
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("one two three")
    b.write_text("four\n" * 10)
    out = run("count", str(a), str(b)).stdout.decode().splitlines()
    na, nb = len(ref.encode("one two three")), len(ref.encode("four\n" * 10))
    assert [line.split() for line in out] == [[str(na), str(a)], [str(nb), str(b)], [str(na + nb), "total"]]
    assert run("count", input=b"one two three").stdout.split() == [str(na).encode()]


@pytest.mark.parametrize("args,input,needle", [
    (["encode", "/no/such/file"], None, b"no such file"),
    (["count", "/"], None, b"is a directory"),
    (["encode"], b"ok \xff\xfe bad", b"byte 3"),
    (["encode", "--model", "/no/such.etok"], b"x", b"no such file"),
    (["encode", "--encoding", "nope"], b"x", b"nope"),
])
def test_errors_are_one_line(args, input, needle):  # type: ignore[no-untyped-def]
    p = run(*args, input=input, check=False)
    assert p.returncode != 0
    assert needle in p.stderr and b"Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_errors_replace_matches_python_and_tiktoken(ref):  # type: ignore[no-untyped-def]
    data = b"ok \xff\xfe bad \xe6\x97 end \xf0\x9f\x98"
    text = data.decode("utf-8", "replace")
    out = run("encode", "--errors", "replace", input=data, env={"EDGETOK_CHUNK": "2"}).stdout
    assert ids(out) == ref.encode(text)


def test_broken_pipe_is_quiet(corpora, tmp_path):  # type: ignore[no-untyped-def]
    f = tmp_path / "big.txt"
    f.write_text(corpora["english"] * 4)
    p = subprocess.Popen([*EXE, "encode", str(f)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(100)
    p.stdout.close()
    err = p.stderr.read()
    p.wait(60)
    assert err == b""


def test_compile_and_model(ref, tmp_path):  # type: ignore[no-untyped-def]
    import base64

    # a real vocabulary: the first 5000 ranks of cl100k_base, written as a tiktoken file
    vocab = tmp_path / "small.tiktoken"
    ranks = sorted(ref._mergeable_ranks.items(), key=lambda kv: kv[1])[:5000]
    vocab.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks))
    out = tmp_path / "small.etok"
    run("compile", str(vocab), "-o", str(out), "--special", "<|endoftext|>=5000")
    info = json.loads(run("info", "--model", str(out), "--verify", "--json").stdout)
    assert info["n_vocab"] == 5001 and info["checksum"] == "ok"
    import tiktoken

    small = tiktoken.Encoding("small", pat_str=ref._pat_str, mergeable_ranks=dict(ranks),
                              special_tokens={"<|endoftext|>": 5000})
    text = "The quick brown fox jumps over the lazy dog.<|endoftext|> Unusual wordings!"
    got = run("encode", "--model", str(out), "--allow-special", input=text.encode()).stdout
    assert ids(got) == small.encode(text, allowed_special="all")
    # the tiktoken file itself works as --model too (no special tokens: all text is ordinary)
    got = run("encode", "--model", str(vocab), input=text.encode()).stdout
    assert ids(got) == small.encode_ordinary(text)


def test_help_and_version():  # type: ignore[no-untyped-def]
    top = run("--help").stdout
    assert b"Examples" in top and run("-h").stdout == top
    for cmd in ("encode", "decode", "count", "chunk", "compile", "info", "bench", "regex"):
        assert cmd.encode() in top  # listed, with its summary
        out = run(cmd, "--help").stdout
        assert out.startswith(b"usage: edgetok " + cmd.encode()) and b"Examples:" in out
        assert run(cmd, "-h").stdout == out
    assert run("--version").stdout.startswith(b"edgetok, version ")


@pytest.mark.parametrize("args,needle", [
    ([], b"Commands:"),  # no command: the help, on stderr
    (["nope"], b"invalid choice: 'nope'"),
    (["--bogus"], b"unrecognized arguments: --bogus"),
    (["count", "--bogus", "-"], b"unrecognized arguments: --bogus"),
    (["count", "-j", "0"], b"argument -j/--jobs: 0 is less than 1"),
    (["count", "--limit", "x"], b"argument --limit: 'x' is not an integer"),
    (["bench", "--seconds", "0.01"], b"argument --seconds: 0.01 is less than 0.05"),
    (["encode", "-f", "xml"], b"argument -f/--format: invalid choice: 'xml'"),
    (["encode", "a.txt", "b.txt"], b"unrecognized arguments: b.txt"),
    (["encode", "--allow-special", "--special-as-text"], b"exclude each other"),
    (["count", "--chat-model", "gpt-4o"], b"--chat-model goes with --messages"),
    (["chunk"], b"required: -n/--max-tokens"),
    (["chunk", "-n", "4", "--overlap", "4"], b"--overlap must be less than --max-tokens"),
    (["compile", "v.tiktoken"], b"required: -o/--output"),
    (["regex"], b"required: PATTERN"),
    (["encode", "--bos=1"], b"argument --bos: takes no value ('1' given)"),
    (["encode", "-e"], b"argument -e/--encoding: expected one argument"),
    (["decode", "--errors=x"], b"argument --errors: invalid choice: 'x'"),
])
def test_usage_errors(args, needle):  # type: ignore[no-untyped-def]
    # the usage of what was run, and one line naming the option and the value; status 2
    p = run(*args, input=b"", check=False)
    assert p.returncode == 2 and needle in p.stderr and p.stdout == b"", p.stderr
    assert b"Traceback" not in p.stderr and b"usage: edgetok" in p.stderr


def test_options_between_files(ref, tmp_path):  # type: ignore[no-untyped-def]
    # options may come before, between and after FILEs; `--` ends the options
    a, b, c = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "-c.txt"
    for f, text in ((a, "one two three"), (b, "four\n" * 10), (c, "six")):
        f.write_text(text)
    n = [len(ref.encode(f.read_text())) for f in (a, b, c)]
    p = subprocess.run([*EXE, "count", str(a), "-j", "1", str(b), "--limit=100", "-", "--",
                        c.name], input=b"five", capture_output=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.decode().splitlines()]
    five = len(ref.encode("five"))
    assert rows == [[str(n[0]), str(a)], [str(n[1]), str(b)], [str(five)], [str(n[2]), c.name],
                    [str(sum(n) + five), "total"]]
    text = "Hello <|endoftext|>"
    assert ids(run("encode", "-fids", "--allow-special", input=text.encode()).stdout) == \
        ref.encode(text, allowed_special="all")
    assert json.loads(run("encode", "--format=json", "-", "-j", "2", input=b"hi").stdout) == \
        ref.encode("hi")
    assert json.loads(run("encode", "-f=json", "--no-add-special-tokens", input=b"hi").stdout) == \
        ref.encode("hi")
    # an option's value is the next word whatever it looks like (as click took it)
    p = run("count", "--encoding", "-x", input=b"hi", check=False)
    assert p.returncode == 1 and b"Unknown encoding '-x'" in p.stderr
