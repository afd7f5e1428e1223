"""SentencePiece models: read a .model file (the ModelProto protobuf, with a small wire-format
reader of our own) and compile it for the C core, which encodes and decodes."""
from __future__ import annotations

import struct
from pathlib import Path

from ._ffi import ModelError, compile_unigram

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
UNIGRAM, BPE = 1, 2


def _varint(b: bytes, i: int) -> tuple[int, int]:
    r = s = 0
    while True:
        if i >= len(b):
            raise ModelError("truncated protobuf varint")
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def _fields(b: bytes):  # type: ignore[no-untyped-def]
    """(field number, value) pairs of a protobuf message: ints, or bytes for length-delimited."""
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
            raise ModelError(f"unsupported protobuf wire type {wire}")
        if i > len(b):
            raise ModelError("truncated protobuf message")
        yield num, v


class SentencePieceModel:
    """What edgetok needs from a ModelProto."""

    def __init__(self, data: bytes, source: str = "<memory>"):
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
            for num, v in _fields(data):
                if num == 1:  # SentencePiece
                    piece, score, typ = b"", 0.0, NORMAL
                    for f, x in _fields(v):
                        if f == 1:
                            piece = x
                        elif f == 2:
                            score = struct.unpack("<f", x)[0]
                        elif f == 3:
                            typ = x
                    self.pieces.append(piece)
                    self.scores.append(score)
                    self.types.append(typ)
                elif num == 2:  # TrainerSpec
                    for f, x in _fields(v):
                        if f == 3:
                            self.model_type = x
                        elif f == 24:
                            self.treat_ws_as_suffix = bool(x)
                        elif f == 35:
                            self.byte_fallback = bool(x)
                        elif f == 40:
                            self.unk_id = x
                        elif f == 46:
                            bos_piece = x
                        elif f == 47:
                            eos_piece = x
                        elif f == 44:
                            self.unk_surface = x.decode("utf-8")
                elif num == 3:  # NormalizerSpec
                    for f, x in _fields(v):
                        if f == 2:
                            self.charsmap = x
                        elif f == 3:
                            self.add_dummy_prefix = bool(x)
                        elif f == 4:
                            self.remove_extra_ws = bool(x)
                        elif f == 5:
                            self.escape_ws = bool(x)
        except (IndexError, struct.error, UnicodeDecodeError) as e:
            raise ModelError(f"{source}: not a SentencePiece model ({e})") from None
        if not self.pieces:
            raise ModelError(f"{source}: not a SentencePiece model (no pieces)")
        # as sentencepiece: BOS and EOS are the pieces so named, if they are control pieces
        ids = {p: i for i, p in enumerate(self.pieces) if self.types[i] == CONTROL}
        self.bos_id: int | None = ids.get(bos_piece)
        self.eos_id: int | None = ids.get(eos_piece)
        if self.model_type not in (UNIGRAM, BPE):
            raise ModelError(f"{source}: SentencePiece model type {self.model_type} is not "
                             "supported (only Unigram and BPE)")

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
                               self.flags, self.unk_id, self.unk_surface, self.bos_id, self.eos_id)


def from_gguf(md: dict, source: str) -> SentencePieceModel:  # type: ignore[type-arg]
    """The SentencePiece model in a GGUF file's tokenizer metadata (tokenizer.ggml.model
    "llama": BPE, "t5": Unigram), with llama.cpp's defaults for keys it leaves out (dummy
    prefix on, extra whitespace kept, byte fallback when the vocabulary has byte pieces)."""
    sp = SentencePieceModel.__new__(SentencePieceModel)
    try:
        sp.pieces = list(md["tokenizer.ggml.tokens"])
        n = len(sp.pieces)
        sp.scores = [float(x) for x in md.get("tokenizer.ggml.scores") or [0.0] * n]
        sp.types = [int(x) for x in md.get("tokenizer.ggml.token_type") or [NORMAL] * n]
    except (KeyError, TypeError, ValueError) as e:
        raise ModelError(f"{source}: incomplete GGUF tokenizer ({e})") from None
    if not (len(sp.scores) == len(sp.types) == n) or not n:
        raise ModelError(f"{source}: GGUF tokens, scores and types differ in number")
    if any(not 1 <= t <= 6 for t in sp.types):
        raise ModelError(f"{source}: unknown token type in the GGUF vocabulary")
    sp.model_type = BPE if md["tokenizer.ggml.model"] == b"llama" else UNIGRAM
    sp.byte_fallback = BYTE in sp.types
    sp.treat_ws_as_suffix = False
    sp.unk_id = int(md.get("tokenizer.ggml.unknown_token_id", 0))
    if not 0 <= sp.unk_id < n:
        raise ModelError(f"{source}: unknown-token id {sp.unk_id} out of range")
    sp.unk_surface = " \u2047 "
    for what, key in (("bos_id", "tokenizer.ggml.bos_token_id"), ("eos_id", "tokenizer.ggml.eos_token_id")):
        v = md.get(key)
        setattr(sp, what, int(v) if v is not None and 0 <= int(v) < n else None)
    sp.add_dummy_prefix = bool(md.get("tokenizer.ggml.add_space_prefix", True))
    sp.remove_extra_ws = bool(md.get("tokenizer.ggml.remove_extra_whitespaces", False))
    sp.escape_ws = True
    sp.charsmap = bytes(x & 0xFF for x in md.get("tokenizer.ggml.precompiled_charsmap") or [])
    return sp


def read(path: str | Path) -> SentencePieceModel:
    return SentencePieceModel(Path(path).read_bytes(), str(path))
