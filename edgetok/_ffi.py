"""The one module that touches the C core: models, per-thread workspaces, status checks.

Every C status is checked here and turned into a Python exception carrying et_strerror's
text. The GIL is released during every C call (cffi does that), so threads encode in parallel;
each thread gets its own workspace and output buffer, reused across calls and grown only when
a longer text or piece shows up.
"""
from __future__ import annotations

import _thread  # (not threading: it imports functools and collections at start-up)
import itertools

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings
    from array import array
    from typing import Any, Iterable, Sequence

from ._ids import one as _one
from ._ids import to_list
from ._native import ffi, lib

FINAL = lib.ET_FINAL
SETTLE = lib.ET_SETTLE
# the C functions _ids' batch jobs call without the GIL
_ENCODE_ADDR = int(ffi.cast("uintptr_t", ffi.addressof(lib, "et_encode")))
_COUNT_ADDR = int(ffi.cast("uintptr_t", ffi.addressof(lib, "et_count")))
_EVICTIONS_ADDR = int(ffi.cast("uintptr_t", ffi.addressof(lib, "et_ws_evictions")))
_NEED_ADDR = int(ffi.cast("uintptr_t", ffi.addressof(lib, "et_ws_need")))
_SIZE_T = {4: "I", 8: "Q"}[ffi.sizeof("size_t")]  # the array typecode of size_t
NONE = 0xFFFFFFFF  # ET_NONE: no such id


class ModelError(ValueError):
    """A model file that cannot be loaded or compiled."""


def check(rc: int, what: str) -> None:
    if rc != lib.ET_OK:
        msg = f"{what}: {ffi.string(lib.et_strerror(rc)).decode()}"
        raise (MemoryError if rc == lib.ET_E_NOMEM else ModelError)(msg)


class _Scratch(_thread._local):
    """A thread's workspace and id buffer for one model."""

    ws = ffi.NULL
    ws_mem = None
    ws_piece = 0
    ws_slots = 0  # ws's piece-cache slots
    out = None
    out_cap = 0
    out_addr = 0  # out's address, for to_list
    ws_addr = 0  # ws's address, for _ids

    def __init__(self) -> None:  # (threading.local's class: once in each thread)
        self.res = ffi.new("size_t[2]")  # et_encode's *n_out and *consumed


_DEFAULT_PIECE = 4096
# The piece cache: PIECE_CACHE slots (832 KB) by default. After a call on a long text (at least
# _GROW_TEXT characters or bytes) that put a piece out of the cache for more than 1/_GROW_EVICT
# of its length (text with more distinct pieces than slots: 466 KB of English prose evicts
# ~1,200 times a pass from 16,384 slots, a few MB of man pages in 20 languages ~37,000), the
# thread's workspace gets more slots: len/8, a power of two, at most _MAX_SLOTS (52 bytes a
# slot: 13.6 MB), about 6 bytes per character of that text at most. Bounded, and only for those
# texts. A miss costs ~20 hits (a merge in the model's cold memory): at 1/1024, the English
# prose's count runs 634 -> 759 MB/s (csrc harness, 16,384 -> 32,768 slots). A batch (each
# document a call of its own) grows the same way, for all of its text, once a document evicted
# 4 pieces or more, and more than 1/_GROW_EVICT of its length (Model.batch: each thread's own).
_DEFAULT_SLOTS = 16384
_MAX_SLOTS = 1 << 18
_GROW_TEXT = 1 << 16
_GROW_EVICT = 1024
# scratch memory the C core writes before it reads: not cleared, so pages never used cost nothing
_scratch_new = ffi.new_allocator(should_clear_after_alloc=False)
# Scratch of _HUGE_MIN bytes or more (a grown workspace, long texts' ids and ends) comes from
# scratch_huge (_build.py): 2 MB-aligned, in 2 MB pages where Linux gives them, so its first use
# faults once per 2 MB, not 512 times. Measured on a 2-core KVM VM: growing the cache to 1.7 MB
# (allocation, layout, et_ws_take) 0.73-0.85 -> 0.19-0.21 ms; 14 MB touched 5.2-5.7 -> 0.65-0.8
# ms. Its last page is whole (at most 2 MB - 1 byte more resident).
_HUGE_MIN = 3 << 19
_huge_new = ffi.new_allocator(lib.scratch_huge, lib.scratch_free, should_clear_after_alloc=False)


def _scratch(ctype: str, n: int) -> Any:
    """A new array `ctype` of n items (e.g. "uint32_t[]"), not cleared (see _scratch_new)."""
    if n * ffi.sizeof(ctype[:-2]) < _HUGE_MIN:
        return _scratch_new(ctype, n)
    return _huge_new(ctype, n)


_KEEP_OUT = 1 << 22  # id buffers larger than this are not kept between calls


_keys = itertools.count(1)


class Model:
    """A loaded .etok model (read-only, shared by all threads)."""

    def __init__(self, handle: object, source: str, keepalive: object = None) -> None:
        self._h = ffi.gc(handle, lib.et_model_close, size=lib.et_model_size(handle))
        self.source = source
        self._keep = keepalive
        self._scratch = _Scratch()
        self._key = next(_keys)  # (batch helpers' workspaces are for one model: see job_serve)
        self.n_vocab: int = lib.et_model_n_vocab(handle)
        param = ffi.new("uint32_t *")
        self.pretok: int = lib.et_model_pretok(handle, param)
        self.pretok_param: int = param[0]
        self._regex = self.pretok == lib.ET_PRETOK_REGEX
        self.nfc: bool = bool(lib.et_model_nfc(handle))
        self.drops_bytes: bool = bool(lib.et_model_drops_bytes(handle))
        # et_encode_bound(len) = _bound0 + _bound1 * len (a unigram model's text may expand)
        self._bound0: int = lib.et_encode_bound(handle, 0)
        self._bound1: int = lib.et_encode_bound(handle, 1) - self._bound0
        be = ffi.new("uint32_t[2]")
        # a SentencePiece model's BOS and EOS ids (None: it has none, or is not SentencePiece)
        self.bos: int | None = None
        self.eos: int | None = None
        if lib.et_model_bos_eos(handle, be, be + 1) == lib.ET_OK:
            self.bos = None if be[0] == NONE else be[0]
            self.eos = None if be[1] == NONE else be[1]
        self._splitter: list | None = None  # type: ignore[type-arg]

    @classmethod
    def open(cls, path: str, *, hugepages: bool = False, verify: bool = False) -> "Model":
        flags = (lib.ET_LOAD_HUGEPAGES if hugepages else 0) | (lib.ET_LOAD_VERIFY if verify else 0)
        out = ffi.new("et_model **")
        rc = lib.et_model_open(path.encode(), flags, out)
        if rc == lib.ET_E_IO:
            raise FileNotFoundError(f"cannot open model {path!r}")
        check(rc, f"cannot load model {path!r}")
        return cls(out[0], path)

    @classmethod
    def from_bytes(cls, image: bytes, source: str = "<memory>") -> "Model":
        buf = ffi.new("uint64_t[]", (len(image) + 7) // 8)  # 8-byte aligned copy
        ffi.memmove(buf, image, len(image))
        out = ffi.new("et_model **")
        check(lib.et_model_from_buffer(buf, len(image), 0, out), f"cannot load model {source}")
        return cls(out[0], source, buf)

    # -- information ------------------------------------------------------------------------
    @property
    def pattern(self) -> str:
        return ffi.string(lib.et_model_pattern(self._h)).decode()

    @property
    def backing(self) -> str:
        return ffi.string(lib.et_model_backing(self._h)).decode()

    @property
    def size(self) -> int:
        return lib.et_model_size(self._h)

    @property
    def max_token_len(self) -> int:
        return lib.et_model_max_token_len(self._h)

    @property
    def kind(self) -> str:
        """The model family: "bpe" (tiktoken-style), "unigram" or "sp-bpe" (SentencePiece),
        "wordpiece" (BERT)."""
        k = lib.et_model_kind(self._h)
        return ("bpe" if k == lib.ET_MODEL_BPE else "unigram" if k == lib.ET_MODEL_UNIGRAM
                else "wordpiece" if k == lib.ET_MODEL_WORDPIECE else "sp-bpe")

    def encode_spans(self, data: bytes) -> tuple[list[int], list[int]]:
        """A WordPiece model's ids of data and, two numbers a token, the byte range of data
        each comes from (et_encode_spans)."""
        cap = max(len(data), 1)  # (at most an id per byte)
        out, spans, n = ffi.new("uint32_t[]", cap), ffi.new("size_t[]", 2 * cap), ffi.new("size_t *")
        while True:
            rc = lib.et_encode_spans(self._ws(), data, len(data), out, spans, cap, n)
            if rc == lib.ET_OK:
                return ffi.unpack(out, n[0]), ffi.unpack(spans, 2 * n[0])
            if rc != lib.ET_E_WORKSPACE:
                check(rc, "encode")
            self._ws(lib.et_ws_need(self._scratch.ws))

    def encode_piece(self, data: bytes) -> list[int]:
        """A BPE model's ids of data as one piece: no pretokenizer split (et_encode_piece)."""
        cap = max(len(data), 1)  # (at most an id per byte)
        out, n = ffi.new("uint32_t[]", cap), ffi.new("size_t *")
        while True:
            rc = lib.et_encode_piece(self._ws(), data, len(data), out, cap, n)
            if rc == lib.ET_OK:
                return ffi.unpack(out, n[0])
            if rc != lib.ET_E_WORKSPACE:
                check(rc, "encode")
            self._ws(lib.et_ws_need(self._scratch.ws))

    def wordpiece_ids(self) -> tuple[int, int | None, int | None]:
        """A WordPiece model's ([UNK], [CLS], [SEP]) ids (None where it has none)."""
        got = ffi.new("uint32_t[3]")
        check(lib.et_model_wordpiece(self._h, got, got + 1, got + 2), "a WordPiece model")
        unk, cls, sep = got[0], got[1], got[2]
        return unk, None if cls == NONE else cls, None if sep == NONE else sep

    @property
    def regex_split(self) -> bool:
        """Pieces are cut by the model's regexes in Python (no regex-free pretokenizer)."""
        return self.pretok == lib.ET_PRETOK_REGEX

    def _pieces(self, data: bytes) -> list[bytes]:
        """data cut by the model's regexes, applied in turn (each match and each gap a piece,
        as tokenizer.json's Split with the Isolated behaviour)."""
        if self._splitter is None:
            import json

            import regex

            self._splitter = [regex.compile(p) for p in json.loads(self.pattern)]
        pieces = [data.decode("utf-8", "surrogateescape")]
        for pat in self._splitter:
            out = []
            for p in pieces:
                at = 0
                for m in pat.finditer(p):
                    if m.start() > at:
                        out.append(p[at:m.start()])
                    if m.end() > m.start():
                        out.append(m.group())
                    at = m.end()
                if at < len(p):
                    out.append(p[at:])
            pieces = out
        return [p.encode("utf-8", "surrogateescape") for p in pieces]

    @property
    def backtracks(self) -> bool:
        """Long pieces take the linear backtracking encoder (else a heap, O(n log n))."""
        return bool(lib.et_model_backtracks(self._h))

    @property
    def pair_tables(self) -> bool:
        """Whether pairs of tokens are tested in C (is_canonical, canonical automata): models
        that backtrack, and those whose other tokens only ever are whole pieces (Llama-3)."""
        return bool(lib.et_model_pair_tables(self._h))

    @property
    def can_grow(self) -> bool:
        """Whether a piece growing at its end can be encoded incrementally (GrowingPiece)."""
        return (self.backtracks and not self.drops_bytes and not self.regex_split
                and self.kind == "bpe")

    def run_extends(self, data: bytes | bytearray, start: int, end: int, kind: int) -> int:
        """-1 unless every character of data[start:end] continues a run of that kind (RUNS);
        else the end of its last split character there, or start (et_run_extends)."""
        split = ffi.new("size_t *")
        src = ffi.from_buffer(data)
        try:
            ok = lib.et_run_extends(self._h, src, start, end, kind, split)
        finally:
            ffi.release(src)
        return int(split[0]) if ok else -1

    def piece_extends(self, data: bytes | bytearray, start: int, old_end: int, end: int) -> bool:
        """Whether data[start:end] is provably still one piece, data[start:old_end] having been
        the last piece of data[:old_end] (et_piece_extends)."""
        src = ffi.from_buffer(data)
        try:
            return bool(lib.et_piece_extends(self._h, src, start, old_end, end))
        finally:
            ffi.release(src)

    def verify(self) -> bool:
        return lib.et_model_verify(self._h) == lib.ET_OK

    def special_ids(self) -> list[int]:
        """Ids of the special tokens, added tokens matched in ordinary text included."""
        return [lib.et_model_special(self._h, i) for i in range(lib.et_model_n_specials(self._h))]

    def added_ids(self) -> list[int]:
        """Ids of the added tokens that ordinary text matches (Hugging Face's non-special)."""
        return [lib.et_model_special(self._h, i) for i in range(lib.et_model_n_specials(self._h))
                if lib.et_model_special_is_added(self._h, i)]

    def token_bytes(self, token: int) -> bytes | None:
        """The bytes of a token id, or None if the model has no such id."""
        if not 0 <= token < self.n_vocab:
            return None
        ptr = ffi.new("const uint8_t **")
        n = ffi.new("size_t *")
        if lib.et_token_bytes(self._h, token, ptr, n) != lib.ET_OK:
            return None
        return ffi.buffer(ptr[0], n[0])[:]

    def lookup(self, data: bytes) -> int | None:
        """The id of the ordinary token spelled by data, or None."""
        out = ffi.new("uint32_t *")
        return out[0] if lib.et_token_lookup(self._h, data, len(data), out) == lib.ET_OK else None

    # -- workspaces -----------------------------------------------------------------------
    def _ws(self, piece: int = 0, slots: int = 0) -> object:
        s = self._scratch
        if piece and piece <= s.ws_piece:  # would retry for ever
            raise RuntimeError(f"edgetok: the C core asked for a workspace for {piece} bytes "
                               f"and has one for {s.ws_piece} (a bug: please report it)")
        if s.ws == ffi.NULL or piece > s.ws_piece or slots > s.ws_slots:
            want = max(piece, _DEFAULT_PIECE, s.ws_piece * 2 if piece else s.ws_piece)
            n_slots = max(slots, s.ws_slots, _DEFAULT_SLOTS)
            size = lib.et_ws_size_slots(want, n_slots)
            mem = _scratch("uint64_t[]", (size + 7) // 8)
            ws = lib.et_ws_init_slots(self._h, mem, size, n_slots)
            if ws == ffi.NULL:
                raise MemoryError("cannot lay out an edgetok workspace")
            if s.ws != ffi.NULL:  # what the old one learned (its memory goes below)
                lib.et_ws_take(ws, s.ws)
            s.ws, s.ws_mem, s.ws_piece, s.ws_slots = ws, mem, want, n_slots
            s.ws_addr = int(ffi.cast("uintptr_t", ws))
        return s.ws

    def _after_long(self, n: int) -> None:
        """After a call on a text of n >= _GROW_TEXT characters or bytes: more piece-cache slots
        if the cache was too small for it (see _GROW_EVICT)."""
        s = self._scratch
        if s.ws == ffi.NULL or lib.et_ws_evictions(s.ws) * _GROW_EVICT < n:
            return
        self._grow(n)

    def _grow(self, n: int) -> None:
        """More piece-cache slots for text of about n characters or bytes: n/8, a power of two,
        at most _MAX_SLOTS."""
        slots = min(_MAX_SLOTS, 1 << ((n // 8).bit_length() - 1))
        if slots > self._scratch.ws_slots:
            self._ws(0, slots)

    def _out(self, n: int) -> object:
        s = self._scratch
        if s.out_cap < n:
            s.out_cap = max(n, 1024, s.out_cap * 2)
            s.out = _scratch("uint32_t[]", s.out_cap)
            s.out_addr = int(ffi.cast("uintptr_t", s.out))
        return s.out

    # -- the operations -------------------------------------------------------------------
    def encode(self, data: bytes, final: bool = True, settle: bool = False, dummy: bool = True
               ) -> tuple[list[int], int]:
        """Ids of data as ordinary text, and the bytes they cover (all of data when final; else
        up to the last safe cut, or with settle into a long last piece: see ET_SETTLE).
        dummy=False: a SentencePiece model adds no dummy whitespace (ET_NO_DUMMY)."""
        s = self._scratch
        final_flags = FINAL if dummy else FINAL | lib.ET_NO_DUMMY
        if final and s.ws_addr and not self._regex:  # one C call (_ids.one)
            ids = _one(0, _ENCODE_ADDR, s.ws_addr, s.out_addr, s.out_cap, data, (),
                       self._bound0, self._bound1, final_flags)
            if ids is not None:
                if len(data) >= _GROW_TEXT:
                    self._after_long(len(data))
                return ids, len(data)
        if self._regex:
            if not final:
                return [], 0  # pieces are known only once the text is complete
            return [i for ids in self._encode_batch(self._pieces(data)) for i in ids], len(data)
        flags = final_flags if final else SETTLE if settle else 0
        end = len(data)
        bound = self._bound0 + self._bound1 * end
        res = s.res
        out = self._out(max(bound, 1))
        src = ffi.from_buffer(data)
        pos = n = 0
        while True:
            rc = lib.et_encode(self._ws(), src + pos, end - pos, flags, out + n, bound - n,
                               res, res + 1)
            n += res[0]
            pos += res[1]
            if rc == lib.ET_OK:
                ids = to_list(s.out_addr, n)
                if end > _KEEP_OUT:
                    s.out, s.out_cap = None, 0
                if final and end >= _GROW_TEXT:  # (a thread's first call comes this way)
                    self._after_long(end)
                return ids, pos
            if rc != lib.ET_E_WORKSPACE:
                check(rc, "encode")
            self._ws(lib.et_ws_need(self._scratch.ws))

    def encode_text(self, text: str, heads: tuple = ()) -> list[int] | None:  # type: ignore[type-arg]
        """The ids of text (str) in one C call, or None where that quick path cannot say (a
        regex pretokenizer, no workspace yet, text not a str, or holding one of heads (UTF-8
        bytes) or lone surrogates, ids that might not fit the id buffer, any C status but ET_OK): the caller
        then takes the general path (encode of the text's bytes)."""
        s = self._scratch
        if not s.ws_addr or self._regex or type(text) is not str:
            return None
        ids = _one(0, _ENCODE_ADDR, s.ws_addr, s.out_addr, s.out_cap, text, heads,
                   self._bound0, self._bound1, FINAL)
        if len(text) >= _GROW_TEXT and ids is not None:
            self._after_long(len(text))
        return ids  # type: ignore[no-any-return]

    def count_text(self, text: str, heads: tuple = ()) -> int | None:  # type: ignore[type-arg]
        """The number of ids of text (str) in one C call, or None (see encode_text)."""
        s = self._scratch
        if not s.ws_addr or self._regex or type(text) is not str:
            return None
        n = _one(1, _COUNT_ADDR, s.ws_addr, 0, 0, text, heads, self._bound0, self._bound1, FINAL)
        if len(text) >= _GROW_TEXT and n is not None:
            self._after_long(len(text))
        return n  # type: ignore[no-any-return]

    def encode_many(self, datas: list[bytes]) -> list[list[int]]:
        """[encode(d)[0] for d in datas] in as few C calls as possible (one, usually)."""
        if self.regex_split:
            return [self.encode(d)[0] for d in datas]
        return self._encode_batch(datas)

    def _encode_batch(self, datas: list[bytes]) -> list[list[int]]:
        out_lists: list[list[int]] = []
        start = 0
        while start < len(datas):
            part = datas[start:]
            bufs = [ffi.from_buffer(d) for d in part]
            texts = ffi.new("char *[]", bufs)
            lens = ffi.new("size_t[]", [len(d) for d in part])
            counts = ffi.new("size_t[]", len(part))
            done = ffi.new("size_t *")
            cap = sum(lib.et_encode_bound(self._h, len(d)) for d in part) + 1
            out = self._out(cap)
            rc = lib.et_encode_batch(self._ws(), texts, lens, len(part), out, cap, counts, done)
            at = 0
            addr = int(ffi.cast("uintptr_t", out))
            for k in range(done[0]):
                out_lists.append(to_list(addr + 4 * at, counts[k]))
                at += counts[k]
            start += done[0]
            if rc == lib.ET_E_WORKSPACE:
                self._ws(lib.et_ws_need(self._scratch.ws))
            elif rc != lib.ET_OK:
                check(rc, "encode")
        if self._scratch.out_cap > _KEEP_OUT:
            self._scratch.out, self._scratch.out_cap = None, 0
        return out_lists

    def batch(self, mode: int, docs: list, heads: tuple, threads: int,  # type: ignore[type-arg]
              sink: object = None) -> tuple[Any, list[int]]:
        """docs (a list of str) as one batch job (_ids.job_new; see there): mode 0 a list of ids
        per document, 1 a count, 2 the ids to sink (called with each chunk's, a memoryview of
        uint32) and the documents' offsets in them (a bytearray of int64); and the indices of
        the documents left for the caller (holding one of heads or a lone surrogate, or refused
        by the C core: None / -1 / no ids in their place). The calling thread readies the
        documents and makes the results; up to threads - 1 helper threads (parallel.helpers)
        encode, without the GIL."""
        from ._ids import job_cancel, job_new, job_result
        from . import parallel as p

        errors: list[BaseException] = []  # a helper's, that stopped the job
        job, threads = job_new(mode, _ENCODE_ADDR if mode != 1 else _COUNT_ADDR, _EVICTIONS_ADDR,
                               _NEED_ADDR, docs, heads, self._bound0, self._bound1, FINAL,
                               p.CHUNK_CHARS, min(threads, p.cores()), p.JOB_MIN_CHARS,
                               _GROW_TEXT, _GROW_EVICT, _MAX_SLOTS, sink, self, self._key,
                               errors)
        try:
            if threads > 1 and not p.helpers_started:
                p.helpers()  # (they take the job, posted)
            self._run_job(job, True)
        except BaseException as e:
            job_cancel(job, -1, 0)  # (no helper takes the job from the board after this)
            # job_run's "stopped by an error": a helper's, appended before it stopped the job
            if errors and type(e) is RuntimeError:
                raise errors[0] from None
            raise
        return job_result(job)  # type: ignore[no-any-return]

    def parallel(self, mode: int, data: bytes, threads: int | None) -> Any:
        """encode(data)'s ids (mode 3) or count(data) (mode 1) on up to `threads` threads (None:
        all cores): data cut where no context can move a piece boundary (shard_cuts) into 8
        parts a thread, which one batch job spreads (the calling thread makes the list while
        others encode), so the ids are exactly the sequential ones."""
        from .parallel import CHUNK_CHARS, SHARD_MIN_BYTES, cores

        threads = min(threads or cores(), cores())
        if threads > 1 and len(data) >= 2 * SHARD_MIN_BYTES:
            cuts = self.shard_cuts(data, 8 * threads, min(CHUNK_CHARS, SHARD_MIN_BYTES))
            if cuts:
                got, flagged = self.batch(mode, (data, [*cuts, len(data)]), (), threads)
                if not flagged:  # (a part the C core refused: the whole text says why below)
                    return got if mode == 3 else sum(got)
        return self.encode(data)[0] if mode == 3 else self.count(data)[0]

    def _run_job(self, job: object, main: bool, stop: tuple[int, int, int, int] | None = None,
                 errors: list[BaseException] | None = None) -> None:
        """This thread's part of a batch job (from where it stopped for it: stop, as job_run
        gives it), its workspace grown where the job stops for it; a helper's error goes to
        errors before the job is stopped."""
        from ._ids import job_cancel, job_run

        k, at = -1, 0
        try:
            while True:
                if stop is not None:
                    k, at, need, total = stop
                    if need:
                        self._ws(need)
                    else:  # (the piece cache thrashed: see _ids.c grows)
                        self._grow(total)
                self._ws()
                s = self._scratch
                # held: Python code run between chunks (a signal handler, a finalizer) may
                # replace this thread's workspace, which the job goes on using
                mem = s.ws_mem  # noqa: F841
                stop = job_run(job, s.ws_addr, s.ws_slots, k, at, main)
                if stop is None:
                    return
        except BaseException as e:
            if errors is not None:
                errors.append(e)
            job_cancel(job, k, at)  # every thread stops; this one's chunk goes to the caller
            raise

    def count(self, data: bytes, final: bool = True, settle: bool = False) -> tuple[int, int]:
        """Number of ids of data as ordinary text, and the bytes they cover (as encode)."""
        s = self._scratch
        if final and s.ws_addr and not self._regex:  # one C call (_ids.one)
            n = _one(1, _COUNT_ADDR, s.ws_addr, 0, 0, data, (), self._bound0, self._bound1, FINAL)
            if n is not None:
                if len(data) >= _GROW_TEXT:
                    self._after_long(len(data))
                return n, len(data)
        if self._regex:
            ids, used = self.encode(data, final)
            return len(ids), used
        res = s.res
        total, pos = 0, 0
        src = ffi.from_buffer(data)
        while True:
            rc = lib.et_count(self._ws(), src + pos, len(data) - pos,
                              FINAL if final else SETTLE if settle else 0, res, res + 1)
            total += res[0]
            pos += res[1]
            if rc == lib.ET_OK:
                if final and len(data) >= _GROW_TEXT:  # (a thread's first call comes this way)
                    self._after_long(len(data))
                return total, pos
            if rc != lib.ET_E_WORKSPACE:
                check(rc, "count")
            self._ws(lib.et_ws_need(self._scratch.ws))

    def _bpe_only(self, what: str, wordpiece: bool = False) -> None:
        """Refuses a model the operation does not work with: BPE models with a regex-free
        pretokenizer, and WordPiece models where wordpiece is set."""
        if self.kind != "bpe" and not (wordpiece and self.kind == "wordpiece"):
            family = "WordPiece" if self.kind == "wordpiece" else "SentencePiece"
            also = " (and WordPiece models)" if wordpiece else ""
            raise ModelError(f"{what} works with BPE encodings only{also}, not with {family} "
                             f"models ({self.source})")
        if self.regex_split:
            raise ModelError(f"{what} needs a regex-free pretokenizer; {self.source} cuts its "
                             "pieces with a regex in Python (see `edgetok info`)")

    def _retry(self, call, what: str) -> None:  # type: ignore[no-untyped-def]
        """call(ws) until it stops asking for a larger workspace."""
        while True:
            rc = call(self._ws())
            if rc != lib.ET_E_WORKSPACE:
                check(rc, what)
                return
            self._ws(lib.et_ws_need(self._scratch.ws))

    def count_limit(self, data: bytes, limit: int, start: int = 0, end: int | None = None
                    ) -> int | None:
        """Number of ids of data[start:end] if it is at most limit, else None (stopping early)."""
        if self.regex_split:
            total = self.count(data[start:end])[0]
            return total if total <= limit else None
        self._bpe_only("counting up to a limit", wordpiece=True)
        res = ffi.new("size_t[2]")
        total, pos = 0, start
        end = len(data) if end is None else end
        src = ffi.from_buffer(data)
        while True:
            rc = lib.et_count_limit(self._ws(), src + pos, end - pos, limit - total,
                                    res, res + 1)
            total += res[0]
            pos += res[1]
            if total > limit:
                return None
            if rc == lib.ET_OK:
                return total
            if rc != lib.ET_E_WORKSPACE:
                check(rc, "count")
            self._ws(lib.et_ws_need(self._scratch.ws))

    def split_at(self, data: bytes, n: int, start: int = 0) -> tuple[int, list[int]]:
        """(cut, ids): see et_split_at, for data[start:] (not copied). data[start:start + cut]
        encodes to ids, len(ids) <= n."""
        self._bpe_only("splitting after n tokens", wordpiece=True)
        if self.drops_bytes:
            raise ModelError(f"splitting after n tokens is not available for {self.source}: it "
                             "drops bytes it has no token for, so tokens do not cover the text")
        src = ffi.from_buffer(data) + start
        size = len(data) - start
        res = ffi.new("size_t[2]")
        cap = n + 64
        while True:
            ids = ffi.new("uint32_t[]", cap)
            ends = ffi.new("size_t[]", cap)
            rc = lib.et_split_at(self._ws(), src, size, n, ids, ends, cap, res, res + 1)
            if rc == lib.ET_OK:
                return res[0], ffi.unpack(ids, res[1])
            if rc == lib.ET_E_FULL:
                cap = min(2 * cap, n + size + 1)
            elif rc == lib.ET_E_WORKSPACE:
                self._ws(lib.et_ws_need(self._scratch.ws))
            else:
                check(rc, "split")

    def prefix_counts(self, data: bytes) -> object:
        """The table of et_prefix_counts for data (a cffi uint32_t array, len(data) + 1)."""
        self._bpe_only("range counting")
        cum = ffi.new("uint32_t[]", len(data) + 1)
        self._retry(lambda ws: lib.et_prefix_counts(ws, data, len(data), cum), "count")
        return cum

    def count_range(self, data: bytes, cum: object, i: int, j: int) -> int:
        """Number of ids of data[i:j] on its own, using prefix_counts(data)."""
        out = ffi.new("size_t *")
        self._retry(lambda ws: lib.et_count_range(ws, data, len(data), cum, i, j, out), "count")
        return int(out[0])

    def shard_cut(self, data: bytes, start: int) -> int:
        """The first offset >= start where no context can move a piece boundary, or len(data)."""
        return int(lib.et_shard_cut(self._h, data, len(data), start))

    def shard_cuts(self, data: bytes, shards: int, min_size: int = 1 << 16,
                   end: int | None = None) -> list[int]:
        """Offsets 0 < c1 < c2 < ... < end (default len(data)) that cut data[:end] into about
        `shards` parts of at least min_size bytes, at boundaries that no context can move."""
        n = len(data) if end is None else end
        cuts: list[int] = []
        step = max(n // max(shards, 1), min_size)
        at = step
        while at < n - min_size // 2:
            c = lib.et_shard_cut(self._h, data, n, at)  # within data[:n]
            if c >= n:
                break
            cuts.append(c)
            at = c + step
        return cuts

    def pretokenize(self, data: bytes) -> "array[int]":
        """End offsets of the pieces of data, as a compact array of machine integers: one copy
        of what the C core wrote (a list would cost a Python int object per piece, more time
        than finding the pieces, and 4-8x the memory)."""
        self._bpe_only("pretokenizing")
        ends = _scratch("size_t[]", max(len(data), 1))
        res = ffi.new("size_t[2]")
        check(lib.et_pretokenize(self._h, data, len(data), FINAL, ends, len(data), res, res + 1),
              "pretokenize")
        from array import array  # (it imports collections.abc: not at start-up)

        out = array(_SIZE_T)
        out.frombytes(ffi.buffer(ends, res[0] * ffi.sizeof("size_t")))
        return out

    def decode(self, ids: Iterable[int]) -> bytes:
        """The bytes of ids; KeyError for an id the model does not have."""
        arr = ffi.new("uint32_t[]", ids if isinstance(ids, list) else list(ids))
        n = len(arr)
        size = ffi.new("size_t *")
        if lib.et_decode_len(self._h, arr, n, size) != lib.ET_OK:
            raise KeyError(f"Invalid token for decoding: {arr[size[0]]}")
        buf = ffi.new("char[]", max(size[0], 1))
        check(lib.et_decode(self._h, arr, n, buf, size[0], size), "decode")
        return ffi.buffer(buf, size[0])[:]

    def is_canonical(self, ids: list[int]) -> bool | None:
        """Whether ids are the encoding of their own bytes, told in C in one linear pass (see
        et_is_canonical); None when C cannot tell (this model, or bytes that are not UTF-8):
        the caller re-encodes. KeyError for an id the model does not have."""
        arr = ffi.new("uint32_t[]", ids)
        size = ffi.new("size_t *")
        if lib.et_decode_len(self._h, arr, len(arr), size) != lib.ET_OK:
            raise KeyError(f"Invalid token for decoding: {arr[size[0]]}")
        buf = _scratch_new("char[]", max(size[0], 1))
        verdict = ffi.new("int *")
        rc = lib.et_is_canonical(self._ws(), arr, len(arr), buf, size[0], verdict)
        if rc == lib.ET_E_ARG:
            return None
        check(rc, "is_canonical")
        return None if verdict[0] < 0 else bool(verdict[0])

    def decode_part(self, ids: Iterable[int], state: list[int], final: bool) -> bytes:
        """The bytes of ids as one part of a longer sequence, the same as decoding the whole
        at once (et_decode_part): state, [0] at first, is carried from part to part; final
        on the last."""
        arr = ffi.new("uint32_t[]", ids if isinstance(ids, list) else list(ids))
        n, flags = len(arr), lib.ET_FINAL if final else 0
        st, size = ffi.new("uint64_t *", state[0]), ffi.new("size_t *")
        if lib.et_decode_part(self._h, arr, n, flags, st, ffi.NULL, 0, size) != lib.ET_OK:
            raise KeyError(f"Invalid token for decoding: {arr[size[0]]}")
        buf, st[0] = ffi.new("char[]", max(size[0], 1)), state[0]
        check(lib.et_decode_part(self._h, arr, n, flags, st, buf, size[0], size), "decode")
        state[0] = st[0]
        return ffi.buffer(buf, size[0])[:]


RUNS = (lib.ET_RUN_SPACE, lib.ET_RUN_UPPER)  # the kinds of run et_run_extends knows

# pretokenizer name: (ET_PRETOK_* kind, digits per group)
PRETOK_KINDS = {"cl100k": (lib.ET_PRETOK_CL100K, 3), "o200k": (lib.ET_PRETOK_O200K, 0),
                "gpt2": (lib.ET_PRETOK_GPT2, 0), "gpt2-digits": (lib.ET_PRETOK_GPT2, 1),
                "llama3": (lib.ET_PRETOK_LLAMA3, 3),
                "qwen2": (lib.ET_PRETOK_LLAMA3, 1), "regex": (lib.ET_PRETOK_REGEX, 0)}


class GrowingPiece:
    """The encoding of every prefix of one piece that grows at its end (et_piece_grow):
    extending it costs about the bytes added, whatever the piece's length."""

    def __init__(self, model: Model) -> None:
        self._model = model
        self.length = 0
        self._cap = 0
        self._last: object = None
        self._cnt: object = None
        self._walks = ffi.new("uint32_t[]", 2 * (model.max_token_len + 1))
        self._n_walks = ffi.new("size_t *")

    def grow(self, data: bytes | bytearray, start: int, end: int) -> int:
        """Extend to the piece data[start:end] (data[start:start + length] as before); returns
        its token count."""
        n = end - start
        if n > self._cap:
            cap = max(n, 2 * self._cap, 256)
            last, cnt = _scratch_new("uint32_t[]", cap), _scratch_new("uint32_t[]", cap)
            if self.length:
                ffi.memmove(last, self._last, 4 * self.length)
                ffi.memmove(cnt, self._cnt, 4 * self.length)
            self._last, self._cnt, self._cap = last, cnt, cap
        src = ffi.from_buffer(data)
        try:
            rc = lib.et_piece_grow(self._model._ws(), src + start, self.length, n, self._last,
                                   self._cnt, self._walks, self._n_walks)
        finally:
            ffi.release(src)
        check(rc, "append")
        self.length = n
        return self.count_at(n)

    def count_at(self, n: int) -> int:
        """Token count of the piece's first n bytes (n <= length)."""
        return int(self._cnt[n - 1]) if n else 0


MAX_ID = 0x7FFFFFFE  # ids are < 2^31 - 1 (edgetok.h; ET_NONE and flag bits stay free)


def _twice(pairs: Sequence[tuple[Any, Any]]) -> tuple[Any, Any, Any] | None:
    """(key, first value, second value) for the first key that pairs give twice, or None."""
    if len({k for k, _ in pairs}) == len(pairs):
        return None
    seen: dict[Any, Any] = {}
    for k, v in pairs:
        if k in seen:
            return k, seen[k], v
        seen[k] = v
    return None


def _is_id(i: object) -> bool:
    return type(i) is int and 0 <= i <= MAX_ID  # type: ignore[operator]


def _check_ids(pairs: Sequence[tuple[Any, Any]], source: str) -> None:
    """(token, id) pairs: each id an integer in 0 .. MAX_ID, and no more than
    ET_MAX_UNUSED_IDS ids below the largest without a token (a model has tables per id)."""
    for t, i in pairs:
        if not _is_id(i):
            raise ModelError(f"{source}: token {t!r} has id {i!r}; ids must be integers in "
                             f"0 .. 2^31 - 2")
    top = max((i for _, i in pairs), default=-1)
    if top + 1 - len(pairs) > lib.ET_MAX_UNUSED_IDS:
        t = next(t for t, i in pairs if i == top)
        raise ModelError(f"{source}: token {t!r} has id {top}, but there are only {len(pairs)} "
                         f"tokens: ids may leave at most {lib.ET_MAX_UNUSED_IDS} unused (a model "
                         f"has tables per id)")


def _byte_list(bs: "Iterable[int]") -> str:
    """Bytes as hex ranges: 0x00-0x60, 0x63, ..."""
    runs: list[list[int]] = []
    for b in sorted(bs):
        if runs and runs[-1][1] == b - 1:
            runs[-1][1] = b
        else:
            runs.append([b, b])
    return ", ".join(f"0x{a:02x}" if a == b else f"0x{a:02x}-0x{b:02x}" for a, b in runs)


def _check_bpe_vocab(tokens: list[tuple[bytes, int]], specials: list[tuple[bytes, int]],
                     source: str) -> None:
    """What et_compile_bpe and the loader require, said in words (and before the C core sees
    the vocabulary): non-empty distinct tokens, distinct ids in 0 .. MAX_ID, at least one
    ordinary token, and a token for every single byte unless there are 256 ids or more."""
    if not tokens:
        raise ModelError(f"{source}: the vocabulary has no ordinary token")
    for t, i in (*tokens, *specials):
        if type(t) is not bytes or not t:
            raise ModelError(f"{source}: token {t!r} (id {i!r}) is empty or not bytes")
    _check_ids([*tokens, *specials], source)
    if (twice := _twice(tokens)) is not None:
        t, i, j = twice
        raise ModelError(f"{source}: token {t!r} appears twice (ids {i} and {j})")
    ids = [i for _, i in tokens] + [i for _, i in specials]
    if (twice := _twice([(i, t) for t, i in (*tokens, *specials)])) is not None:
        i, t, u = twice
        raise ModelError(f"{source}: id {i} is given to two tokens ({t!r} and {u!r})")
    n_vocab = max(ids) + 1
    if n_vocab < 256:
        missing = set(range(256)) - {t[0] for t, _ in tokens if len(t) == 1}
        raise ModelError(f"{source}: a BPE vocabulary needs a token for every single byte, or "
                         f"256 ids at least; this one has {n_vocab} id{'s' * (n_vocab > 1)} and no token for "
                         f"{len(missing)} bytes ({_byte_list(missing)})")


def compile_bpe(tokens: list[tuple[bytes, int]], specials: list[tuple[bytes, int]],
                pattern: str, pretokenizer: str = "cl100k", nfc: bool = False,
                added: frozenset[int] = frozenset(), source: str = "vocabulary") -> bytes:
    """Compile a BPE vocabulary (rank == id) into an .etok image, with one of the regex-free
    pretokenizers (PRETOK_KINDS; "regex": pieces cut in Python with pattern, else pattern is
    recorded for information); nfc: text is NFC-normalised before encoding; added: ids of
    specials that are added tokens ordinary text matches (Hugging Face's non-special ones).
    A vocabulary the C core would refuse is a ModelError naming source and what is wrong."""
    _check_bpe_vocab(tokens, specials, source)

    def pack(items: list[tuple[bytes, int]]) -> tuple[bytes, object, object]:
        blob = b"".join(b for b, _ in items)
        off = [0]
        for b, _ in items:
            off.append(off[-1] + len(b))
        return blob, ffi.new("uint32_t[]", off), ffi.new("uint32_t[]", [i for _, i in items] or [0])

    blob, off, ids = pack(tokens)
    sblob, soff, sids = pack(specials)
    if len(blob) + len(sblob) > 0xFFFFFFFF:
        raise ModelError(f"{source}: the tokens hold more than 4 GiB")
    out = ffi.new("uint8_t **")
    out_len = ffi.new("size_t *")
    sadded = bytes(int(i in added) for _, i in specials) or b"\0"
    rc = lib.et_compile_bpe(blob, off, ids, len(tokens), sblob, soff, sids, sadded, len(specials),
                            *PRETOK_KINDS[pretokenizer], lib.ET_COMPILE_NFC if nfc else 0,
                            pattern.encode(), out, out_len)
    check(rc, f"{source}: cannot compile the vocabulary")
    try:
        return ffi.buffer(out[0], out_len[0])[:]
    finally:
        lib.et_free(out[0])


SP_TRIE_TYPES = (1, 4, 5)  # normal, user-defined, unused: the pieces text is matched against
FLOAT_MAX = 3.4028234663852886e38


def _check_unigram(pieces: list[bytes], scores: list[float], types: bytes, unk_id: int,
                   bos_id: int | None, eos_id: int | None, source: str) -> None:
    """What et_compile_unigram requires (and sentencepiece too), said in words."""
    n = len(pieces)
    if not n:
        raise ModelError(f"{source}: the vocabulary is empty")
    if n > MAX_ID + 1 or len(scores) != n or len(types) != n:
        raise ModelError(f"{source}: {n} pieces with {len(scores)} scores and {len(types)} types")
    for i, (p, sc, t) in enumerate(zip(pieces, scores, types)):
        if type(p) is not bytes or not p:
            raise ModelError(f"{source}: piece {i} is empty")
        if not 1 <= t <= 6:
            raise ModelError(f"{source}: piece {i} ({p!r}) has type {t}; types are 1 to 6")
        if type(sc) is not float or not -FLOAT_MAX <= sc <= FLOAT_MAX:
            raise ModelError(f"{source}: piece {i} ({p!r}) has score {sc!r}, not a finite float")
    trie = [(p, i) for i, p in enumerate(pieces) if types[i] in SP_TRIE_TYPES]
    if not trie:
        raise ModelError(f"{source}: the vocabulary has no ordinary token (no piece of type "
                         "normal, user-defined or unused)")
    if (twice := _twice(trie)) is not None:
        p, i, j = twice
        raise ModelError(f"{source}: piece {p!r} appears twice (ids {i} and {j})")
    for what, i in (("unknown", unk_id), ("BOS", bos_id), ("EOS", eos_id)):
        if (i is not None or what == "unknown") and not (type(i) is int and 0 <= i < n):
            raise ModelError(f"{source}: the {what} piece's id {i!r} is not one of the "
                             f"{n} pieces")


def compile_unigram(pieces: list[bytes], scores: list[float], types: bytes, charsmap: bytes,
                    flags: int, unk_id: int, unk_surface: str, bos_id: int | None = None,
                    eos_id: int | None = None, source: str = "SentencePiece model") -> bytes:
    """An .etok image of a SentencePiece Unigram model (see et_compile_unigram). A model the
    C core would refuse is a ModelError naming source and what is wrong."""
    _check_unigram(pieces, scores, types, unk_id, bos_id, eos_id, source)
    off = [0]
    for p in pieces:
        off.append(off[-1] + len(p))
    if off[-1] > 0xFFFFFFFF:
        raise ModelError(f"{source}: the pieces hold more than 4 GiB")
    out = ffi.new("uint8_t **")
    out_len = ffi.new("size_t *")
    rc = lib.et_compile_unigram(b"".join(pieces), ffi.new("uint32_t[]", off), len(pieces),
                                ffi.new("float[]", scores), types, charsmap, len(charsmap),
                                flags, unk_id, NONE if bos_id is None else bos_id,
                                NONE if eos_id is None else eos_id, unk_surface.encode(), out, out_len)
    check(rc, f"{source}: cannot compile the SentencePiece model")
    try:
        return ffi.buffer(out[0], out_len[0])[:]
    finally:
        lib.et_free(out[0])


class NativeAutomaton:
    """A token-level automaton built in C (et_automaton_build) from a byte DFA over a model."""

    def __init__(self, model: Model, trans: "Sequence[int]", accept: "Sequence[bool]",
                 canonical: bool) -> None:
        n = len(accept)
        t = ffi.new("int32_t[]", list(trans))
        acc = ffi.new("uint8_t[]", [1 if x else 0 for x in accept])
        out = ffi.new("et_automaton **")
        rc = lib.et_automaton_build(model._h, t, acc, n, lib.ET_AUT_CANONICAL if canonical else 0,
                                    out)
        if rc == lib.ET_E_ARG:
            raise ValueError("this model has no token automata" + (
                " in canonical mode (it needs pair tables and a C pretokenizer)"
                if canonical else " (BPE models only)"))
        check(rc, "regex_automaton")
        self._model = model  # keeps the model alive while the automaton is
        self.bytes: int = lib.et_automaton_bytes(out[0])
        self._a = ffi.gc(out[0], lib.et_automaton_free, size=self.bytes)
        self.rows: int = lib.et_automaton_rows(self._a)
        self.n_vocab = model.n_vocab

    def next(self, state: int, token: int) -> int:
        if not 0 <= token < 1 << 32:
            return -1
        return int(lib.et_automaton_next(self._a, state, token))

    def accepting(self, state: int) -> bool:
        return bool(lib.et_automaton_accepting(self._a, state))

    def allowed_ids(self, state: int) -> list[int]:
        n = ffi.new("size_t *")
        check(lib.et_automaton_allowed(self._a, state, ffi.NULL, 0, ffi.NULL, 0, n), "allowed_ids")
        ids = ffi.new("uint32_t[]", max(n[0], 1))
        check(lib.et_automaton_allowed(self._a, state, ids, n[0], ffi.NULL, 0, n), "allowed_ids")
        return list(ids[0:n[0]])

    def allowed_both(self, state: int) -> "tuple[bytes, array[int]]":
        """The bitset and the ascending ids of state from one pass (canonical masks are worth
        computing once)."""
        from array import array

        n, cap = ffi.new("size_t *"), self.n_vocab
        # (not cleared: the C core writes every byte of bits and the first n ids; a room of
        # n_vocab ids cleared cost more than a small automaton's first mask)
        bits = _scratch_new("uint8_t[]", (cap + 7) // 8)
        ids = _scratch_new("uint32_t[]", max(cap, 1))
        check(lib.et_automaton_allowed(self._a, state, ids, cap, bits, (cap + 7) // 8, n),
              "allowed")
        out = array("I")
        out.frombytes(ffi.buffer(ids, 4 * n[0]))
        return bytes(ffi.buffer(bits)), out

    def allowed_into(self, state: int, buf: object) -> int:
        """The bitset of state into buf (a writable buffer of (n_vocab + 7) // 8 bytes or more);
        returns the number of allowed ids."""
        b, n = ffi.from_buffer("uint8_t[]", buf, require_writable=True), ffi.new("size_t *")
        check(lib.et_automaton_allowed(self._a, state, ffi.NULL, 0, b, len(b), n), "allowed")
        return int(n[0])


def bitset_ids(bits: bytes, n: int) -> list[int]:
    """The ids whose bits are set in bits (bit i of byte i // 8, least significant first), n of
    them (the count et_automaton_allowed gave), ascending."""
    ids, got = _scratch_new("uint32_t[]", max(n, 1)), ffi.new("size_t *")
    check(lib.et_bitset_ids(bits, len(bits), ids, n, got), "bitset_ids")
    return list(ids[0:got[0]])


def compile_wordpiece(tokens: list[tuple[bytes, int]], specials: list[tuple[bytes, int]],
                      prefix: str, unk: int, cls: int | None, sep: int | None, max_chars: int,
                      flags: int, source: str = "WordPiece vocabulary") -> bytes:
    """An .etok image of a WordPiece model (see et_compile_wordpiece): tokens as (bytes, id),
    specials likewise, the continuation prefix, [UNK] / [CLS] / [SEP] ids, max characters per
    word and BertNormalizer's flags. A vocabulary the C core would refuse is a ModelError."""
    _check_ids([*tokens, *specials], source)
    off = [0]
    for t, _ in tokens:
        off.append(off[-1] + len(t))
    soff = [0]
    for t, _ in specials:
        soff.append(soff[-1] + len(t))
    if off[-1] + soff[-1] > 0xFFFFFFFF:
        raise ModelError(f"{source}: the tokens hold more than 4 GiB")
    out = ffi.new("uint8_t **")
    out_len = ffi.new("size_t *")
    rc = lib.et_compile_wordpiece(
        b"".join(t for t, _ in tokens), ffi.new("uint32_t[]", off),
        ffi.new("uint32_t[]", [i for _, i in tokens]), len(tokens),
        b"".join(t for t, _ in specials), ffi.new("uint32_t[]", soff),
        ffi.new("uint32_t[]", [i for _, i in specials] or [0]), len(specials), prefix.encode(),
        unk, NONE if cls is None else cls, NONE if sep is None else sep,
        min(max_chars, 0xFFFFFFFF), flags, out, out_len)
    check(rc, f"{source}: cannot compile the WordPiece vocabulary")
    try:
        return ffi.buffer(out[0], out_len[0])[:]
    finally:
        lib.et_free(out[0])
