"""Parallel work is exact: shard cuts, batches, single large texts, the CLI's --jobs, forks;
and decode streams live."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference
from strategies import texts

import edgetok.parallel as parallel


SHARD_TEXTS = st.lists(st.one_of(texts, st.sampled_from(["\n", "\r\n", "a b", "x\ny", "  \n",
                                                         "\n\n z"])), max_size=30).map("".join)


@given(SHARD_TEXTS)
@settings(max_examples=400, deadline=None)
def test_every_shard_cut_is_exact(enc, ref, text):  # type: ignore[no-untyped-def]
    reference.check_shard_cuts(enc, ref, text)


@pytest.mark.slow
@given(SHARD_TEXTS)
@settings(max_examples=4000, deadline=None)
def test_every_shard_cut_is_exact_long(enc, ref, text):  # type: ignore[no-untyped-def]
    reference.check_shard_cuts(enc, ref, text)


@pytest.fixture
def small_shards(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(parallel, "SHARD_MIN_BYTES", 64)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "JOB_MIN_CHARS", 1)
    monkeypatch.setattr(parallel, "cores", lambda: 8)  # many shards even on a 2-core machine


def test_encode_parallel_real_text(enc, ref, corpora, small_shards):  # type: ignore[no-untyped-def]
    for kind, text in corpora.items():
        text = text[:200000]
        assert enc.encode_parallel(text, num_threads=4) == ref.encode_ordinary(text), kind
        assert enc.count_parallel(text, num_threads=3) == len(ref.encode_ordinary(text))
    text = "<|endoftext|> a\nb " * 2000
    assert enc.encode_parallel(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    # one special token in a long text (the parallel paths look for their heads in its bytes)
    text = "a <b " * 3000 + "<|endoftext|>" + " c<|" * 3000
    for fn in (enc.encode_parallel, enc.count_parallel):
        with pytest.raises(ValueError):
            fn(text)
    for kw in ({"disallowed_special": ()}, {"allowed_special": "all"},
               {"allowed_special": {"<|endoftext|>"}}):
        want = ref.encode(text, **kw)
        assert enc.encode_parallel(text, **kw) == want, kw
        assert enc.count_parallel(text, **kw) == len(want), kw
    assert enc.count_parallel("a <|b " * 3000) == len(ref.encode("a <|b " * 3000))


@given(texts)
@settings(max_examples=300, deadline=None)
def test_encode_parallel_generated(enc, ref, text):  # type: ignore[no-untyped-def]
    from unittest import mock

    text = text * 8
    with mock.patch.object(parallel, "SHARD_MIN_BYTES", 16), mock.patch.object(parallel, "cores", lambda: 8):
        assert enc.encode_parallel(text, num_threads=4) == ref.encode_ordinary(text)


def test_no_cut_degrades_to_sequential(enc, ref, small_shards):  # type: ignore[no-untyped-def]
    for text in ("x" * 5000, " " * 5000, "\n" * 3000, "1" * 4000):
        assert enc.encode_parallel(text) == ref.encode_ordinary(text)


@given(st.lists(st.one_of(texts, st.sampled_from(["", "<|endoftext|>", "a<|", "x\ud800 y"])),
                min_size=1, max_size=40))
@settings(max_examples=150, deadline=None)
def test_batches_generated(enc, ref, docs):  # type: ignore[no-untyped-def]
    """Batch jobs in chunks of a few characters on three threads (the caller readies, lists and
    encodes, helpers encode): every document's ids are tiktoken's, those holding special-token
    heads or lone surrogates (left to the caller's path) included."""
    from unittest import mock

    with mock.patch.object(parallel, "PARALLEL_MIN_BYTES", 1), \
            mock.patch.object(parallel, "JOB_MIN_CHARS", 1), \
            mock.patch.object(parallel, "CHUNK_CHARS", 7), \
            mock.patch.object(parallel, "cores", lambda: 8):
        want = ref.encode_ordinary_batch(docs)
        assert enc.encode_ordinary_batch(docs, num_threads=3) == want
        assert enc.count_batch(docs, num_threads=3, disallowed_special=()) == [len(w) for w in want]
        ids, offs = enc.encode_batch_flat(docs, num_threads=3, disallowed_special=())
        assert [list(ids[offs[i]:offs[i + 1]]) for i in range(len(docs))] == want
        special = ref.encode_batch(docs, allowed_special="all")
        assert enc.encode_batch(docs, num_threads=3, allowed_special="all") == special


def test_batches_across_threads(enc, ref, corpora, small_shards):  # type: ignore[no-untyped-def]
    docs = [corpora["multilingual"][i:i + 700] for i in range(0, 100000, 700)] + ["", "x"]
    want = ref.encode_ordinary_batch(docs)
    for n in (1, 2, 5):
        assert enc.encode_ordinary_batch(docs, num_threads=n) == want
        assert enc.count_batch(docs, num_threads=n) == [len(w) for w in want]
    assert enc.encode_batch(["a<|endoftext|>"] * 50, allowed_special="all") == \
        ref.encode_batch(["a<|endoftext|>"] * 50, allowed_special="all")


def test_helpers_serve_many_models_and_callers(ref, corpora, small_shards):  # type: ignore[no-untyped-def]
    """The helper threads wait for jobs without the GIL and keep the workspace of the model
    they served last (_ids.job_serve): jobs of models that come and go (each a new key, some
    freed while a helper still holds their workspace), from several calling threads at once,
    all give tiktoken's ids, the helpers encode chunks of them, and nothing hangs; a job made
    and dropped before it runs was never posted."""
    import gc
    import threading

    import edgetok
    from edgetok import _ffi
    from edgetok._ids import job_helped, job_new

    base, other = edgetok.get_encoding("cl100k_base"), edgetok.get_encoding("o200k_base")
    docs = [corpora["multilingual"][i:i + 500] for i in range(0, 40000, 500)]
    docs += [corpora["code"][i:i + 900] for i in range(0, 40000, 900)]
    want = {"cl100k_base": ref.encode_ordinary_batch(docs),
            "o200k_base": reference.tiktoken_encoding("o200k_base").encode_ordinary_batch(docs)}
    errors: list[BaseException] = []

    def caller(seed: int) -> None:
        try:
            for r in range(9):
                enc = (base, other, edgetok.load(base.model.source))[(seed + r) % 3]
                cut = seed * 7 % 50 if r % 2 else 0
                expect = want["o200k_base" if enc is other else "cl100k_base"][cut:]
                assert enc.encode_ordinary_batch(docs[cut:], num_threads=4) == expect
                assert enc.count_batch(docs[cut:], num_threads=4) == [len(w) for w in expect]
                del enc
                gc.collect()
        except BaseException as e:  # (raised below, in the test's thread)
            errors.append(e)

    helped = job_helped()
    callers = [threading.Thread(target=caller, args=(i,)) for i in range(3)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(timeout=300)
        assert not t.is_alive(), "a batch hung"
    if errors:
        raise errors[0]
    assert job_helped() > helped
    m = base.model
    for _ in range(5):  # made for 4 threads, never run: dropped
        job, threads = job_new(0, _ffi._ENCODE_ADDR, _ffi._EVICTIONS_ADDR, _ffi._NEED_ADDR,
                               list(docs), (), m._bound0, m._bound1, _ffi.FINAL, 64, 4, 1,
                               1 << 16, 1024, 1 << 18, None, m, m._key, [])
        assert threads == 4
        del job
    assert base.encode_ordinary_batch(docs, num_threads=4) == want["cl100k_base"]


def test_batches_without_helper_threads(tmp_path):  # type: ignore[no-untyped-def]
    """A process that cannot start the helper threads still gets its batches, exact, from
    the calling thread alone (the job posted for helpers that never come)."""
    script = tmp_path / "no_threads.py"
    script.write_text(f"""
import _thread, sys
sys.path[:0] = [{str(Path(__file__).parents[1])!r}, {str(Path(__file__).parent)!r}]
import reference, edgetok, edgetok.parallel as parallel
from edgetok._ids import job_helped

def no_threads(*args):
    raise RuntimeError("can't start new thread")

_thread.start_new_thread = no_threads
parallel.JOB_MIN_CHARS = 1
parallel.cores = lambda: 4  # (a one-core machine, or affinity, would post no job at all)
enc = edgetok.get_encoding("o200k_base")
text = reference.corpora()["multilingual"]
docs = [text[i:i + 600] for i in range(0, 30000, 600)]
want = reference.tiktoken_encoding("o200k_base").encode_ordinary_batch(docs)
assert enc.encode_ordinary_batch(docs, num_threads=4) == want
assert enc.count_batch(docs, num_threads=4) == [len(w) for w in want]
assert parallel.helpers_started and job_helped() == 0
""")
    subprocess.run([sys.executable, str(script)], check=True, timeout=300)


class _Lying(str):
    """A str whose isascii says yes whatever it holds."""

    def isascii(self) -> bool:
        return True


def test_ascii_text_read_in_place(enc, ref, corpora):  # type: ignore[no-untyped-def]
    """ASCII documents of 256+ characters and long ASCII texts are read from the str itself
    (no UTF-8 copy; _ids.c ascii_utf8): the ids are tiktoken's, on one and two threads, next
    to documents that are not ASCII, and a str subclass that claims to be ASCII is not
    believed."""
    code, multi = corpora["code"], corpora["multilingual"]
    docs = [code[i:i + 3000] for i in range(0, 150000, 3000)]
    docs += [multi[i:i + 900] for i in range(0, 30000, 900)] + ["x" * 255, "y" * 256]
    docs += [_Lying(multi[:5000]), _Lying("é" * 300)]
    want = ref.encode_ordinary_batch([str(d) for d in docs])
    for n in (1, 2):
        assert enc.encode_ordinary_batch(docs, num_threads=n) == want
        assert enc.count_batch(docs, num_threads=n) == [len(w) for w in want]
    for text in (code[:200000], _Lying(multi[:100000]), _Lying("é" * 5000)):
        assert enc.encode_ordinary(text) == ref.encode_ordinary(str(text))
        assert enc.count(text) == len(ref.encode_ordinary(str(text)))


# characters of every UTF-8 width (1-4 bytes), the ends of the 2- and 3-byte ranges, and lone
# surrogates (no UTF-8: the caller's path replaces them as tiktoken does)
_WIDTHS = ["a", " ", "\x7f", "\x80", "\u00e9", "\u07ff", "\u0800", "\u2019", "\u4e2d", "\ud7ff",
           "\ue000", "\uffff", "\U00010000", "\U0001f600", "\U0010ffff", "\ud800", "\udfff"]


@given(st.lists(st.lists(st.one_of(st.sampled_from(_WIDTHS),
                                   st.builds(lambda n: "ab c"[n % 4] * n, st.integers(1, 40))),
                         max_size=40).map("".join), min_size=1, max_size=12))
@settings(max_examples=200, deadline=None)
def test_batch_utf8_of_every_width(enc, ref, docs):  # type: ignore[no-untyped-def]
    """A document that is not an ASCII str of 256+ characters is made UTF-8 by the main thread
    from its code points (_ids.c utf8_doc: ASCII runs 16 or 8 characters at a time, the rest
    one by one): ASCII runs of every length around those blocks, next to characters of every
    width, give tiktoken's ids and their bytes are the document's UTF-8, on one and two
    threads (the second fresh copies: no str here holds a UTF-8 copy of its own)."""
    from unittest import mock

    docs += [d * 20 for d in docs[:2]]  # (long ones too: 256+ characters, not ASCII)
    want = ref.encode_ordinary_batch(docs)
    for n in (1, 2):
        fresh = [d.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass") for d in docs]
        with mock.patch.object(parallel, "JOB_MIN_CHARS", 1), \
                mock.patch.object(parallel, "CHUNK_CHARS", 50):
            got = enc.encode_ordinary_batch(fresh, num_threads=n)
            assert enc.count_batch(fresh, num_threads=n) == [len(w) for w in want]
        assert got == want
        for d, ids in zip(docs, got):
            if not any("\ud800" <= c <= "\udfff" for c in d):
                assert enc.decode_bytes(ids) == d.encode()


def test_batch_document_over_a_million_characters(enc, ref, corpora):  # type: ignore[no-untyped-def]
    """A document of more than 2**20 characters that is not ASCII is encoded by CPython as
    before (its code points would take 4 bytes each: _ids.c UTF8_MAX), next to short ones."""
    multi = corpora["multilingual"]
    big = (multi * (2_200_000 // len(multi) + 1))[:1_100_000]
    docs = [multi[:3000], big, "\u2019" * 5]
    want = [len(ref.encode_ordinary(d)) for d in docs]
    assert enc.count_batch(docs, num_threads=2) == want
    assert enc.encode_ordinary_batch(docs[1:2])[0] == enc.encode_ordinary(big)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_after_use(enc, small_shards):  # type: ignore[no-untyped-def]
    docs = [f"hello world {i} " * 300 for i in range(200)]
    want = enc.encode_ordinary_batch(docs, num_threads=2)  # the helpers exist now
    pid = os.fork()
    if pid == 0:  # child: the helper threads did not survive; new ones must be made
        import _thread

        ok = enc.encode_ordinary_batch(docs, num_threads=2) == want
        os._exit(0 if ok and parallel.helpers_started and _thread._count() > 0 else 1)
    deadline = time.monotonic() + 120
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if done[0] == 0:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise AssertionError("the forked child's batch hung")
    assert os.waitstatus_to_exitcode(done[1]) == 0
    assert enc.encode_ordinary_batch(docs, num_threads=2) == want


def cli(*args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", *args], input=input,
                       capture_output=True, env={**os.environ, **(env or {})}, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_cli_jobs_same_ids(ref, corpora, tmp_path):  # type: ignore[no-untyped-def]
    text = (corpora["english"] + corpora["code"])[:1_400_000]
    f = tmp_path / "big.txt"
    f.write_text(text)
    want = ref.encode_ordinary(text)
    for jobs in ("1", "2", "3"):
        out = cli("encode", str(f), "-j", jobs, env={"EDGETOK_CHUNK": "700000"})
        assert list(map(int, out.split())) == want, jobs
        out = cli("count", str(f), str(f), "-j", jobs, env={"EDGETOK_CHUNK": "600000"})
        assert [line.split()[0] for line in out.splitlines()] == [str(len(want)).encode()] * 2 + \
            [str(2 * len(want)).encode()]


def test_decode_streams_live(ref):  # type: ignore[no-untyped-def]
    # ids arrive one line at a time; each character must come out before stdin closes, and a
    # character split across ids must not come out broken
    text = "Hello \U0001f600 w\u00f6rld"
    ids = ref.encode(text)
    p = subprocess.Popen([sys.executable, "-m", "edgetok_cli.main", "decode"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    got = b""
    for i in ids:
        p.stdin.write(f"{i}\n".encode())
        p.stdin.flush()
        want_now = ref.decode_bytes(ids[: ids.index(i) + 1])
        while len(got) < len(want_now) and want_now.decode("utf-8", "ignore").encode() != got:
            chunk = os.read(p.stdout.fileno(), 64)
            assert chunk
            got += chunk
        got.decode("utf-8")  # never a broken character
    p.stdin.close()
    got += p.stdout.read()
    p.wait(30)
    assert got.decode() == text
