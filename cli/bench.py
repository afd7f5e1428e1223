"""`edgetok bench`: measure this machine. Throughput of encode, count and the pretokenizer
(side by side with tiktoken and the `regex` module when they are installed), cold start and
peak memory, on the sample texts shipped in the package or on the user's own file."""
from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

Fn = Callable[[str], object]


class BenchError(Exception):
    """A measurement that cannot be taken: one line saying why."""


def machine() -> dict[str, Any]:
    """What this board is: architecture, CPU model, cores, Python."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware", "cpu model") and val.strip():
                    cpu = val.strip()
                    break
    except OSError:
        pass
    return {"arch": platform.machine(), "cpu": cpu or "unknown", "cores": os.cpu_count(),
            "system": f"{platform.system()} {platform.release()}",
            "python": platform.python_version()}


def per_call(fn: Fn, arg: str, seconds: float) -> float:
    """Seconds per call of fn(arg): calls repeated for about `seconds`, the best of 3 rounds."""
    fn(arg)  # warm: caches, page faults, lazy imports
    best = float("inf")
    for _ in range(3):
        n, t0 = 0, time.perf_counter()
        while True:
            fn(arg)
            n += 1
            el = time.perf_counter() - t0
            if el >= seconds / 3:
                break
        best = min(best, el / n)
    return best


def side_by_side(contenders: dict[str, Fn], text: str, seconds: float,
                 rounds: int = 3) -> dict[str, float]:
    """Median seconds per call for each contender; rounds interleave them so that drift in the
    machine's speed (thermal throttling on a Pi, neighbours on a shared host) hits all alike."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for r in range(rounds):
        order = list(contenders)
        if r % 2:
            order.reverse()
        for k in order:
            times[k].append(per_call(contenders[k], text, seconds / rounds))
    return {k: statistics.median(v) for k, v in times.items()}


def reference_tokenizers(name: str) -> tuple[Any, Any, str]:
    """(tiktoken Encoding or None, compiled regex or None, note about what is missing)."""
    notes = []
    tk = rx = None
    try:
        import tiktoken

        tk = tiktoken.get_encoding(name)
    except ImportError:
        notes.append("tiktoken not installed")
    except Exception as e:  # its vocabulary is downloaded on first use: offline?
        notes.append(f"tiktoken's {name} unavailable ({type(e).__name__}; offline?)")
    try:
        import regex

        import edgetok

        rx = regex.compile(edgetok.get_encoding(name)._pat_str)
    except ImportError:
        notes.append("regex unavailable")
    return tk, rx, "; ".join(notes)


def throughput(name: str, texts: dict[str, str], seconds: float, tk: Any, rx: Any
               ) -> list[dict[str, Any]]:
    """Side by side: edgetok, and tiktoken (tk) and the regex module (rx, the pattern compiled)
    where given."""
    import edgetok

    enc = edgetok.get_encoding(name)
    rows = []
    for kind, text in texts.items():
        nbytes = len(text.encode("utf-8"))
        ntok = len(enc.encode_ordinary(text))
        c: dict[str, Fn] = {"edgetok encode": enc.encode_ordinary,
                            "edgetok count": lambda t: enc.count(t, disallowed_special=()),
                            "edgetok pretokenize": lambda t: enc.model.pretokenize(t.encode())}
        if tk is not None:
            c["tiktoken encode"] = tk.encode_ordinary
        if rx is not None:
            c["regex pretokenize"] = rx.findall
        for k, sec in side_by_side(c, text, seconds).items():
            rows.append({"text": kind, "what": k, "bytes": nbytes, "tokens": ntok,
                         "seconds": sec, "MB_s": nbytes / sec / 1e6, "Mtok_s": ntok / sec / 1e6})
    return rows


def _child(cwd: str, code: str, *args: str) -> tuple[float, str]:
    """Seconds a new Python process running code takes, and what it printed. It runs in cwd
    (a folder of its own: run from the project's source folder, `python -c` would import the
    unbuilt source tree rather than the installed edgetok); BenchError if it fails."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                           text=True)
    except OSError as e:
        raise BenchError(f"cannot start {sys.executable}: {e.strerror or e}") from None
    took = time.perf_counter() - t0
    if p.returncode != 0:
        lines = p.stderr.strip().splitlines() or [f"exit status {p.returncode}"]
        raise BenchError(f"a measuring process failed: {lines[-1]}")
    return took, p.stdout


COUNT_EDGETOK = ("import sys; from edgetok_cli.main import main; "
                 "sys.argv = ['edgetok', 'count', '-e', sys.argv[2], sys.argv[1]]; main()")
COUNT_TIKTOKEN = ("import sys, tiktoken; e = tiktoken.get_encoding(sys.argv[2]); "
                  "print(len(e.encode(open(sys.argv[1], encoding='utf-8').read())))")
# Peak RSS from /proc's VmHWM, in KiB: getrusage's ru_maxrss survives exec on Linux, so a
# child would report its parent's peak.
HWM = ("import re; print(re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1))")
PEAK_RSS = ("import sys, edgetok; e = edgetok.get_encoding(sys.argv[2]); "
            "e.encode_ordinary(open(sys.argv[1], encoding='utf-8').read()); " + HWM)


def cold_start(name: str, sample: str, compare: bool, runs: int = 7) -> dict[str, Any]:
    """Median wall time of a new process counting 1 KB, as `edgetok count` and via tiktoken;
    and the peak RSS of a process that encodes the sample."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        kb, full = os.path.join(d, "1k.txt"), os.path.join(d, "sample.txt")
        with open(kb, "w", encoding="utf-8") as f:
            f.write(sample.encode()[:1024].decode("utf-8", "ignore"))
        with open(full, "w", encoding="utf-8") as f:
            f.write(sample)
        out["python_s"] = statistics.median(_child(d, "pass")[0] for _ in range(runs))
        out["edgetok_count_1k_s"] = statistics.median(_child(d, COUNT_EDGETOK, kb, name)[0]
                                                      for _ in range(runs))
        if compare:
            try:
                _child(d, COUNT_TIKTOKEN, kb, name)
                out["tiktoken_count_1k_s"] = statistics.median(
                    _child(d, COUNT_TIKTOKEN, kb, name)[0] for _ in range(runs))
            except BenchError:  # tiktoken missing, or its vocabulary (offline)
                pass
        if os.path.exists("/proc/self/status"):
            out["peak_rss_mb"] = int(_child(d, PEAK_RSS, full, name)[1]) / 1024
            out["python_rss_mb"] = int(_child(d, HWM)[1]) / 1024
        out["sample_bytes"] = len(sample.encode())
    return out


def run(name: str, files: tuple[str, ...], seconds: float, compare: bool,
        progress: Callable[[str], None]) -> dict[str, Any]:
    import edgetok
    from edgetok import samples

    texts = {os.path.basename(f): open(f, encoding="utf-8", errors="replace").read() for f in files}
    texts = texts or samples.shipped()
    enc = edgetok.get_encoding(name)
    result: dict[str, Any] = {"machine": machine(), "encoding": name,
                              "model_memory": enc.model.backing, "edgetok": edgetok.__version__}
    tk, rx, note = reference_tokenizers(name) if compare else (None, None, "")
    if compare:
        result["reference"] = note or "tiktoken and regex"
    progress("throughput (single thread)...")
    result["throughput"] = throughput(name, texts, seconds, tk, rx)
    progress("cold start and memory...")
    result["start"] = cold_start(name, "\n".join(texts.values()), tk is not None)
    return result


def render(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = [f"machine   {m['arch']}, {m['cpu']}, {m['cores']} cores, {m['system']}, Python {m['python']}",
             f"encoding  {r['encoding']} (model in {r['model_memory']} memory), edgetok {r['edgetok']}"]
    if r.get("reference"):
        lines.append(f"compared  {r['reference']}")
    lines += ["", f"{'text':<14} {'what':<22} {'MB/s':>8} {'Mtok/s':>8} {'vs ref':>8}"]
    by = {(x["text"], x["what"]): x for x in r["throughput"]}
    for x in r["throughput"]:
        ref = {"edgetok encode": "tiktoken encode", "edgetok count": "tiktoken encode",
               "edgetok pretokenize": "regex pretokenize"}.get(x["what"])
        base = by.get((x["text"], ref or ""))
        ratio = f"{base['seconds'] / x['seconds']:.1f}x" if base else ""
        lines.append(f"{x['text']:<14} {x['what']:<22} {x['MB_s']:>8.1f} {x['Mtok_s']:>8.2f} {ratio:>8}")
    s = r["start"]
    lines += ["", f"cold start: `edgetok count` of 1 KB {s['edgetok_count_1k_s'] * 1e3:.0f} ms"
              + (f", via tiktoken {s['tiktoken_count_1k_s'] * 1e3:.0f} ms" if "tiktoken_count_1k_s" in s else "")
              + f" (bare python {s['python_s'] * 1e3:.0f} ms)",
              f"peak RSS encoding {s['sample_bytes'] / 1e6:.1f} MB of text: {s['peak_rss_mb']:.0f} MB "
              f"(bare python {s['python_rss_mb']:.0f} MB)" if "peak_rss_mb" in s else ""]
    return "\n".join(lines)
