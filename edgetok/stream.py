"""Streaming: encode or count text that arrives in chunks, with bounded memory, giving exactly
the ids of encoding the whole text at once; and decode ids into text as they come."""
from __future__ import annotations

import codecs
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings
    from typing import AbstractSet, BinaryIO, Callable, Collection, Iterable, Iterator, Literal

from .encoding import Encoding

CHUNK = 1 << 20


class InvalidUTF8(ValueError):
    """Input that is not UTF-8; offset is the byte offset of the first bad byte."""

    def __init__(self, offset: int, reason: str):
        super().__init__(f"invalid UTF-8 at byte {offset} ({reason})")
        self.offset = offset


def read_text(f: BinaryIO, errors: str = "strict", chunk: int = CHUNK,
              on_wait: "Callable[[], None] | None" = None) -> Iterator[str]:
    """The text of a binary stream in chunks, decoded as UTF-8 (characters split between
    reads are joined). errors='replace' substitutes U+FFFD as bytes.decode does. A chunk is
    up to `chunk` bytes, fewer when the input pauses (a pipe or terminal with nothing more to
    read yet): what has come so far is passed on rather than waited on, and on_wait is called
    before a read that will wait (to flush output)."""
    dec = codecs.getincrementaldecoder("utf-8")(errors)
    read = _reader(f, chunk, on_wait)
    offset = 0
    while True:
        data = read()
        held = len(dec.getstate()[0])  # bytes of a split character from the previous read
        try:
            text = dec.decode(data, final=not data)
        except UnicodeDecodeError as e:
            raise InvalidUTF8(offset - held + e.start, e.reason) from None
        if text:
            yield text
        if not data:
            return
        offset += len(data)


def _reader(f: BinaryIO, chunk: int, on_wait: "Callable[[], None] | None" = None
            ) -> "Callable[[], bytes]":
    """A function reading up to chunk bytes from f: as many as come without waiting, once
    some have come (b"" at the end of the input, then ever after). on_wait is called before
    a read that waits."""
    try:
        fd = f.fileno()
        read1 = f.read1  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # no file descriptor (io.BytesIO, ...)
        return lambda: f.read(chunk)
    import select

    def ready() -> bool:
        try:
            return bool(select.select([fd], [], [], 0)[0])
        except (OSError, ValueError):  # a descriptor select does not take
            return False

    eof = False

    def read() -> bytes:
        nonlocal eof
        parts: list[bytes] = []
        size = 0
        if on_wait is not None and not eof and not ready():
            on_wait()
        while not eof and size < chunk and (not parts or ready()):
            data = read1(chunk - size)
            if not data:
                eof = True  # (a terminal's end of input is read once)
                break
            parts.append(data)
            size += len(data)
        return b"".join(parts)

    return read


def _special_tail(text: str, specials: Collection[str]) -> int:
    """Length of the longest end of text that is a proper prefix of a special token."""
    best = 0
    for s in specials:
        for k in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:k]):
                best = k
                break
    return best


def encode_stream(enc: Encoding, chunks: Iterable[str], *,
                  allowed_special: "Literal['all'] | AbstractSet[str]" = frozenset(),
                  disallowed_special: "Literal['all'] | Collection[str]" = "all",
                  add_special_tokens: bool | None = None, add_bos: bool = False,
                  add_eos: bool = False, count_only: bool = False, jobs: int = 1
                  ) -> Iterator[list[int] | int]:
    """Ids (or, with count_only, counts) of the concatenated chunks, yielded as soon as they are
    final: together, enc.encode(whole, ...) with the same arguments. add_special_tokens,
    add_bos and add_eos add what encode adds around the text (by default a tokenizer.json's
    post-processor tokens, BERT's [CLS] / [SEP]; see Encoding.encode): they come first and
    last, each end as an item of its own. Memory stays bounded by the longest stretch without
    a safe cut. With jobs > 1, large chunks are cut into shards where the pretokenizer provably
    restarts and encoded on that many threads; the ids are the same. ValueError (at the call)
    for add_bos / add_eos on a model without BOS / EOS."""
    parts = encode_stream_parts(enc, chunks, allowed_special=allowed_special,
                                disallowed_special=disallowed_special,
                                add_special_tokens=add_special_tokens, add_bos=add_bos,
                                add_eos=add_eos, count_only=count_only, jobs=jobs)
    return (x for _, x in parts)


def encode_stream_parts(enc: Encoding, chunks: Iterable[str], *,
                        allowed_special: "Literal['all'] | AbstractSet[str]" = frozenset(),
                        disallowed_special: "Literal['all'] | Collection[str]" = "all",
                        add_special_tokens: bool | None = None, add_bos: bool = False,
                        add_eos: bool = False, count_only: bool = False, jobs: int = 1
                        ) -> Iterator[tuple[bool, list[int] | int]]:
    """encode_stream's items, each with whether it is tokens added around the text (True: the
    first and last items when something is added) or the text's own."""
    head, tail = enc._ends(add_special_tokens, add_bos, add_eos)  # (its errors now, not later)
    return _with_ends(head, tail, _encode_text_stream(
        enc, chunks, allowed_special, disallowed_special, count_only, jobs), count_only)


def _with_ends(head: list[int], tail: list[int], body: Iterator[list[int] | int],
               count_only: bool) -> Iterator[tuple[bool, list[int] | int]]:
    if head:
        yield True, len(head) if count_only else list(head)
    for x in body:
        yield False, x
    if tail:
        yield True, len(tail) if count_only else list(tail)


def _encode_text_stream(enc: Encoding, chunks: Iterable[str],
                        allowed_special: "Literal['all'] | AbstractSet[str]",
                        disallowed_special: "Literal['all'] | Collection[str]",
                        count_only: bool, jobs: int) -> Iterator[list[int] | int]:
    """The ids (counts) of the text itself: see encode_stream."""
    from .parallel import SHARD_MIN_BYTES, pmap

    model = enc.model
    specials = set(enc._matchable)  # held back at a chunk's end when it may start one
    # NFC can join characters across any cut but a line break (a starter that composes with
    # nothing): a normalising model's text is held back to its last line break
    nfc = model.nfc
    if model.regex_split:
        # regex pieces are only known at the end: the stream is taken whole (the loop below
        # is skipped)
        chunks = ["".join(chunks)]
    # the text not encoded yet: tail, the UTF-8 text after the last safe cut (the special
    # tokens in it are settled: none starts there), then parts, text not searched for them
    tail = b""
    parts: list[str] = []
    size = 0
    retry_at = 0  # with no safe cut found, wait for this much text before trying again

    def one(data: bytes, final: bool) -> tuple[list[int] | int, int]:
        # settle: a long piece with no cut in sight comes out in parts (see ET_SETTLE)
        return (model.count(data, final, settle=True) if count_only
                else model.encode(data, final, settle=True))

    def run(data: bytes, final: bool) -> tuple[list[int] | int, int]:
        if jobs <= 1 or len(data) < 2 * SHARD_MIN_BYTES:
            return one(data, final)
        end = len(data) if final else model.shard_cut(data, len(data) - SHARD_MIN_BYTES // 4)
        cuts = (model.shard_cuts(data, jobs, SHARD_MIN_BYTES // 2, end=end)
                if end < len(data) or final else [])
        if not cuts:
            return one(data, final)
        bounds = [0, *cuts, end]
        parts = pmap(lambda ab: one(data[ab[0]:ab[1]], True)[0], list(zip(bounds, bounds[1:])))
        if count_only:
            return sum(parts), end  # type: ignore[arg-type]
        ids: list[int] = []
        for part in parts:
            ids += part  # type: ignore[arg-type]
        return ids, end

    def segments(text: str) -> list[bytes | int]:
        """text's segments (UTF-8) and special ids, tail joined to the first segment."""
        segs: list[bytes | int] = [s if isinstance(s, int) else enc._bytes(s)
                                   for s in enc._segments(text, allowed_special, disallowed_special)]
        segs[0] = tail + segs[0]  # type: ignore[operator]  (the first is text, maybe "")
        return segs

    for chunk in chunks:
        parts.append(chunk)
        size += len(chunk)
        if len(tail) + size < retry_at:
            continue
        pending = "".join(parts)
        hold = _special_tail(pending, specials) if specials else 0
        if nfc:
            hold = max(hold, len(pending) - pending.rfind("\n") - 1)
            if hold == len(pending):  # no line break yet: wait for twice as much text
                parts, size, retry_at = [pending], len(pending), 2 * (len(tail) + len(pending))
                continue
        segs = segments(pending[: len(pending) - hold])
        parts = [pending[len(pending) - hold:]] if hold else []
        size = hold
        del pending
        for seg in segs[:-1]:
            yield (1 if count_only else [seg]) if isinstance(seg, int) else run(seg, True)[0]
        last = segs.pop()
        del segs
        assert isinstance(last, bytes)
        tail = b""  # (not held twice while last is encoded)
        out, used = run(last, False)
        if out:
            yield out
        tail = last[used:]
        del last
        retry_at = 2 * len(tail) if used == 0 and tail else 0
    for seg in segments("".join(parts)):
        if isinstance(seg, int):
            yield 1 if count_only else [seg]
        elif seg:
            yield run(seg, True)[0]


class Decoder:
    """Ids to text incrementally: text comes out as soon as it forms whole UTF-8 characters,
    and at most one incomplete character is held back."""

    def __init__(self, enc: Encoding, errors: str = "replace"):
        self._model = enc.model
        self._state = [0]  # what SentencePiece decoding carries from one part to the next
        self._dec = codecs.getincrementaldecoder("utf-8")(errors)

    def feed(self, ids: Iterable[int]) -> str:
        return self._dec.decode(self._model.decode_part(list(ids), self._state, False))

    def flush(self) -> str:
        return self._dec.decode(self._model.decode_part([], self._state, True), final=True)


def chunk_stream(enc: Encoding, blocks: Iterable[bytes], max_tokens: int, *, overlap: int = 0,
                 boundary: str = "char", add_special_tokens: bool | None = None
                 ) -> Iterator[tuple[int, int, int, bytes]]:
    """edgetok.budget.chunks over UTF-8 text that arrives in blocks: the same (start, end,
    tokens) as chunks() of the whole text, each with the chunk's bytes. A chunk is decided on
    the text from its start up to a safe cut (one no later text can move) past max_tokens
    tokens, which the whole text encodes exactly as that stretch does; so memory holds a block
    and that stretch, not the text. The tokens that encode(chunk, add_special_tokens=...) puts
    around a chunk (a tokenizer.json's post-processor, BERT's [CLS] / [SEP]) count too."""
    from .budget import BOUNDARIES, _breaks, _complete

    added = sum(map(len, enc._special_wrap(add_special_tokens)))
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    if max_tokens <= added:
        raise ValueError(f"max_tokens must be more than the {added} special tokens added to "
                         "each chunk (none with --no-add-special-tokens, add_special_tokens=False)")
    max_tokens -= added
    if not 0 <= overlap < max_tokens:
        raise ValueError("overlap must be at least 0 and less than max_tokens"
                         + (f" less the {added} special tokens" if added else ""))
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary must be one of {', '.join(BOUNDARIES)}")
    model = enc.model
    model.split_at(b"", max_tokens)  # a model without token budgets says so before any reading
    kinds = BOUNDARIES[BOUNDARIES.index(boundary):-1]
    source = iter(blocks)
    buf: bytes = b""  # the text from byte offset base on (what is still needed of it)
    base = pos = 0
    eof = False
    guess = max(1024, 8 * max_tokens)  # bytes that usually hold more than max_tokens tokens
    while True:
        # the window: the text from pos up to a safe cut after more than max_tokens tokens
        # (split_at finds there what it finds in the whole rest), or all the rest
        at, size = pos - base, guess
        while True:
            if len(buf) - at < size and not eof:
                more, got = ([buf[at:]] if at < len(buf) else []), len(buf) - at
                while got < size:
                    block = next(source, None)
                    if block is None:
                        eof = True
                        break
                    more.append(block)
                    got += len(block)
                buf = more[0] if len(more) == 1 else b"".join(more)
                base, at = pos, 0
            if eof and len(buf) - at <= size:
                window, final = buf[at:], True
                break
            view = buf[at:at + size]
            view = view[:_complete(view)]
            k, safe = model.count(view, final=False)
            if k > max_tokens:
                window, final = view[:safe], False
                break
            size *= 2
        if not window:
            return
        cut, ids = model.split_at(window, max_tokens)
        if cut == 0:
            raise ValueError(f"the character at byte {pos} alone needs more than {max_tokens} tokens")
        end, n = cut, len(ids)
        if end < len(window):
            for kind in kinds:
                for b in _breaks(window[:end], kind):
                    if b < cut and (k := model.count_limit(window, max_tokens, 0, b)) is not None:
                        end, n = b, k
                        break
                else:
                    continue
                break
        yield pos, pos + end, n + added, window[:end]
        if final and end >= len(window):
            return
        nxt = end
        if overlap:
            own, _ = model.encode(window[:end])
            if model.kind == "wordpiece":  # (tokens are normalised text, not the text's bytes)
                nxt = model.split_at(window[:end], len(own) - overlap)[0] if len(own) > overlap else 0
            else:
                nxt = sum(len(model.token_bytes(t) or b"") for t in own[: len(own) - overlap])
            while nxt < end and window[nxt] & 0xC0 == 0x80:  # forward to a character start
                nxt += 1
            if nxt <= 0:
                nxt = end
        pos += nxt
