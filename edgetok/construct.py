"""Encodings built from tiktoken's constructor arguments (pat_str, mergeable_ranks,
special_tokens): the ranks of a built-in encoding reuse its model; others are compiled on
first use and kept in the cache, like `--model` sources."""
from __future__ import annotations

import threading
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._ffi import Model

_models: dict[str, "Model"] = {}  # compiled here, by content key (one per process)
_lock = threading.Lock()


def check_args(mergeable_ranks: dict[bytes, int], special_tokens: dict[str, int],
               explicit_n_vocab: int | None) -> int:
    """tiktoken's checks of the constructor arguments, with its exceptions; the largest id."""
    max_token_value = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
    if explicit_n_vocab:
        assert len(mergeable_ranks) + len(special_tokens) == explicit_n_vocab
        assert max_token_value == explicit_n_vocab - 1
    return max_token_value


def _vocab_text(mergeable_ranks: dict[bytes, int]) -> bytes:
    """The ranks as the text of a tiktoken vocabulary file (one 'base64 rank' line each, in
    rank order): the bytes the built-in encodings' sha256 pins are taken over."""
    import base64

    b64 = base64.b64encode
    return b"".join(b64(t) + b" %d\n" % r
                    for t, r in sorted(mergeable_ranks.items(), key=lambda kv: kv[1]))


def builtin_with(mergeable_ranks: dict[bytes, int], pretok: str) -> str | None:
    """The built-in encoding whose vocabulary is exactly mergeable_ranks, split by the same
    pretokenizer, if any."""
    import hashlib

    from .compiler import BUILTIN, P50K_SHA256, R50K_SHA256

    pins = {sha: (name, p) for name, (p, sha, _) in BUILTIN.items()}
    pins[R50K_SHA256] = ("r50k_base", "gpt2")
    pins[P50K_SHA256] = ("p50k_base", "gpt2")
    if len(mergeable_ranks) not in (50256, 50280, 100256, 199998):
        return None
    hit = pins.get(hashlib.sha256(_vocab_text(mergeable_ranks)).hexdigest())
    if hit is None or hit[1] != pretok:
        return None
    from .registry import list_encodings

    return hit[0] if hit[0] in list_encodings() else None


def build(name: str, pat_str: str, mergeable_ranks: dict[bytes, int],
          special_tokens: dict[str, int]) -> tuple["Model", str | None]:
    """(model, built-in name) for the arguments: the built-in encoding's model when the
    ranks and pattern are one's (name given), else a model compiled from them (None)."""
    import hashlib
    import json

    from .hf import pretokenizer_for

    if not isinstance(pat_str, str):
        raise TypeError(f"pat_str must be a str, not {type(pat_str).__name__}")
    pretok, pattern = pretokenizer_for([pat_str], f"Encoding {name!r}")
    base = builtin_with(mergeable_ranks, pretok)
    if base is not None:
        from .registry import get_encoding

        return get_encoding(base).model, base
    # special tokens the model itself can hold: ids of their own; the others stay in Python
    ranks = set(mergeable_ranks.values())
    ids: dict[int, int] = {}
    for i in special_tokens.values():
        ids[i] = ids.get(i, 0) + 1
    specials = [(s.encode(), i) for s, i in special_tokens.items() if i not in ranks and ids[i] == 1]
    h = hashlib.sha256(_vocab_text(mergeable_ranks))
    h.update(json.dumps([pretok, pattern, sorted((s.hex(), i) for s, i in specials)]).encode())
    key = h.hexdigest()
    with _lock:
        model = _models.get(key)
        if model is None:
            model = _compile(key, list(mergeable_ranks.items()), specials, pattern, pretok, name)
            _models[key] = model
    return model, None


def _compile(key: str, tokens: list[tuple[bytes, int]], specials: list[tuple[bytes, int]],
             pattern: str, pretok: str, name: str) -> "Model":
    from ._ffi import Model, compile_bpe
    from .cache import cached_key, store
    from .registry import _open_cached

    cached = cached_key(f"tiktoken-ranks\0{key}")
    model = _open_cached(cached) if cached is not None else None
    if model is None:
        image = compile_bpe(tokens, specials, pattern, pretok, source=f"Encoding {name!r}")
        model = Model.from_bytes(image, f"Encoding {name!r}")
        if cached is not None:
            store(cached, image)
    return model
