"""SentencePiece models: read a .model file (the ModelProto protobuf, with a small wire-format
reader of our own) and compile it for the C core, which encodes and decodes."""
from __future__ import annotations

import struct
from pathlib import Path

from ._ffi import ModelError, compile_unigram

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
UNIGRAM, BPE = 1, 2


MAX_VARINT = 10  # bytes of a 64-bit varint


class _Malformed(Exception):
    """What is wrong with a ModelProto (SentencePieceModel adds the file's name)."""


def _varint(b: bytes, i: int) -> tuple[int, int]:
    r = s = 0
    for k in range(MAX_VARINT):
        if i + k >= len(b):
            raise _Malformed("truncated protobuf varint")
        c = b[i + k]
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            if r >> 64:
                break
            return r, i + k + 1
    raise _Malformed(f"protobuf varint at byte {i} longer than 64 bits")


def _fields(b: bytes):  # type: ignore[no-untyped-def]
    """(field number, wire type, value) of a protobuf message: int for a varint, else bytes."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wire == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise _Malformed(f"unsupported protobuf wire type {wire}")
        if i > len(b):
            raise _Malformed("truncated protobuf message")
        yield num, wire, v


def _bytes(wire: int, v: int | bytes, what: str) -> bytes:
    if wire != 2:
        raise _Malformed(f"{what} is not a string (protobuf wire type {wire})")
    return v  # type: ignore[return-value]


def _int(wire: int, v: int | bytes, what: str) -> int:
    """A varint as protobuf's int32, enum and bool read it (negative int32: ten bytes)."""
    if wire != 0:
        raise _Malformed(f"{what} is not an integer (protobuf wire type {wire})")
    x = v - (1 << 64) if v >> 63 else v  # type: ignore[operator]
    if not -(1 << 31) <= x < 1 << 31:
        raise _Malformed(f"{what} {x} does not fit 32 bits")
    return x


def _float(wire: int, v: int | bytes, what: str) -> float:
    if wire != 5:
        raise _Malformed(f"{what} is not a float (protobuf wire type {wire})")
    return struct.unpack("<f", v)[0]  # type: ignore[arg-type]


def _text(b: bytes, what: str) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise _Malformed(f"{what} {b!r} is not UTF-8") from None


class SentencePieceModel:
    """What edgetok needs from a ModelProto."""

    def __init__(self, data: bytes, source: str = "<memory>"):
        self.source = source
        self.pieces: list[bytes] = []
        self.scores: list[float] = []
        self.types: list[int] = []
        self.model_type = UNIGRAM
        self.byte_fallback = False
        self.treat_ws_as_suffix = False
        self.unk_id = 0
        bos_piece, eos_piece = b"<s>", b"</s>"  # sentencepiece's defaults
        self.unk_surface = " \u2047 "
        self.add_dummy_prefix = self.remove_extra_ws = self.escape_ws = True
        self.charsmap = b""
        try:
            for num, wire, v in _fields(data):
                if num == 1:  # SentencePiece
                    what = f"piece {len(self.pieces)}"
                    piece, score, typ = b"", 0.0, NORMAL
                    for f, w, x in _fields(_bytes(wire, v, what)):
                        if f == 1:
                            piece = _bytes(w, x, f"{what}'s text")
                        elif f == 2:
                            score = _float(w, x, f"{what}'s score")
                        elif f == 3:
                            typ = _int(w, x, f"{what}'s type")
                    if not 1 <= typ <= 6:
                        raise _Malformed(f"{what} ({piece!r}) has type {typ}; types are 1 to 6")
                    self.pieces.append(piece)
                    self.scores.append(score)
                    self.types.append(typ)
                elif num == 2:  # TrainerSpec
                    for f, w, x in _fields(_bytes(wire, v, "the trainer spec")):
                        if f == 3:
                            self.model_type = _int(w, x, "the model type")
                        elif f == 24:
                            self.treat_ws_as_suffix = bool(_int(w, x, "treat_whitespace_as_suffix"))
                        elif f == 35:
                            self.byte_fallback = bool(_int(w, x, "byte_fallback"))
                        elif f == 40:
                            self.unk_id = _int(w, x, "unk_id")
                        elif f == 46:
                            bos_piece = _bytes(w, x, "bos_piece")
                        elif f == 47:
                            eos_piece = _bytes(w, x, "eos_piece")
                        elif f == 44:
                            self.unk_surface = _text(_bytes(w, x, "unk_surface"), "unk_surface")
                elif num == 3:  # NormalizerSpec
                    for f, w, x in _fields(_bytes(wire, v, "the normalizer spec")):
                        if f == 2:
                            self.charsmap = _bytes(w, x, "precompiled_charsmap")
                        elif f == 3:
                            self.add_dummy_prefix = bool(_int(w, x, "add_dummy_prefix"))
                        elif f == 4:
                            self.remove_extra_ws = bool(_int(w, x, "remove_extra_whitespaces"))
                        elif f == 5:
                            self.escape_ws = bool(_int(w, x, "escape_whitespaces"))
        except _Malformed as e:
            raise ModelError(f"{source}: not a valid SentencePiece model: {e}") from None
        if not self.pieces:
            raise ModelError(f"{source}: not a SentencePiece model (no pieces)")
        if self.model_type not in (UNIGRAM, BPE):
            raise ModelError(f"{source}: SentencePiece model type {self.model_type} is not "
                             "supported (only Unigram and BPE)")
        if not 0 <= self.unk_id < len(self.pieces):
            raise ModelError(f"{source}: unk_id {self.unk_id} is not one of the "
                             f"{len(self.pieces)} pieces")
        # as sentencepiece: BOS and EOS are the pieces so named, if they are control pieces
        ids = {p: i for i, p in enumerate(self.pieces) if self.types[i] == CONTROL}
        self.bos_id: int | None = ids.get(bos_piece)
        self.eos_id: int | None = ids.get(eos_piece)

    @property
    def flags(self) -> int:
        return (self.add_dummy_prefix * 1 | self.remove_extra_ws * 2 | self.escape_ws * 4
                | self.byte_fallback * 8 | self.treat_ws_as_suffix * 16
                | (self.model_type == BPE) * 64)

    def use_fairseq_ids(self, source: str) -> None:
        """Renumber as fairseq's dictionary, which Hugging Face's XLM-RoBERTa tokenizers use
        (fairseq_offset 1): <s> 0, <pad> 1, </s> 2, <unk> 3, piece i >= 3 at i + 1, <mask>
        last. The model must start as XLM-R's does: <unk>, <s>, </s>."""
        head = [(self.pieces[i], self.types[i]) for i in range(min(3, len(self.pieces)))]
        if head != [(b"<unk>", UNKNOWN), (b"<s>", CONTROL), (b"</s>", CONTROL)]:
            raise ModelError(f"{source}: fairseq ids need a model that starts with <unk>, <s>, "
                             f"</s> (as XLM-R's sentencepiece.bpe.model); this one starts with "
                             f"{b', '.join(p for p, _ in head).decode(errors='replace')}")
        if b"<mask>" in self.pieces or b"<pad>" in self.pieces:
            raise ModelError(f"{source}: already holds <pad> or <mask>; fairseq ids do not apply")
        sc = self.scores
        self.pieces = [b"<s>", b"<pad>", b"</s>", b"<unk>"] + self.pieces[3:] + [b"<mask>"]
        self.scores = [sc[1], 0.0, sc[2], sc[0]] + sc[3:] + [0.0]
        self.types = [CONTROL, CONTROL, CONTROL, UNKNOWN] + self.types[3:] + [CONTROL]
        self.unk_id, self.bos_id, self.eos_id = 3, 0, 2

    def compile(self) -> bytes:
        return compile_unigram(self.pieces, self.scores, bytes(self.types), self.charsmap,
                               self.flags, self.unk_id, self.unk_surface, self.bos_id, self.eos_id,
                               self.source)


def from_gguf(md: dict, source: str) -> SentencePieceModel:  # type: ignore[type-arg]
    """The SentencePiece model in a GGUF file's tokenizer metadata (tokenizer.ggml.model
    "llama": BPE, "t5": Unigram), with llama.cpp's defaults for keys it leaves out (dummy
    prefix on, extra whitespace kept, byte fallback when the vocabulary has byte pieces)."""
    from . import gguf

    sp = SentencePieceModel.__new__(SentencePieceModel)
    sp.source = source
    sp.pieces = gguf.array(md, "tokenizer.ggml.tokens", bytes, source, required=True) or []
    n = len(sp.pieces)
    sp.scores = gguf.array(md, "tokenizer.ggml.scores", float, source, n) or [0.0] * n
    sp.types = gguf.array(md, "tokenizer.ggml.token_type", int, source, n) or [NORMAL] * n
    bad = next((i for i, t in enumerate(sp.types) if not 1 <= t <= 6), None)
    if bad is not None:
        raise ModelError(f"{source}: token {bad} has type {sp.types[bad]}; types are 1 to 6")
    sp.model_type = BPE if gguf.string(md, "tokenizer.ggml.model", source) == b"llama" else UNIGRAM
    sp.byte_fallback = BYTE in sp.types
    sp.treat_ws_as_suffix = False
    sp.unk_id = gguf.integer(md, "tokenizer.ggml.unknown_token_id", source, 0)
    if not 0 <= sp.unk_id < n:
        raise ModelError(f"{source}: unknown-token id {sp.unk_id} out of range")
    sp.unk_surface = " \u2047 "
    for what, key in (("bos_id", "tokenizer.ggml.bos_token_id"), ("eos_id", "tokenizer.ggml.eos_token_id")):
        v = gguf.integer(md, key, source)
        setattr(sp, what, int(v) if v is not None and 0 <= v < n else None)
    sp.add_dummy_prefix = bool(gguf.integer(md, "tokenizer.ggml.add_space_prefix", source, True))
    sp.remove_extra_ws = bool(gguf.integer(md, "tokenizer.ggml.remove_extra_whitespaces", source,
                                           False))
    sp.escape_ws = True
    charsmap = gguf.array(md, "tokenizer.ggml.precompiled_charsmap", int, source) or []
    sp.charsmap = bytes(x & 0xFF for x in charsmap)
    return sp


def read(path: str | Path) -> SentencePieceModel:
    return SentencePieceModel(Path(path).read_bytes(), str(path))
