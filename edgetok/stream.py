"""Streaming: encode or count text that arrives in chunks, with bounded memory, giving exactly
the ids of encoding the whole text at once; and decode ids into text as they come."""
from __future__ import annotations

import codecs
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings
    from typing import AbstractSet, BinaryIO, Collection, Iterable, Iterator, Literal

from .encoding import Encoding, _utf8

CHUNK = 1 << 20


class InvalidUTF8(ValueError):
    """Input that is not UTF-8; offset is the byte offset of the first bad byte."""

    def __init__(self, offset: int, reason: str):
        super().__init__(f"invalid UTF-8 at byte {offset} ({reason})")
        self.offset = offset


def read_text(f: BinaryIO, errors: str = "strict", chunk: int = CHUNK) -> Iterator[str]:
    """The text of a binary stream in chunks, decoded as UTF-8 (characters split between
    reads are joined). errors='replace' substitutes U+FFFD as bytes.decode does."""
    dec = codecs.getincrementaldecoder("utf-8")(errors)
    offset = 0
    while True:
        data = f.read(chunk)
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
                  count_only: bool = False, jobs: int = 1) -> Iterator[list[int] | int]:
    """Ids (or, with count_only, counts) of the concatenated chunks, yielded as soon as they are
    final. Memory stays bounded by the longest stretch without a safe cut. With jobs > 1, large
    chunks are cut into shards where the pretokenizer provably restarts and encoded on that
    many threads; the ids are the same."""
    from .parallel import SHARD_MIN_BYTES, pool

    model = enc.model
    specials = set(enc._matchable)  # held back at a chunk's end when it may start one
    pending = ""
    if model.nfc or model.regex_split:
        # NFC can join characters across any cut, and regex pieces are only known at the end:
        # these models take the stream whole (the loop below is skipped)
        pending, chunks = "".join(chunks), []
    retry_at = 0  # with no safe cut found, wait for this much text before trying again

    def one(data: bytes, final: bool) -> tuple[list[int] | int, int]:
        return model.count(data, final) if count_only else model.encode(data, final)

    def run(seg: str, final: bool) -> tuple[list[int] | int, int]:
        data = enc._bytes(seg)
        if jobs <= 1 or len(data) < 2 * SHARD_MIN_BYTES:
            return one(data, final)
        end = len(data) if final else model.shard_cut(data, len(data) - SHARD_MIN_BYTES // 4)
        cuts = (model.shard_cuts(data, jobs, SHARD_MIN_BYTES // 2, end=end)
                if end < len(data) or final else [])
        if not cuts:
            return one(data, final)
        bounds = [0, *cuts, end]
        parts = list(pool().map(lambda ab: one(data[ab[0]:ab[1]], True)[0], zip(bounds, bounds[1:])))
        if count_only:
            return sum(parts), end  # type: ignore[arg-type]
        ids: list[int] = []
        for part in parts:
            ids += part  # type: ignore[arg-type]
        return ids, end

    for chunk in chunks:
        pending += chunk
        if len(pending) < retry_at:
            continue
        hold = _special_tail(pending, specials) if specials else 0
        head = pending[: len(pending) - hold]
        segs = list(enc._segments(head, allowed_special, disallowed_special))
        for seg in segs[:-1]:
            yield (1 if count_only else [seg]) if isinstance(seg, int) else run(seg, True)[0]
        last = segs[-1]
        assert isinstance(last, str)
        out, used = run(last, False)
        if out:
            yield out
        rest = _utf8(last)[used:].decode("utf-8")
        retry_at = 2 * len(rest) if used == 0 and rest else 0
        pending = rest + pending[len(head):]
    for seg in enc._segments(pending, allowed_special, disallowed_special):
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
