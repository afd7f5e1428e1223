"""Token budgets: counting up to a limit, cutting text after n tokens, counting any range of
a text after one pass, and counting text that arrives piece by piece.

All of them treat special-token text as ordinary text (as encode_ordinary does) and give
exactly what encoding the text with the same model gives.
"""
from __future__ import annotations

from ._ffi import RUNS, GrowingPiece, Model

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator, Sequence

    from .encoding import Encoding


def _raw_utf8(text: str) -> bytes:
    from .encoding import _utf8 as u

    return u(text)


def _utf8(enc: "Encoding", text: str) -> bytes:
    """text in UTF-8; offsets into it must be offsets into text, so a model that normalises
    (NFC) takes text that is normalised already."""
    from .encoding import _nfc, _utf8 as u

    if enc._added and any(t in enc._added for t in enc._present(text)):
        raise ValueError(f"{enc.name}: token budgets do not handle text holding added tokens "
                         "(Hugging Face's non-special ones); count it with enc.count instead")
    if enc.model.nfc and _nfc(text) != text:
        raise ValueError(f"{enc.name} normalises text to NFC: pass NFC text "
                         "(unicodedata.normalize('NFC', text)) to get offsets into it")
    return u(text)


def _high(c: str) -> bool:
    return "\ud800" <= c <= "\udbff"


def _low(c: str) -> bool:
    return "\udc00" <= c <= "\udfff"


def _in_pair(text: str, i: int) -> bool:
    """Whether index i falls between the two halves of a surrogate pair of text."""
    return 0 < i < len(text) and _low(text[i]) and _high(text[i - 1])


def _nbytes(text: str, a: int, b: int) -> int:
    """The bytes text[a:b] takes in the UTF-8 of the whole text as tiktoken makes it
    (encoding._utf8): a surrogate pair is one 4-byte character, counted at its first half;
    a lone surrogate is U+FFFD."""
    try:
        return len(text[a:b].encode("utf-8"))
    except UnicodeEncodeError:
        pass
    n = 0
    for k in range(a, min(b, len(text))):
        c = text[k]
        if _high(c) and _in_pair(text, k + 1):
            n += 4
        elif not _in_pair(text, k):
            n += len(c.encode("utf-8", "surrogatepass"))  # U+FFFD is 3 bytes too
    return n


def _index_at(text: str, data: bytes, cut: int) -> int:
    """The index into text of byte offset cut (a character boundary) of data = its UTF-8."""
    if len(data) == len(text):  # ASCII
        return cut
    try:
        text.encode("utf-8")  # no surrogate: data is text's own UTF-8
    except UnicodeEncodeError:
        pass
    else:
        return len(data[:cut].decode("utf-8"))
    i = at = 0
    while i < len(text) and at + (step := _nbytes(text, i, i + 64)) <= cut:
        i, at = i + 64, at + step
    while at < cut:
        at += _nbytes(text, i, i + 1)
        i += 1
    return i + 1 if _in_pair(text, i) else i


def split_at(enc: "Encoding", text: str, max_tokens: int) -> tuple[int, list[int]]:
    """(i, ids): the longest prefix text[:i] such that the encoding of the whole text can be
    cut after len(ids) <= max_tokens tokens exactly there, and encode_ordinary(text[:i]) == ids
    == encode_ordinary(text)[:len(ids)]. i == 0 when max_tokens is too small for the first
    character. Tokens that end inside a character are never cut after."""
    if max_tokens < 0:
        raise ValueError("max_tokens must be >= 0")
    data = _utf8(enc, text)
    cut, ids = enc.model.split_at(data, max_tokens)
    return (len(text) if cut == len(data) else _index_at(text, data, cut)), ids


BOUNDARIES = ("paragraph", "line", "sentence", "char")


def _breaks(chunk: bytes, kind: str) -> list[int]:
    """Offsets in chunk just after each break of the kind, last first."""
    import re

    pattern = {"paragraph": rb"\n[ \t\r]*\n(?:[ \t\r]*\n)*", "line": rb"\n",
               "sentence": rb"[.!?](?=\s)|\xe3\x80\x82"}[kind]  # . ! ? then space; U+3002
    return sorted((m.end() for m in re.finditer(pattern, chunk)), reverse=True)


def chunks(enc: "Encoding", data: bytes, max_tokens: int, *, overlap: int = 0,
           boundary: str = "char", add_special_tokens: bool | None = None
           ) -> Iterator[tuple[int, int, int]]:
    """Cut UTF-8 data into chunks of at most max_tokens tokens each (counted on the chunk's own
    text, with what encode(chunk, add_special_tokens=...) adds around it: a tokenizer.json's
    post-processor tokens, BERT's [CLS] / [SEP]; nothing for tiktoken's encodings), at
    character boundaries: yields (start, end, tokens) byte offsets. Without overlap the chunks
    tile data exactly. boundary prefers to end a chunk after the last paragraph, line or
    sentence break that fits (falling back to the next finer kind, then to the exact token
    cut); overlap starts each chunk up to that many tokens before the previous end. WordPiece
    models end chunks after whole words unless a single word takes more than max_tokens."""
    from .stream import chunk_stream  # (the same over text that arrives in blocks)

    for start, end, n, _ in chunk_stream(enc, (data,), max_tokens, overlap=overlap,
                                         boundary=boundary, add_special_tokens=add_special_tokens):
        yield start, end, n


class RangeCounter:
    """count(i, j) == len(enc.encode_ordinary(text[i:j])) for any i <= j, after one linear
    pass over text: only the pieces at the two ends of the range are encoded (constant time
    for ordinary text; proportional to the end pieces' length when they are very long).
    Indices are character indices, as in text[i:j]; memory is 4 bytes per byte of text."""

    def __init__(self, enc: "Encoding", text: str):
        self._enc = enc
        self._model: Model = enc.model
        self._data = _utf8(enc, text)
        self._cum = self._model.prefix_counts(self._data)
        self._n = len(text)
        self._text = text
        self._blocks: list[int] | None = None
        if len(self._data) != len(text):  # byte offsets of every 64th character
            blocks, at = [0], 0
            for k in range(0, (len(text) >> 6) << 6, 64):
                at += _nbytes(text, k, k + 64)
                blocks.append(at)
            self._blocks = blocks

    def __len__(self) -> int:
        """Tokens of the whole text."""
        return int(self._cum[len(self._data)])

    def _byte(self, i: int) -> int:
        b = i >> 6
        return self._blocks[b] + _nbytes(self._text, b << 6, i)  # type: ignore[index]

    def count(self, start: int = 0, end: int | None = None) -> int:
        start, end, _ = slice(start, end).indices(self._n)
        if end <= start:
            return 0
        if _in_pair(self._text, start) or _in_pair(self._text, end):
            # a half of a pair is U+FFFD on its own: text[start:end] is not a stretch of text
            return len(self._enc.encode_ordinary(self._text[start:end]))
        if self._blocks is not None:
            start, end = self._byte(start), self._byte(end)
        return self._model.count_range(self._data, self._cum, start, end)


GROW_MIN = 64  # bytes: a last piece this long grows in place instead of being recounted


class AppendCounter:
    """The exact token count of text fed piece by piece (str, or bytes that may stop inside a
    character), readable after every append. Only the text since the last cut that no later
    text can move is kept and recounted, so an append costs about the length of what it adds
    plus the current word; and when the last piece is long (a run of letters, punctuation or
    whitespace with no cut) and the new text only continues it, the piece's count grows in
    place (the "last token of every prefix" table), so that costs about what is added too.
    A run whose last two pieces split inside it (o200k and Llama-3: whitespace up to its last
    line break, then the rest; o200k: upper-case letters up to the last Lm/Lo letter or mark)
    keeps one table over the whole run and one over the part after the split."""

    def __init__(self, enc: "Encoding"):
        self._model = enc.model
        if enc._added:
            raise ValueError(f"{enc.name} has added tokens that any text may hold (Hugging "
                             "Face's non-special ones): count the whole text instead")
        if enc.model.nfc:
            raise ValueError(f"{enc.name} normalises text to NFC, which a character appended "
                             "later can change: count the whole text instead")
        self._committed = 0  # tokens of the text before self._pending; final
        self._pending = bytearray()  # since the last safe cut, including an incomplete character
        self._high = ""  # a str's last high surrogate, which the next str's first half may pair
        self._count = 0
        self._grows = enc.model.can_grow
        # the long last piece of the pending text: (start, end, tokens before it, its table)
        self._open: tuple[int, int, int, GrowingPiece] | None = None
        # a run at the end of the pending text split into pieces [start, split) and [split,
        # end): (kind, start, split, tokens before start, table from start, table from split)
        self._split: tuple[int, int, int, int, GrowingPiece, GrowingPiece] | None = None

    @property
    def count(self) -> int:
        """Tokens of all complete characters fed so far."""
        return self._count

    def append(self, piece: str | bytes) -> int:
        """Add text; returns the count so far."""
        buf = self._pending
        before_append, high = len(buf), self._high
        if isinstance(piece, (bytes, bytearray)):
            text, self._high = high, ""  # a surrogate that bytes follow pairs with nothing
            buf += _raw_utf8(text) + piece if text else piece
        else:  # a surrogate pair may come in two appends: it is one character, as in encode
            text = high + piece
            self._high = text[-1] if text and _high(text[-1]) else ""
            buf += _raw_utf8(text[:len(text) - len(self._high)])
        try:
            return self._take(buf)
        except BaseException:  # nothing changed but buf and the tables: as before the append
            del buf[before_append:]
            self._high = high
            self._open = self._split = None
            raise

    def _take(self, buf: bytearray) -> int:
        """Count the pending text buf after text was added to it; state changes only at the
        end, once nothing can fail."""
        whole = _complete(buf)
        if self._split is not None:
            kind, start, split, before, run, after = self._split
            end = start + run.length
            if whole == end:  # only part of a character came
                return self._count
            at = self._model.run_extends(buf, end, whole, kind) if whole > end else -1
            if at >= 0:
                run.grow(buf, start, whole)
                if at > end:  # a new last split character: the second piece starts after it
                    split, after = at, GrowingPiece(self._model)
                tail = after.grow(buf, split, whole) if whole > split else 0
                self._split = (kind, start, split, before, run, after)
                self._count = self._committed + before + run.count_at(split - start) + tail
                return self._count
        if self._open is not None:
            start, end, before, table = self._open
            if whole == end:  # only part of a character came
                return self._count
            if whole > end and self._model.piece_extends(buf, start, end, whole):
                size = table.grow(buf, start, whole)
                self._open = (start, whole, before, table)
                self._count = self._committed + before + size
                return self._count
        data = bytes(buf[:whole])
        n, used = self._model.count(data, final=False)
        rest = data[used:]
        tail, _ = self._model.count(rest, final=True)
        opened = split_run = None
        if self._grows and len(rest) >= GROW_MIN:
            ends = self._model.pretokenize(rest)
            split_run = self._split_run(rest, ends, tail)
            start = ends[-2] if len(ends) > 1 else 0
            if split_run is None and len(rest) - start >= GROW_MIN:
                table = GrowingPiece(self._model)
                opened = (start, len(rest), tail - table.grow(rest, start, len(rest)), table)
        self._committed += n
        del buf[:used]
        self._count = self._committed + tail
        self._open, self._split = opened, split_run
        return self._count

    def _split_run(self, rest: bytes, ends: "Sequence[int]", tail: int
                   ) -> tuple[int, int, int, int, GrowingPiece, GrowingPiece] | None:
        """The split-run state for the complete pending text rest (its piece ends and token
        count given) when its last one or two pieces are such a run, GROW_MIN bytes or more."""
        end = len(rest)
        for first in range(max(len(ends) - 2, 0), len(ends)):  # two pieces, then one
            start = ends[first - 1] if first else 0
            if end - start < GROW_MIN:
                return None
            for kind in RUNS:
                # an upper-case run may follow one prefix character ([^\r\n\p{L}\p{N}]; an
                # ASCII space or punctuation here: a letter there starts another kind of
                # word, "x\u4e9a\u6d32" + "AV" is "x\u4e9a\u6d32" "AV", found in review)
                lead = _prefix_len(rest, start) if kind == RUNS[1] else 0
                for run_from in (start, start + lead) if lead else (start,):
                    at = self._model.run_extends(rest, run_from, end, kind)
                    if at < 0:
                        continue
                    if kind == RUNS[1] and run_from == start and start > 0:
                        # the upper-case run must begin here: a piece before it that ends in
                        # it ("\uff0c\u4e9a\u6d32" "AV...", found in review) would merge with
                        # it once a Lm/Lo letter or mark comes
                        k = start - 1
                        while k > 0 and start - k < 4 and rest[k] & 0xC0 == 0x80:
                            k -= 1
                        if self._model.run_extends(rest, k, start, kind) >= 0:
                            continue
                    split = at if at > run_from else start
                    want = [split, end] if start < split < end else [end]
                    if list(ends[first:]) != want:
                        continue
                    run, after = GrowingPiece(self._model), GrowingPiece(self._model)
                    run.grow(rest, start, end)
                    tail_count = after.grow(rest, split, end) if split < end else 0
                    before = tail - run.count_at(split - start) - tail_count
                    return kind, start, split, before, run, after
        return None


def _prefix_len(data: bytes, at: int) -> int:
    r"""The byte length of the character at data[at] if it is surely o200k's word prefix
    [^\r\n\p{L}\p{N}]: ASCII space or punctuation, or a punctuation, symbol or separator
    character (Unicode categories P*, S*, Z*, which never become letters or digits); else 0."""
    b = data[at]
    if b < 0x80:
        return 0 if chr(b).isalnum() or b in b"\r\n" else 1
    n = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
    try:
        ch = data[at:at + n].decode("utf-8")
    except UnicodeDecodeError:
        return 0
    import unicodedata

    return n if len(ch) == 1 and unicodedata.category(ch)[0] in "PSZ" else 0


def _complete(buf: bytes) -> int:
    """Length of buf without an incomplete UTF-8 character at its end."""
    for back in range(1, min(4, len(buf)) + 1):
        b = buf[-back]
        if b & 0xC0 != 0x80:  # a lead byte (or ASCII)
            need = 2 if 0xC2 <= b <= 0xDF else 3 if 0xE0 <= b <= 0xEF else 4 if 0xF0 <= b <= 0xF4 else 1
            return len(buf) - back if need > back else len(buf)
    return len(buf)
