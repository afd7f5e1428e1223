"""The fast paths give exactly the ids of the plain ones (and tiktoken's): batches through one
GIL-free C call per chunk of documents, flat batch results, numpy output."""
from __future__ import annotations

import gc
import sys
import time
from array import array

import pytest

import edgetok.parallel as parallel
from edgetok._ffi import Model, compile_bpe
from edgetok.encoding import Encoding


@pytest.fixture
def threads(monkeypatch):  # type: ignore[no-untyped-def]
    """Batches go parallel whatever their size, in many small chunks, even on 2 cores."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "JOB_MIN_CHARS", 1)
    monkeypatch.setattr(parallel, "CHUNK_CHARS", 300)
    monkeypatch.setattr(parallel, "cores", lambda: 8)


def documents(corpora: dict[str, str]) -> list[str]:
    docs = []
    for text in corpora.values():
        docs += [text[i:i + 999] for i in range(0, 60000, 999)]
    docs += ["", "x", " ", "\n\n", "x\ud800y\udfff", "\U0001f600" * 5, "a" * 20000,
             "".join(chr(0x41 + (i * 7919) % 57) for i in range(9000)),  # a long piece
             "x y " * 80000,  # more ids than a thread's batch buffer holds at first
             "<|endofprompt|>", "a <|endoftext|> b", "<|", "|>"]
    return docs


def flat_lists(ids, offsets) -> list[list[int]]:  # type: ignore[no-untyped-def]
    return [list(map(int, ids[offsets[i]:offsets[i + 1]])) for i in range(len(offsets) - 1)]


@pytest.mark.parametrize("n", [1, 2, 5])
def test_batches_equal_tiktoken(enc, ref, corpora, threads, n):  # type: ignore[no-untyped-def]
    docs = documents(corpora)
    want = ref.encode_ordinary_batch(docs)
    assert enc.encode_ordinary_batch(docs, num_threads=n) == want
    assert enc.encode_ordinary_batch(tuple(docs), num_threads=n) == want  # any sequence
    assert enc.encode_batch(docs, num_threads=n, disallowed_special=()) == want
    assert enc.count_batch(docs, num_threads=n, disallowed_special=()) == [len(w) for w in want]
    ids, offsets = enc.encode_batch_flat(docs, num_threads=n, disallowed_special=())
    assert isinstance(ids, array) and ids.typecode == "I" and offsets.typecode == "q"
    assert len(offsets) == len(docs) + 1 and offsets[0] == 0
    assert flat_lists(ids, offsets) == want
    special = ref.encode_batch(docs, allowed_special="all")
    assert enc.encode_batch(docs, num_threads=n, allowed_special="all") == special
    assert enc.count_batch(docs, num_threads=n, allowed_special="all") == [len(w) for w in special]
    assert flat_lists(*enc.encode_batch_flat(docs, num_threads=n, allowed_special="all")) == special
    some = {"<|endoftext|>"}
    assert enc.encode_batch(docs[:-4] + docs[-3:], num_threads=n, allowed_special=some) == \
        ref.encode_batch(docs[:-4] + docs[-3:], allowed_special=some)


def test_disallowed_special_raises_like_tiktoken(enc, ref, threads):  # type: ignore[no-untyped-def]
    docs = ["plain text"] * 40 + ["a <|endoftext|>", "<|fim_prefix|>"]
    for call in (enc.encode_batch, enc.count_batch, enc.encode_batch_flat):
        with pytest.raises(ValueError, match="<|endoftext|>"):
            call(docs, num_threads=3)
    with pytest.raises(ValueError):
        ref.encode_batch(docs)
    kw = {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()}
    assert enc.encode_batch(docs, num_threads=3, **kw) == ref.encode_batch(docs, **kw)
    with pytest.raises(ValueError, match="fim_prefix"):
        enc.encode_batch(docs, num_threads=3, allowed_special={"<|endoftext|>"})


def test_flat_numpy_and_encode_to_numpy(enc, ref, corpora, threads):  # type: ignore[no-untyped-def]
    np = pytest.importorskip("numpy")
    docs = documents(corpora)[:50] + [""]
    ids, offsets = enc.encode_batch_flat(docs, numpy=True, num_threads=2)
    assert ids.dtype == np.uint32 and offsets.dtype == np.int64
    assert flat_lists(ids, offsets) == ref.encode_ordinary_batch(docs)
    ids[:1] = 7  # writable: the arrays own their memory
    for text in ("hello world", "", corpora["multilingual"][:30000], "x\ud800", "<|endoftext|>"):
        got = enc.encode_to_numpy(text, disallowed_special=())
        assert got.dtype == np.uint32 and got.tolist() == ref.encode(text, disallowed_special=())
    assert enc.encode_to_numpy("<|endoftext|>", allowed_special="all").tolist() == [100257]
    with pytest.raises(ValueError):
        enc.encode_to_numpy("<|endoftext|>")


def test_batch_type_errors(enc):  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError):
        enc.encode_ordinary_batch(["a", b"b"])  # type: ignore[list-item]


def test_batch_errors_stop_every_thread(enc, ref, corpora, threads):  # type: ignore[no-untyped-def]
    """An error in the middle of a parallel batch stops the job on every thread and is raised:
    a document that is not a str (met by the thread that readies documents), a workspace that
    cannot grow (met by whichever thread encodes the long piece, a helper's error raised by the
    caller). Nothing hangs, and the next batch is exact."""
    import edgetok
    from edgetok import _ffi

    enc = edgetok.load(enc.model.source)  # workspaces of its own, in every thread: not grown
    docs = documents(corpora)[:60]
    for call in (enc.encode_ordinary_batch, enc.count_batch, enc.encode_batch_flat):
        with pytest.raises(TypeError):
            call(docs + [b"bytes"] + docs, num_threads=3)  # type: ignore[operator]
    real = _ffi.Model._ws

    def no_growth(self, piece: int = 0, slots: int = 0) -> object:  # type: ignore[no-untyped-def]
        if piece:
            raise MemoryError("no workspace this time")
        return real(self, piece, slots)

    long_piece = docs[:30] + ["a" * 20000] + docs[30:]
    refs = sys.getrefcount(long_piece)
    _ffi.Model._ws = no_growth  # type: ignore[method-assign]
    try:
        for call in (enc.encode_ordinary_batch, enc.count_batch, enc.encode_batch_flat) * 4:
            for n in (1, 3):
                with pytest.raises(MemoryError, match="no workspace this time"):
                    call(long_piece, num_threads=n)  # type: ignore[operator]
    finally:
        _ffi.Model._ws = real  # type: ignore[method-assign]
    deadline = time.monotonic() + 30  # (a helper may still hold its last job a moment)
    while gc.collect() >= 0 and sys.getrefcount(long_piece) != refs and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sys.getrefcount(long_piece) == refs  # the stopped jobs were let go, documents too
    want = ref.encode_ordinary_batch(long_piece)
    assert enc.encode_ordinary_batch(long_piece, num_threads=3) == want
    assert enc.count_batch(long_piece, num_threads=3) == [len(w) for w in want]


def test_job_parts_are_checked(enc, ref):  # type: ignore[no-untyped-def]
    """A job over the parts of one text (encode_parallel's) takes only offsets inside the text,
    ascending, the last its end; the parts' ids, joined, are the text's."""
    from edgetok import _ffi
    from edgetok._ids import job_new, job_result, job_run

    def new(data: bytes, ends: list[int]) -> object:
        m = enc.model
        job, threads = job_new(3, _ffi._ENCODE_ADDR, _ffi._EVICTIONS_ADDR, _ffi._NEED_ADDR,
                               (data, ends), (), m._bound0, m._bound1, _ffi.FINAL, 8, 1, 1,
                               1 << 16, 1024, 1 << 18, None, m, m._key, [])
        assert threads == 1
        return job

    for ends in ([2, 1, 3], [5], [2], [-1, 3], [1, 2, 4], ["x", 3]):
        with pytest.raises(ValueError, match="bad part offsets"):
            new(b"abc", ends)  # type: ignore[arg-type]
    data = "Hello world, hello parts.\n\n  x".encode()
    job = new(data, [5, 5, 12, 27, len(data)])  # (cut anywhere: each part is its own text)
    enc.model._ws()
    assert job_run(job, enc.model._scratch.ws_addr, 0, -1, 0, True) is None
    ids, flagged = job_result(job)
    assert flagged == [] and ids == [i for a, b in [(0, 5), (5, 12), (12, 27), (27, len(data))]
                                     for i in ref.encode_ordinary(data[a:b].decode())]


def test_job_sink_errors_and_growing_between_chunks(enc, ref, corpora):  # type: ignore[no-untyped-def]
    """Python code run by the calling thread between chunks (here the flat sink) may replace its
    workspace, which the job goes on using (it was freed under it); a sink's error is the one
    raised (it was lost to a SystemError)."""
    from array import array

    import edgetok
    from edgetok import _ffi

    enc = edgetok.load(enc.model.source)
    m = enc.model
    docs = documents(corpora)[:120]
    out = array("I")

    def growing_sink(view: memoryview) -> None:
        out.frombytes(view)
        m._ws(m._scratch.ws_piece * 2)  # as a nested encode of a longer piece would

    offs, flagged = m.batch(2, docs, (), 1, growing_sink)
    o = array("q")
    o.frombytes(offs)
    assert not flagged and flat_lists(out, o) == ref.encode_ordinary_batch(docs)
    assert m._scratch.ws_piece > _ffi._DEFAULT_PIECE

    def failing_sink(view: memoryview) -> None:
        raise ValueError("the sink's own error")

    for n in (1, 2):
        with pytest.raises(ValueError, match="the sink's own error"):
            m.batch(2, docs * 3, (), n, failing_sink)


def test_piece_cache_grows_for_batches_of_long_documents(ref):  # type: ignore[no-untyped-def]
    """The cache-thrash stop on a chunk's last document grows the workspace too (a chunk of one
    long document never grew it: count_parallel's parts, batches of 100K-character texts)."""
    import random

    import edgetok
    from edgetok import _ffi

    enc = edgetok.get_encoding("cl100k_base")
    enc = edgetok.load(enc.model.source)
    rnd = random.Random(5)
    text = "".join(" " + "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz")
                                 for _ in range(rnd.randrange(4, 9))) for _ in range(60000))
    docs = [text[i:i + 100000] for i in range(0, len(text), 100000)]
    assert enc.count_batch(docs, num_threads=1) == [len(ref.encode_ordinary(d)) for d in docs]
    assert enc.model._scratch.ws_slots > _ffi._DEFAULT_SLOTS


def test_other_encodings(corpora, threads):  # type: ignore[no-untyped-def]
    import edgetok
    from reference import tiktoken_encoding

    docs = documents(corpora)[::3]
    for name in ("o200k_base", "r50k_base"):
        enc, ref = edgetok.get_encoding(name), tiktoken_encoding(name)
        want = ref.encode_ordinary_batch(docs)
        assert enc.encode_ordinary_batch(docs, num_threads=3) == want, name
        assert flat_lists(*enc.encode_batch_flat(docs, disallowed_special=())) == want, name


def test_added_tokens_in_batches(threads):  # type: ignore[no-untyped-def]
    # a byte vocabulary with a few merges, one special token and one added token (matched in
    # any text, as Hugging Face's non-special ones): batches must equal one call per document
    tokens = [(bytes([b]), b) for b in range(256)] + [(b"ab", 256), (b"abc", 257), (b" a", 258)]
    image = compile_bpe(tokens, [(b"<|s|>", 300), (b"ADD", 301)], "", "gpt2", added=frozenset({301}))
    enc = Encoding("tiny", Model.from_bytes(image))
    docs = ["abc ab ADDabc", "x ADD", "no added here", "<|s|> abc", ""] * 30
    assert enc.encode_ordinary_batch(docs, num_threads=3) == [enc.encode_ordinary(d) for d in docs]
    ok = docs[:3] * 10
    assert enc.encode_batch(ok, num_threads=3) == [enc.encode(d) for d in ok]
    assert enc.count_batch(ok, num_threads=3) == [enc.count(d) for d in ok]
    assert flat_lists(*enc.encode_batch_flat(ok)) == [enc.encode(d) for d in ok]
    with pytest.raises(ValueError):
        enc.encode_batch(docs, num_threads=3)


def test_sentencepiece_batches(corpora, tmp_path, threads):  # type: ignore[no-untyped-def]
    spm = pytest.importorskip("sentencepiece")
    import edgetok

    train = tmp_path / "t.txt"
    train.write_text(corpora["english"][:60000] + "\n" + corpora["multilingual"][:40000])
    spm.SentencePieceTrainer.train(input=str(train), model_prefix=str(tmp_path / "m"),
                                   vocab_size=1000, minloglevel=2)
    enc = edgetok.load(str(tmp_path / "m.model"))
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model"))
    docs = [corpora["multilingual"][i:i + 500] for i in range(0, 20000, 500)] + ["", " a  b "]
    want = sp.encode(docs)
    assert enc.encode_ordinary_batch(docs, num_threads=3) == want
    assert enc.count_batch(docs, num_threads=3) == [len(w) for w in want]
    assert flat_lists(*enc.encode_batch_flat(docs)) == want


def test_one_call_paths(enc, ref, corpora):  # type: ignore[no-untyped-def]
    m = enc.model
    heads = (b"<|",)
    m.encode(b"warm")  # a workspace and an id buffer for this thread
    for text in ("hello world", "", " ", "x" * 5000, corpora["multilingual"][:20000],
                 corpora["code"][:3000], "\U0001f600 done"):
        want = ref.encode_ordinary(text)
        data = text.encode()
        assert m.encode(data) == (want, len(data))
        assert m.count(data) == (len(want), len(data))
        got = m.encode_text(text, heads)
        assert got is None or got == want  # None: the id buffer is too small for it yet
        n = m.count_text(text, heads)
        assert n == len(want)
    assert m.encode_text("a <|endoftext|>", heads) is None  # a special token's head: not here
    assert m.count_text("a <|endoftext|>", heads) is None
    assert m.encode_text("x\ud800", heads) is None  # lone surrogate: the general path
    assert m.encode_text("x" * 3000 + "\ud800", heads) is None  # (a long one too)
    assert m.encode(bytearray(b"hello world"))[0] == ref.encode("hello world")
    assert m.encode("a b c".encode(), final=False) == (ref.encode("a b"), 3)


def test_long_text_utf8_kept_with_the_str(enc, ref, corpora):  # type: ignore[no-untyped-def]
    """A long str (2,048 characters or more) is read through the UTF-8 copy CPython keeps with
    it (_ids.c one: PyUnicode_AsUTF8AndSize, as tiktoken and the Rust peers read a str): the
    first call makes it, later calls on the same str read it; the ids are tiktoken's every time,
    for text of every UTF-8 width, and a long text with a lone surrogate is left to the general
    path, which replaces it as tiktoken does."""
    enc.count("a workspace for this thread")  # (without one, the general path)
    multi = corpora["multilingual"]
    texts = [multi[:30000], ("caf\u00e9 " * 600), "\U0001f600\u4e2d" * 1500,
             multi[:5000] + "\udfff" + multi[5000:9000]]
    for i, text in enumerate(texts):
        want = ref.encode_ordinary(text)  # (tiktoken keeps a UTF-8 copy with this str)
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")  # (fresh)
        size = sys.getsizeof(text)  # (CPython counts the UTF-8 copy in, once made)
        assert enc.count(text) == len(want)
        assert (sys.getsizeof(text) > size) == (i < 3), i  # (none for lone surrogates)
        for _ in range(2):
            assert enc.encode_ordinary(text) == want
            assert enc.count(text) == len(want)


def test_piece_cache_grows_for_long_varied_text(enc, ref):  # type: ignore[no-untyped-def]
    """A long text with more distinct pieces than the default piece cache holds gives the
    thread's workspace more slots after the call (at most _MAX_SLOTS, at most len/8); short
    texts never do; ids and counts stay tiktoken's before and after, on every fast path."""
    import random
    import threading

    from edgetok import _ffi

    rnd = random.Random(16)
    words = [" " + "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randrange(4, 9)))
             for _ in range(40000)]
    text = "".join(words) + " tail"
    want = ref.encode_ordinary(text)
    short = text[:_ffi._GROW_TEXT - 1]
    seen: list[object] = []

    def work() -> None:  # a thread of its own: a fresh workspace
        m = enc.model
        s = m._scratch
        m.encode(b"warm")
        assert s.ws_slots == _ffi._DEFAULT_SLOTS
        for _ in range(3):
            assert m.count_text(short) == len(ref.encode_ordinary(short))
        assert s.ws_slots == _ffi._DEFAULT_SLOTS  # short texts: never more
        assert m.count_text(text) == len(want)
        grown = s.ws_slots
        assert _ffi._DEFAULT_SLOTS < grown <= min(_ffi._MAX_SLOTS, len(text) // 8)
        data = text.encode()
        assert m.count(data) == (len(want), len(data))
        assert m.encode(data) == (want, len(data))
        got = m.encode_text(text)
        assert got is None or got == want
        assert s.ws_slots == grown  # once is enough: it does not grow again
        assert m.encode(b"hello world")[0] == ref.encode_ordinary("hello world")
        seen.append(grown)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert len(seen) == 1


def test_piece_cache_grows_on_a_first_call_and_for_batches(enc, ref):  # type: ignore[no-untyped-def]
    """A thread's first call (which has no workspace yet, so takes the general path) grows the
    cache as later ones do; and a batch of short documents that thrashes the cache gives the
    thread's workspace slots for the whole batch (one document's call is short, so the text's
    own rule never fires there). Ids and counts stay tiktoken's."""
    import random
    import threading

    from edgetok import _ffi

    rnd = random.Random(19)
    words = [" " + "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randrange(4, 9)))
             for _ in range(40000)]
    text = "".join(words)
    docs = [text[i:i + 4000] for i in range(0, len(text), 4000)]
    want = [len(ref.encode_ordinary(d)) for d in docs]
    whole = ref.encode_ordinary(text)
    seen: list[object] = []

    def first_call(how: str) -> None:  # a thread of its own: no workspace yet
        m = enc.model
        s = m._scratch
        assert s.ws_slots == 0
        data = text.encode()
        if how == "count":
            assert m.count(data) == (len(whole), len(data))
        else:
            assert m.encode(data)[0] == whole
        assert _ffi._DEFAULT_SLOTS < s.ws_slots <= min(_ffi._MAX_SLOTS, len(text) // 8)
        seen.append(how)

    def batches() -> None:
        m = enc.model
        s = m._scratch
        assert enc.count_batch(docs[:3], num_threads=1) == want[:3]  # short: the default
        assert s.ws_slots == _ffi._DEFAULT_SLOTS
        assert enc.count_batch(docs, num_threads=1) == want
        grown = s.ws_slots
        assert _ffi._DEFAULT_SLOTS < grown <= min(_ffi._MAX_SLOTS, len(text) // 8)
        got = enc.encode_ordinary_batch(docs, num_threads=1)
        assert [len(g) for g in got] == want and got[7] == ref.encode_ordinary(docs[7])
        assert s.ws_slots == grown
        seen.append("batch")

    for target, args in ((first_call, ("count",)), (first_call, ("encode",)), (batches, ())):
        t = threading.Thread(target=target, args=args)
        t.start()
        t.join()
    assert seen == ["count", "encode", "batch"]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_grown_workspace_keeps_the_cache(name, corpora):  # type: ignore[no-untyped-def]
    """et_ws_take: a workspace laid out anew takes the pieces the old one cached (short, long
    and huge ones): all of them where it has more slots (a larger cache puts each old set's
    pieces in sets of their own), some where it has fewer; and what it took is exact: the ids
    and counts with it are tiktoken's, on the texts that filled the old one and on others. A
    workspace grown by the binding (Model._ws) takes its old one's pieces the same way."""
    import random
    import threading

    import edgetok
    import reference
    from edgetok._native import ffi, lib

    enc = edgetok.get_encoding(name)
    ref = reference.tiktoken_encoding(name)
    h = enc.model._h
    kept: list[object] = []

    def ws(slots: int, piece: int = 1 << 13):  # type: ignore[no-untyped-def]
        size = lib.et_ws_size_slots(piece, slots)
        mem = ffi.new("uint64_t[]", (size + 7) // 8)
        kept.append(mem)
        w = lib.et_ws_init_slots(h, mem, size, slots)
        assert w != ffi.NULL
        return w

    def check(w, text: str) -> None:  # type: ignore[no-untyped-def]
        data = text.encode()
        want = ref.encode_ordinary(text)
        out = ffi.new("uint32_t[]", len(data) + 1)
        res = ffi.new("size_t[2]")
        assert lib.et_encode(w, data, len(data), lib.ET_FINAL, out, len(data) + 1, res,
                             res + 1) == 0
        assert list(out[0:res[0]]) == want
        assert lib.et_count(w, data, len(data), lib.ET_FINAL, res, res + 1) == 0
        assert res[0] == len(want)

    rnd = random.Random(23)
    words = [" " + "".join(rnd.choice("abcdefghijklmnopqrstuvwxyzéß") for _ in range(rnd.randrange(3, 14)))
             for _ in range(30000)]
    texts = ["".join(words), corpora["multilingual"], "-" * 40 + " " + "=" * 90 + "\n" + "ab" * 70,
             corpora["code"][:50000]]  # (runs of dashes: the huge slots)
    old = ws(16384)
    for t in texts:
        check(old, t)
    big = ws(32768)
    n = lib.et_ws_take(big, old)
    assert n > 12000  # (most of 16384 short slots, 4096 long ones and 512 huge ones)
    assert lib.et_ws_take(ws(32768), ws(16384)) == 0  # (an empty cache: nothing)
    bigger = ws(65536, 1 << 16)  # (and room for longer pieces)
    assert lib.et_ws_take(bigger, big) == n  # nothing lost when it grows
    small = ws(16384)
    assert 0 < lib.et_ws_take(small, bigger) <= n
    assert lib.et_ws_take(small, small) == ffi.cast("size_t", -1)  # (bad arguments)
    for w in (big, bigger, small):
        for t in texts + [corpora["english"], "é" * 999 + "中文" * 300, "".join(words[::-1])]:
            check(w, t)

    def binding() -> None:  # a thread of its own: its workspace grows, pieces kept
        s = enc.model._scratch
        enc.model.encode(texts[0].encode())
        before = s.ws
        enc.model._grow(len(texts[0]) * 8)
        assert s.ws != before
        assert lib.et_ws_take(ws(s.ws_slots), s.ws) >= n // 2
        check(s.ws, texts[0])
        kept.append("binding")

    t = threading.Thread(target=binding)
    t.start()
    t.join()
    assert kept[-1] == "binding"


def test_large_scratch_whole_and_aligned() -> None:
    """Scratch arrays of _HUGE_MIN bytes or more (grown workspaces, long texts' ids) come from
    the binding's scratch_huge: all n items there and writable at both ends, 2 MB-aligned (so
    that the kernel can back them with 2 MB pages); smaller ones from malloc, as before."""
    from edgetok import _ffi
    from edgetok._native import ffi

    for ctype, n in (("uint32_t[]", 1000), ("uint32_t[]", _ffi._HUGE_MIN // 4 - 1),
                     ("uint32_t[]", _ffi._HUGE_MIN // 4), ("size_t[]", 3 << 18),
                     ("uint64_t[]", (5 << 20) // 8 + 3)):
        a = _ffi._scratch(ctype, n)
        assert len(a) == n
        a[0], a[n - 1] = 7, 9
        assert (a[0], a[n - 1]) == (7, 9)
        if n * ffi.sizeof(ctype[:-2]) >= _ffi._HUGE_MIN:
            assert int(ffi.cast("uintptr_t", a)) % (1 << 21) == 0


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "r50k_base"])
def test_long_pieces_cached(name):  # type: ignore[no-untyped-def]
    """Pieces of 33-256 bytes (their own cache, keyed by a hash and taken only where the ids
    spell the piece) give tiktoken's ids the first time and every time after, around the
    length limits, with many ids, and where many pieces share few slots."""
    import random

    import edgetok
    import reference

    enc, ref = edgetok.get_encoding(name), reference.tiktoken_encoding(name)
    rnd = random.Random(33)
    parts = []
    for n in (31, 32, 33, 34, 63, 64, 65, 127, 128, 129, 200, 255, 256, 257, 300):
        parts += [" " + "-" * (n - 1), "\n" + "*" * (n - 1), " " * n, "+" + "-=" * (n // 2),
                  " " + "".join(rnd.choice("!#$%&()*+,-./:;<=>?@[]^_{|}~") for _ in range(n - 1))]
    parts += [" " + "".join(rnd.choice("~-=*#") for _ in range(rnd.randrange(33, 120)))
              for _ in range(3000)]  # more pieces than the default table's 256 slots
    text = "x".join(parts)
    want = ref.encode_ordinary(text)
    for _ in range(3):
        assert enc.encode_ordinary(text) == want
        assert enc.count(text, disallowed_special=()) == len(want)
    for p in parts[:75]:
        assert enc.encode_ordinary(p) == ref.encode_ordinary(p)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_many_id_pieces_cached(name):  # type: ignore[no-untyped-def]
    """Words of rare letters (CJK extension A, Cyrillic extended, Georgian, Ethiopic: a token
    or more a byte) make pieces of 8-32 bytes with 4-7 ids (the long slots, two a set, the one
    used last first) and with more (the hashed table, taken only where the ids spell the
    piece), many more of them than the default tables hold, in an order that keeps evicting:
    tiktoken's ids the first time and every time after."""
    import random

    import edgetok
    import reference

    enc, ref = edgetok.get_encoding(name), reference.tiktoken_encoding(name)
    rnd = random.Random(8)
    scripts = [(0x3400, 0x4DBF), (0x0500, 0x052F), (0x10A0, 0x10FF), (0x1200, 0x137F)]
    words = []
    for _ in range(6000):
        lo, hi = rnd.choice(scripts)
        words.append(" " * rnd.randrange(2) +
                     "".join(chr(rnd.randrange(lo, hi + 1)) for _ in range(rnd.randrange(3, 12))))
    order = [rnd.choice(words[:rnd.choice((50, 500, 6000))]) for _ in range(30000)]
    text = "\n".join(order)
    want = ref.encode_ordinary(text)
    assert max(len(ref.encode_ordinary(w)) for w in words) > 7
    for _ in range(3):
        assert enc.encode_ordinary(text) == want
        assert enc.count(text, disallowed_special=()) == len(want)
    for w in words[:300]:
        assert enc.encode_ordinary(w) == ref.encode_ordinary(w)
