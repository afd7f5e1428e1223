"""Side by side in one run, single thread: edgetok vs tiktoken and the exact peers that are
installed (bench/peers.py: fastokens, gigatoken, Hugging Face tokenizers, quicktok-v1), each
checked for ids identical to tiktoken's before it is timed, on English prose, code,
multilingual text and (where /usr/share/man has translations) ~3 MB of translated man pages:

- repeated text: each contender encodes the same text again and again, interleaved in rounds
- text never seen before: for each text, a fresh process per contender encodes it once, in
  256 KB parts; best of 3 such processes, contenders interleaved (--no-unseen to skip)
- cold start (load + encode 1 KB in a fresh interpreter, best of 5) and its peak RSS
- the Peek2 pretokenizer vs the `regex` module

    python bench/compare.py [--seconds 2] [--json out.json] [--peers fastokens,gigatoken]

Run it pinned to one core for steadier numbers: taskset -c 1 python bench/compare.py
(4 KB batches on all cores: bench/parallel.py)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "cli"), str(ROOT / "bench")]

import bench as cli_bench  # noqa: E402  (cli/bench.py: the timing and machine helpers)
import peers as peer_mod  # noqa: E402
import reference  # noqa: E402

PART = 256 * 1024
UNSEEN_ROUNDS = 3  # fresh processes per contender for the unseen text (a single one is noisy)


def texts() -> dict[str, str]:
    out = dict(reference.corpora())
    man = peer_mod.multilingual_man()
    if man:
        out["multi (man)"] = man
    return out


def contenders(enc, peers):  # type: ignore[no-untyped-def]
    """name -> str -> anything (timed); edgetok's and the peers' encode, and the counts."""
    out = {} if enc is None else {
        "edgetok": enc.encode_ordinary, "edgetok count": lambda t: enc.count(t, disallowed_special=())}
    for p in peers:
        out[p["name"]] = p["encode"]
        if "count" in p:
            out[p["name"] + " count"] = p["count"]
    return out


def unseen_worker(name: str, path: str) -> None:
    """In a fresh process: load one contender, encode each 256 KB part of the file once."""
    data = Path(path).read_text()
    parts = [data[i:i + PART] for i in range(0, len(data), PART)]
    if name.startswith("edgetok"):
        import edgetok

        enc = edgetok.get_encoding("cl100k_base")
        fn = contenders(enc, [])[name]
    else:
        base = name.split(" ")[0]
        fn = contenders(None, peer_mod.load((base,)) if base != "tiktoken" else
                        [p for p in peer_mod.load(()) if p["name"] == "tiktoken"])[name]
    fn("warm up: lazy set-up")  # (one-time initialisation is not what this measures)
    t0 = time.perf_counter()
    for p in parts:
        fn(p)
    print(json.dumps({"seconds": time.perf_counter() - t0}))


def startup_probe(name: str) -> str:
    """Python source: load `name`, encode 1 KB, print the peak RSS in KB (VmHWM: ru_maxrss
    would carry the benchmark's own over exec)."""
    body = {
        "edgetok": "import edgetok\ne = edgetok.get_encoding('cl100k_base')\ne.encode_ordinary(T)",
        "tiktoken": "import reference\ne = reference.tiktoken_encoding('cl100k_base')\ne.encode_ordinary(T)",
    }.get(name, f"import peers\np = peers.load(({name!r},))[-1]\np['encode'](T)")
    return (f"import sys; sys.path[:0] = {[str(ROOT / 'tests'), str(ROOT / 'bench')]!r}\n"
            "T = 'Hello, world. ' * 70\n" + body +
            "\nprint([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")


def cold(name: str, runs: int = 5) -> tuple[float, float]:
    """(best wall seconds, peak RSS MB) of startup_probe(name) in fresh interpreters."""
    best, rss = float("inf"), 0.0
    src = startup_probe(name)
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True)
        el = time.perf_counter() - t0
        if p.returncode:
            raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr else "failed")
        best, rss = min(best, el), int(p.stdout.split()[-1]) / 1024
    return best, rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--peers", default="fastokens,gigatoken,tokenizers,quicktok")
    ap.add_argument("--no-repeated", action="store_true", help="skip the repeated-text runs")
    ap.add_argument("--no-unseen", action="store_true", help="skip the fresh-process runs")
    ap.add_argument("--no-startup", action="store_true", help="skip cold start and RSS")
    ap.add_argument("--unseen-worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.unseen_worker:
        return unseen_worker(*args.unseen_worker)

    import regex

    import edgetok

    enc = edgetok.get_encoding("cl100k_base")
    notes: list[str] = []
    corpora = texts()
    peers = peer_mod.check(peer_mod.load(tuple(filter(None, args.peers.split(","))), notes),
                           corpora, notes)
    versions = {p["name"]: p["version"] for p in peers}
    fns = contenders(enc, peers)
    for kind, text in corpora.items():
        assert enc.encode_ordinary(text) == reference.tiktoken_encoding().encode_ordinary(text), kind
    rx = regex.compile(enc._pat_str)
    model = enc.model
    rows = []
    for kind, text in ({} if args.no_repeated else corpora).items():
        data = text.encode()
        assert enc.pretokenize(text) == rx.findall(text) or "multi" in kind
        times = cli_bench.side_by_side(
            {**fns, "edgetok pretok (offsets)": lambda t: model.pretokenize(data),
             "edgetok pretok (str)": enc.pretokenize, "regex pretok": rx.findall},
            text, args.seconds)
        for name, sec in times.items():
            rows.append({"text": kind, "what": name, "MB_s": len(data) / sec / 1e6,
                         "vs_tiktoken": times["tiktoken"] / sec,
                         "vs_fastokens": times["fastokens"] / sec if "fastokens" in times else None,
                         "vs_regex": times["regex pretok"] / sec})
    unseen = []
    if not args.no_unseen:
        for kind, text in corpora.items():
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                f.write(text)
            size = os.path.getsize(f.name)
            try:
                secs: dict[str, float] = {}
                for _ in range(UNSEEN_ROUNDS):  # contenders interleaved, the best of each kept
                    for name in fns:
                        p = subprocess.run([sys.executable, __file__, "--unseen-worker", name,
                                            f.name], capture_output=True, text=True)
                        if p.returncode:
                            notes.append(f"unseen {kind} {name}: {p.stderr.strip()[-200:]}")
                            continue
                        sec = json.loads(p.stdout.splitlines()[-1])["seconds"]
                        secs[name] = min(sec, secs.get(name, sec))
            finally:
                os.unlink(f.name)
            for name, sec in secs.items():
                unseen.append({"text": kind, "what": name, "MB_s": size / sec / 1e6,
                               "vs_tiktoken": secs["tiktoken"] / sec if "tiktoken" in secs else None,
                               "vs_fastokens": secs["fastokens"] / sec if "fastokens" in secs else None})
    startup = []
    if not args.no_startup:
        t_pass = min(cold_pass() for _ in range(5))
        for name in ["edgetok", *versions]:
            try:
                sec, rss = cold(name)
                startup.append({"what": name, "ms": sec * 1e3, "RSS_MB": rss})
            except Exception as e:  # noqa: BLE001
                notes.append(f"startup {name}: {e}")
        startup.append({"what": "python -c pass", "ms": t_pass * 1e3, "RSS_MB": None})

    m = cli_bench.machine()
    print(f"{m['arch']}, {m['cpu']}, {m['cores']} cores, Python {m['python']}; peers: "
          + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"\nrepeated text\n{'text':<14}{'what':<26}{'MB/s':>8}{'x tiktoken':>12}{'x fastokens':>13}")
    for r in rows:
        if "pretok" in r["what"]:
            print(f"{r['text']:<14}{r['what']:<26}{r['MB_s']:>8.1f}{r['vs_regex']:>11.2f}x (vs regex)")
        else:
            fo = f"{r['vs_fastokens']:>12.2f}x" if r["vs_fastokens"] else ""
            print(f"{r['text']:<14}{r['what']:<26}{r['MB_s']:>8.1f}{r['vs_tiktoken']:>11.2f}x{fo}")
    if unseen:
        print(f"\ntext never seen before (fresh process, each text once in 256 KB parts; best of "
              f"{UNSEEN_ROUNDS})")
        for r in unseen:
            tk = f"{r['vs_tiktoken']:>11.2f}x" if r["vs_tiktoken"] else ""
            fo = f"{r['vs_fastokens']:>12.2f}x" if r["vs_fastokens"] else ""
            print(f"{r['text']:<14}{r['what']:<26}{r['MB_s']:>8.1f}{tk}{fo}")
    if startup:
        print("\ncold start: load + encode 1 KB in a fresh interpreter (best of 5), peak RSS")
        for r in startup:
            rss = f"{r['RSS_MB']:>8.1f} MB" if r["RSS_MB"] else ""
            print(f"{'':<14}{r['what']:<26}{r['ms']:>8.0f} ms{rss}")
    for n in notes:
        print("note:", n)
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": m, "peers": versions, "rows": rows,
                                               "unseen": unseen, "startup": startup,
                                               "notes": notes}, indent=2))


def cold_pass() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
