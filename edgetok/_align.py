"""NFC with Hugging Face's alignment: which character of the original text each character of
its NFC form stands for, as tokenizers' NormalizedString records it, so that offsets on a
model that normalises to NFC point into the text as given.

tokenizers normalises through a stream of (character, change) pairs: each character is
decomposed (the first character of its decomposition replaces it, change 0, the others are
inserted, change 1), each run of non-starters is stably sorted by combining class, and the
stream is recomposed, a composite taking the change of its first part plus the other's minus
one (it consumes both). Alignments are then handed out by position: a character with change
<= 0 takes the next original character's (and skips -change more), an inserted one the
previous character's. So a composite is aligned to the first character it consumed only, and
after a reordering a mark may be aligned to another mark's position: Hugging Face's offsets,
quirks included."""
from __future__ import annotations

import unicodedata


def _compose(a: str, b: str) -> str | None:
    """The primary composite of a and b, or None."""
    s = unicodedata.normalize("NFC", a + b)
    return s if len(s) == 1 else None


def nfc_aligned(text: str) -> tuple[str, list[int]]:
    """(NFC(text), align): align[i] is the index in text of the character that NFC(text)[i]
    is aligned to, -1 for one aligned to nothing (Hugging Face's (0, 0))."""
    ccc = unicodedata.combining
    stream: list[tuple[int, str, int]] = []  # (combining class, character, change)
    for c in text:
        for i, d in enumerate(unicodedata.normalize("NFD", c)):
            stream.append((ccc(d), d, 1 if i else 0))
    i = 0
    while i < len(stream):  # stable sort of each run of non-starters by class
        if stream[i][0] == 0:
            i += 1
            continue
        j = i
        while j < len(stream) and stream[j][0]:
            j += 1
        stream[i:j] = sorted(stream[i:j], key=lambda e: e[0])
        i = j
    out: list[tuple[str, int]] = []
    held: list[tuple[str, int]] = []  # non-starters after the composee that it did not take
    base: tuple[str, int] | None = None  # the starter being composed
    held_class = -1  # class of the last held non-starter, -1: none held
    for cls, ch, change in stream:
        if base is None:
            if cls:
                out.append((ch, change))
            else:
                base = (ch, change)
            continue
        blocked = held_class >= 0 and held_class >= cls
        if not blocked:
            r = _compose(base[0], ch)
            if r is not None:
                base = (r, base[1] + change - 1)
                continue
        if cls == 0:  # a new starter: the composee and what it held are done
            out.append(base)
            out += held
            held, held_class, base = [], -1, (ch, change)
        else:
            held.append((ch, change))
            held_class = cls
    if base is not None:
        out.append(base)
    out += held
    align: list[int] = []
    at = 0
    for _, change in out:
        if change > 0:
            align.append(at - 1)
        else:
            align.append(at)
            at += 1 - change
    return "".join(c for c, _ in out), align
