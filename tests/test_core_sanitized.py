"""The C core built on its own with AddressSanitizer and UndefinedBehaviorSanitizer (the
csrc/tools/etok driver), on real text against tiktoken, on arbitrary bytes, and on corrupted
model files, which must fail cleanly or work, never touch memory they should not."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import reference

# exhaustive: `pytest -m slow` (README)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ["csrc/tools/etok.c", *reference.core_sources()]
ENV = {**os.environ, "ASAN_OPTIONS": "exitcode=99:detect_leaks=1",
       "UBSAN_OPTIONS": "halt_on_error=1:exitcode=98:print_stacktrace=1"}


@pytest.fixture(scope="module")
def etok(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("asan") / "etok"
    subprocess.run([cc, "-std=c11", "-g", "-O1", "-Wall", "-Wextra", "-Werror",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    "-fno-omit-frame-pointer", "-Icsrc/include", "-Icsrc", *SOURCES, "-o", str(exe)],
                   cwd=ROOT, check=True)
    return exe


@pytest.fixture(scope="module")
def model(enc) -> str:  # type: ignore[no-untyped-def]
    return enc.model.source


def etok_run(exe: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run([str(exe), *args], input=data, capture_output=True, env=ENV, timeout=300)
    assert p.returncode not in (98, 99), p.stderr.decode()[-3000:]
    return p


def test_real_text(etok, model, ref, corpora, tmp_path):  # type: ignore[no-untyped-def]
    for kind, text in corpora.items():
        text = text[:200000]
        f = tmp_path / f"{kind}.txt"
        f.write_text(text, encoding="utf-8")
        p = etok_run(etok, "encode", model, str(f))
        assert p.returncode == 0
        assert [int(x) for x in p.stdout.split()] == ref.encode_ordinary(text), kind
        assert int(etok_run(etok, "count", model, str(f)).stdout) == len(ref.encode_ordinary(text))


def test_long_pieces_grow_the_workspace(etok, model, ref):  # type: ignore[no-untyped-def]
    for text in ("x" * 70000, "\u00e9" * 30000 + "!", " " * 50000 + "a", "7" * 9000, "=+" * 20000):
        p = etok_run(etok, "encode", model, data=text.encode())
        assert [int(x) for x in p.stdout.split()] == ref.encode_ordinary(text)


def test_arbitrary_bytes(etok, model, enc):  # type: ignore[no-untyped-def]
    rng = random.Random(1)
    for n in (1, 2, 3, 7, 64, 1000, 20000):
        data = bytes(rng.choice(b"\x80\xbf\xc0\xc3\xe0\xe6\xed\xf0\xf4\xf5\xff 'a1\n\r") for _ in range(n))
        p = etok_run(etok, "encode", model, data=data)
        assert p.returncode == 0
        assert [int(x) for x in p.stdout.split()] == enc.model.encode(data)[0]
        p = etok_run(etok, "pretok", model, data=data)
        assert [int(x) for x in p.stdout.split()] == list(enc.model.pretokenize(data))


def test_corrupted_models(etok, model, tmp_path):  # type: ignore[no-untyped-def]
    image = Path(model).read_bytes()
    rng = random.Random(2)
    sample = tmp_path / "in.txt"
    sample.write_text("Hello, world! Corrupted models must never crash: 12345 'll \u00e9\u00e9 \U0001f600\n")
    cases = [image[:n] for n in (0, 7, 64, 255, 256, 257, 4096, len(image) // 2, len(image) - 1)]
    for _ in range(60):  # bytes flipped in the header, where every offset and size lives
        b = bytearray(image)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(256)] ^= 1 << rng.randrange(8)
        cases.append(bytes(b))
    for _ in range(40):  # bytes overwritten anywhere: trie cells, offsets, token bytes
        b = bytearray(image)
        for _ in range(rng.randint(1, 200)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(bytes(b))
    bad = tmp_path / "bad.etok"
    for i, case in enumerate(cases):
        bad.write_bytes(case)
        p = etok_run(etok, "encode", str(bad), str(sample))
        assert p.returncode in (0, 1), (i, p.stderr)
        v = etok_run(etok, "verify", str(bad))
        if case != image:
            assert v.returncode == 1, i  # the checksum (or validation) catches every change


def test_budget_operations(etok, model, ref, corpora, tmp_path):  # type: ignore[no-untyped-def]
    text = corpora["multilingual"][:3000] + "x" * 400 + " \u00e9\U0001f600" * 30 + "  \n"
    data = text.encode()
    f = tmp_path / "t.txt"
    f.write_bytes(data)
    for n in ("1", "4", "9", "300"):
        p = subprocess.run([str(etok), "split", model, str(f)], capture_output=True,
                           env={**ENV, "ETOK_N": n}, timeout=300)
        assert p.returncode in (0, 2), p.stderr.decode()[-3000:]
        if p.returncode:  # only when a single character needs more than n tokens
            assert n == "1" and b"no cut" in p.stderr
            continue
        cuts = [0, *map(int, p.stdout.split())]
        assert cuts[-1] == len(data)
        for a, b in zip(cuts, cuts[1:]):
            assert len(ref.encode_ordinary(data[a:b].decode())) <= int(n)
    small = "It's  a test\n\n of 12345 ranges \u00e9\u00e9 \U0001f600!".encode()
    f.write_bytes(small)
    p = etok_run(etok, "range", model, str(f))
    got = list(map(int, p.stdout.split()))
    want = [len(ref.encode_ordinary(small[i:j].decode("utf-8", "replace")))
            for i in range(0, len(small) + 1, 13) for j in range(i, len(small) + 1, 13)]
    assert len(got) == len(want)
    for (g, w, (i, j)) in zip(got, want, [(i, j) for i in range(0, len(small) + 1, 13)
                                         for j in range(i, len(small) + 1, 13)]):
        try:
            small[i:j].decode()
        except UnicodeDecodeError:
            continue  # a range cutting a character: no tiktoken reference
        assert g == w, (i, j)


def test_growing_piece(etok, model, ref, tmp_path):  # type: ignore[no-untyped-def]
    # et_piece_grow over long runs and arbitrary bytes, in uneven steps: no sanitizer report,
    # and tiktoken's count of each prefix as one piece
    rnd = random.Random(5)
    cases = [b"a" * 700 + b"=" * 300 + b" " * 200, "\u00e9\U0001f600x".encode() * 120,
             bytes(rnd.randrange(256) for _ in range(900)), b"ab" * 500]
    f = tmp_path / "g.bin"
    for data in cases:
        f.write_bytes(data)
        for step in (1, 13, 64):
            p = subprocess.run([str(etok), "grow", model, str(f)], capture_output=True,
                               env={**ENV, "ETOK_STEP": str(step)}, timeout=300)
            assert p.returncode == 0, p.stderr.decode()[-3000:]
            got = list(map(int, p.stdout.split()))
            ends = list(range(step, len(data), step)) + [len(data)]
            want = [len(ref._core_bpe.encode_single_piece(data[:e])) for e in ends]
            assert got == want, step


def test_batch_of_lines(etok, model, ref, corpora, tmp_path):  # type: ignore[no-untyped-def]
    text = corpora["multilingual"][:30000] + "\n\n" + "x" * 500 + "\n \U0001f600 "
    f = tmp_path / "lines.txt"
    f.write_text(text)
    p = etok_run(etok, "lines", model, str(f))
    assert p.returncode == 0
    assert list(map(int, p.stdout.split())) == [len(ref.encode_ordinary(x)) for x in text.split("\n")]


from test_hf import vocab  # noqa: E402,F401  (the GGUF vocabularies, fetched once)


@pytest.mark.parametrize("name", ["llama-spm", "nomic-bert-moe"])
def test_sentencepiece_models(etok, vocab, corpora, tmp_path, name):  # type: ignore[no-untyped-def]
    # SentencePiece BPE (Llama-2) and Unigram (XLM-R 250k), encoded whole and line by line,
    # against sentencepiece's own ids (test_hf.py checks edgetok's Python path against them)
    import sentencepiece as spm

    import reference
    from edgetok.compiler import compile_source

    sp = spm.SentencePieceProcessor(model_proto=reference.sentencepiece_proto_from_gguf(vocab[name]))
    model = tmp_path / "m.etok"
    model.write_bytes(compile_source(vocab[name]))
    rng = random.Random(7)
    noise = bytes(rng.randrange(256) for _ in range(3000)).decode("utf-8", "replace")
    text = corpora["multilingual"][:20000] + "\n" + corpora["code"][:10000] + "\n" + noise
    f = tmp_path / "t.txt"
    f.write_text(text)
    p = etok_run(etok, "encode", str(model), str(f))
    assert p.returncode == 0 and [int(x) for x in p.stdout.split()] == sp.encode(text)
    p = etok_run(etok, "lines", str(model), str(f))
    assert p.returncode == 0
    assert list(map(int, p.stdout.split())) == [len(x) for x in sp.encode(text.split("\n"))]


def test_model_that_drops_bytes(etok, vocab, corpora, tmp_path):  # type: ignore[no-untyped-def]
    # MPT's vocabulary has no token for some bytes (control characters, bytes UTF-8 never
    # uses): the C core drops them before merging; checked against the Python path, which
    # test_hf.py checks against tokenizers
    import edgetok
    from edgetok.compiler import compile_source

    enc = edgetok.load(vocab["mpt"])
    assert enc.model.drops_bytes
    model = tmp_path / "mpt.etok"
    model.write_bytes(compile_source(vocab["mpt"]))
    text = corpora["code"][:30000] + "\x03\x04 tab\x0b\x11x \x13\x13\x13 " + "\x05" * 300 + "ok"
    f = tmp_path / "t.txt"
    f.write_text(text)
    p = etok_run(etok, "encode", str(model), str(f))
    # the C core alone: no added-token matching (Python does that), as enc.model.encode
    assert p.returncode == 0 and [int(x) for x in p.stdout.split()] == enc.model.encode(text.encode())[0]
    p = etok_run(etok, "split", str(model), str(f))
    assert p.returncode != 0  # refused: tokens no longer cover the text
