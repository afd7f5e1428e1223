"""Streaming with bounded memory and live output: `edgetok chunk` decides each chunk on a
bounded stretch of text yet gives the whole text's chunks; `edgetok encode` writes what is
final while the input pauses; a long stretch with no cut costs a bounded multiple of itself."""
from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys

import pytest

from edgetok.budget import BOUNDARIES, _breaks

EXE = [sys.executable, "-m", "edgetok_cli.main"]


def whole_text_chunks(model, data: bytes, n: int, overlap: int, boundary: str):  # type: ignore[no-untyped-def]
    """chunks() as it was on the whole text: split_at and count_limit over all the rest."""
    kinds = BOUNDARIES[BOUNDARIES.index(boundary):-1]
    pos = 0
    while pos < len(data):
        cut, ids = model.split_at(data, n, pos)
        assert cut > 0
        end, k = pos + cut, len(ids)
        if end < len(data):
            for kind in kinds:
                for b in _breaks(data[pos:end], kind):
                    if b < cut and (c := model.count_limit(data, n, pos, pos + b)) is not None:
                        end, k = pos + b, c
                        break
                else:
                    continue
                break
        yield pos, end, k
        if end >= len(data):
            return
        nxt = end
        if overlap:
            own, _ = model.encode(data[pos:end])
            nxt = pos + sum(len(model.token_bytes(t) or b"") for t in own[: len(own) - overlap])
            while nxt < end and data[nxt] & 0xC0 == 0x80:
                nxt += 1
            if nxt <= pos:
                nxt = end
        pos = nxt


def blocks_of(data: bytes, sizes: list[int]):  # type: ignore[no-untyped-def]
    pos = k = 0
    while pos < len(data):
        yield data[pos:pos + sizes[k % len(sizes)]]  # inside characters too
        pos += sizes[k % len(sizes)]
        k += 1


def test_chunk_stream_equals_whole_text(enc, ref, corpora):  # type: ignore[no-untyped-def]
    from edgetok.stream import chunk_stream

    text = (corpora["english"][:4000] + "\n\n" + corpora["multilingual"][:3000] + " " * 300
            + "x" * 2500 + "\U0001f600" * 200 + ".\n" + corpora["code"][:3000])
    data = text.encode()
    for n, overlap, boundary in [(7, 0, "char"), (50, 0, "paragraph"), (64, 10, "sentence"),
                                 (300, 0, "line"), (1000, 100, "char")]:
        want = list(whole_text_chunks(enc.model, data, n, overlap, boundary))
        for sizes in ([1, 2, 3, 5], [100, 333], [4096]):
            got = list(chunk_stream(enc, blocks_of(data, sizes), n, overlap=overlap,
                                    boundary=boundary))
            assert [g[:3] for g in got] == want, (n, overlap, boundary, sizes)
            assert all(raw == data[a:b] for a, b, _, raw in got)
        for a, b, k in want:
            assert k == len(ref.encode_ordinary(data[a:b].decode())) <= n


def test_chunk_command_small_reads(ref, corpora, tmp_path):  # type: ignore[no-untyped-def]
    text = corpora["english"][:20000] + "\n\n\n" + corpora["multilingual"][:8000]
    f = tmp_path / "t.txt"
    f.write_text(text, encoding="utf-8")
    rows = None
    for chunk in ("7", "1000", "1048576"):
        p = subprocess.run([*EXE, "chunk", "-n", "100", "--boundary", "sentence", str(f)],
                           capture_output=True, env={**os.environ, "EDGETOK_CHUNK": chunk},
                           timeout=120)
        assert p.returncode == 0, p.stderr
        got = [json.loads(line) for line in p.stdout.splitlines()]
        assert rows is None or got == rows, chunk
        rows = got
    assert rows is not None and "".join(r["text"] for r in rows) == text
    for r in rows:
        assert r["tokens"] == len(ref.encode_ordinary(r["text"])) <= 100


def read_until(fd: int, enough, timeout: float = 10.0) -> bytes:  # type: ignore[no-untyped-def]
    got = b""
    while not enough(got):
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"nothing more within {timeout} s; so far {got!r}"
        data = os.read(fd, 1 << 16)
        assert data, got
        got += data
    return got


def test_chunk_streams_before_the_input_ends(ref, corpora):  # type: ignore[no-untyped-def]
    text = corpora["english"][:3000]
    p = subprocess.Popen([*EXE, "chunk", "-n", "20"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(text.encode())
    p.stdin.flush()  # and the input stays open
    first = read_until(p.stdout.fileno(), lambda got: b"\n" in got)
    row = json.loads(first.split(b"\n")[0])
    assert row["start"] == 0 and text.startswith(row["text"])
    assert row["tokens"] == len(ref.encode_ordinary(row["text"])) <= 20
    p.stdin.close()
    p.stdout.read()
    assert p.wait(30) == 0


@pytest.mark.parametrize("first,second", [("Hello world, the first part of it.\n", "and more\n"),
                                          ("hi\n", "more\n")])  # the issue's own case
def test_encode_writes_while_the_input_pauses(ref, first, second):  # type: ignore[no-untyped-def]
    # `(echo ...; sleep; echo ...) | edgetok encode`: what no later text can change comes out
    # while the writer waits (all but the last piece: "hi" before "\n"), and the whole is
    # exactly the ids of the whole text
    want = ref.encode(first + second)
    settled = " ".join(map(str, ref.encode(first)[:-1])).encode()  # here: the last piece is one token
    p = subprocess.Popen([*EXE, "encode"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(first.encode())
    p.stdin.flush()
    early = read_until(p.stdout.fileno(), lambda got: got.rstrip().startswith(settled))
    ids = [int(x) for x in early.split()]
    assert ids and ids == want[:len(ids)]
    p.stdin.write(second.encode())
    p.stdin.close()
    rest = p.stdout.read()
    assert p.wait(30) == 0
    assert [int(x) for x in (early + rest).split()] == want


def peak_rss_kb(args: list[str], path: str) -> int:
    """Peak RSS of the command (VmHWM via the wait status), its output discarded."""
    code = ("import resource, subprocess, sys; "
            "subprocess.run(sys.argv[2:], stdin=open(sys.argv[1], 'rb'), "
            "stdout=subprocess.DEVNULL, check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code, path, *args], capture_output=True,
                         check=True, timeout=300)
    return int(out.stdout)


@pytest.mark.parametrize("unit", ["letters", "\U0001f600"])
def test_long_piece_exact_with_small_reads(ref, tmp_path, unit):  # type: ignore[no-untyped-def]
    random.seed(5)
    text = ("".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(60000))
            if unit == "letters" else unit * 15000)
    f = tmp_path / "long.txt"
    f.write_text("start " + text + " end", encoding="utf-8")
    for chunk in ("1000", "65536"):
        for jobs in ("1", "2"):
            out = subprocess.run([*EXE, "encode", "-j", jobs, str(f)], capture_output=True,
                                 env={**os.environ, "EDGETOK_CHUNK": chunk}, timeout=120)
            assert [int(x) for x in out.stdout.split()] == ref.encode("start " + text + " end")


@pytest.mark.parametrize("unit", ["letters", "\U0001f600"])
def test_long_piece_memory(tmp_path, unit):  # type: ignore[no-untyped-def]
    # one line with no cut in it: the whole line is one piece, whose settled tokens come out
    # in parts (ET_SETTLE), so memory does not grow with the line (before: about 52 bytes of
    # memory per byte of such a line, then 12; now a constant, about 25 MB)
    random.seed(7)
    size = 16_000_000
    text = ("".join(random.choices("abcdefghijklmnopqrstuvwxyz", k=size)) if unit == "letters"
            else unit * (size // 4))
    f = tmp_path / "long.txt"
    f.write_text(text, encoding="utf-8")
    base = peak_rss_kb([*EXE, "count"], os.devnull)  # the interpreter, edgetok and a model
    used = peak_rss_kb([*EXE, "encode", "-j", "1"], str(f)) - base
    assert used * 1024 < 3 * size, used
