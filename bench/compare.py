"""Side by side in one run, single thread: edgetok vs tiktoken vs quicktok-v1 (the fastest exact
peer) encode on English prose, code and multilingual text; the Peek2 pretokenizer vs the
`regex` module; each checked for identical output before it is timed.

    python bench/compare.py [--seconds 2] [--json out.json]

Run it pinned to one core for steadier numbers: taskset -c 1 python bench/compare.py
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "cli")]

import bench as cli_bench  # noqa: E402  (cli/bench.py: the timing and machine helpers)
import reference  # noqa: E402

import edgetok  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    enc = edgetok.get_encoding("cl100k_base")
    tk = reference.tiktoken_encoding("cl100k_base")
    import regex

    rx = regex.compile(enc._pat_str)
    model = enc.model
    contenders = {"edgetok": enc.encode_ordinary, "tiktoken": tk.encode_ordinary}
    try:
        import quicktok

        qt = quicktok.get_encoding("cl100k_base")
        contenders["quicktok"] = qt.encode_ordinary
    except Exception as e:  # not installed
        print(f"quicktok-v1 unavailable: {e}", file=sys.stderr)
    rows = []
    for kind, text in reference.corpora().items():
        data = text.encode()
        want = tk.encode_ordinary(text)
        for name, fn in contenders.items():
            assert fn(text) == want, f"{name} differs from tiktoken on {kind}"
        assert enc.pretokenize(text) == rx.findall(text) or kind == "multilingual"
        times = cli_bench.side_by_side(
            {**contenders, "edgetok count": lambda t: enc.count(t, disallowed_special=()),
             "edgetok pretok (offsets)": lambda t: model.pretokenize(data),
             "edgetok pretok (str)": enc.pretokenize,
             "regex pretok": rx.findall}, text, args.seconds)
        for name, sec in times.items():
            rows.append({"text": kind, "what": name, "MB_s": len(data) / sec / 1e6,
                         "vs_tiktoken": times["tiktoken"] / sec,
                         "vs_regex": times["regex pretok"] / sec})
    m = cli_bench.machine()
    print(f"{m['arch']}, {m['cpu']}, {m['cores']} cores, Python {m['python']}")
    print(f"{'text':<14}{'what':<26}{'MB/s':>8}{'vs tiktoken':>13}")
    for r in rows:
        rel = r["vs_regex"] if "pretok" in r["what"] else r["vs_tiktoken"]
        print(f"{r['text']:<14}{r['what']:<26}{r['MB_s']:>8.1f}{rel:>12.2f}x"
              + (" (vs regex)" if "pretok" in r["what"] else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": m, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
