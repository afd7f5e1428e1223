"""Wall-clock timings of the C core and of the wheels, native against qemu user-mode emulation.

    cross/build/venv/bin/python cross/timing.py        (after cross/build.sh and cross/test.sh)

1. The csrc/tools/etok driver built for this machine (gcc -O2) and cross-built for aarch64 and
   armhf (static, -O2), each run as `etok count MODEL FILE` on the full sample texts (English,
   code, multilingual) and on an empty file (start-up and model load); best of 5 runs each.
2. `enc.encode(text)` inside Python, timed in the process (best of 3, start-up excluded): the
   build venv's native edgetok, and each wheel in Debian 12's Python under qemu.
qemu translates ARM code into x86 code, so these say what emulation costs here, not how fast
an ARM board is; run `edgetok bench` on the board for that.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import edgetok
from edgetok import samples

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = Path(os.environ.get("EDGETOK_CROSS_WORK", HERE / "build"))
DIST = Path(os.environ.get("EDGETOK_CROSS_DIST", HERE / "dist"))
sys.path.insert(0, str(ROOT / "tests"))
from test_cross import FLAGS, TARGETS, core_sources  # noqa: E402


def best(cmd: list[str], n: int) -> tuple[float, bytes]:
    times, out = [], b""
    for _ in range(n):
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, check=True).stdout
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="edgetok-timing-"))
    model = edgetok.get_encoding("cl100k_base").model.source
    texts = {kind: getattr(samples, kind)() for kind in samples.KINDS}
    files = {}
    for kind, text in texts.items():
        files[kind] = tmp / f"{kind}.txt"
        files[kind].write_text(text, encoding="utf-8")
    files["empty"] = tmp / "empty.txt"
    files["empty"].write_bytes(b"")
    drivers = {"x86_64 native": [str(tmp / "etok-native")]}
    subprocess.run(["gcc", *FLAGS, *core_sources(), "-o", drivers["x86_64 native"][0]], cwd=ROOT, check=True)
    for name, (cc, qemu, _, _) in TARGETS.items():
        exe = tmp / f"etok-{name}"
        subprocess.run([cc, "-static", *FLAGS, *core_sources(), "-o", str(exe)], cwd=ROOT, check=True)
        drivers[f"{name} qemu"] = [qemu, str(exe)]

    print("## C driver: etok count MODEL FILE, best of 5, wall ms (MB/s after subtracting the empty run)")
    print("| driver | empty | " + " | ".join(f"{k} ({len(t.encode()) / 1e6:.2f} MB)" for k, t in texts.items()) + " |")
    print("|---|---|" + "---|" * len(texts))
    for name, cmd in drivers.items():
        base, _ = best([*cmd, "count", model, str(files["empty"])], 5)
        cells = [f"{base * 1e3:.1f}"]
        for kind, text in texts.items():
            t, out = best([*cmd, "count", model, str(files[kind])], 5)
            rate = len(text.encode()) / max(t - base, 1e-9) / 1e6
            cells.append(f"{t * 1e3:.1f} ({rate:.0f} MB/s, {int(out)} ids)")
        print(f"| {name} | " + " | ".join(cells) + " |")

    probe = ("import edgetok, gzip, json, platform, sys, time\n"
             "e = edgetok.get_encoding('cl100k_base')\n"
             "r = {'machine': platform.machine(), 'python': platform.python_version()}\n"
             "for f in sys.argv[1:]:\n"
             "    t = open(f, encoding='utf-8').read(); ts = []\n"
             "    for _ in range(3):\n"
             "        a = time.perf_counter(); n = len(e.encode(t)); ts.append(time.perf_counter() - a)\n"
             "    r[f.rsplit('/', 1)[1]] = [min(ts), n, len(t.encode())]\n"
             "print(json.dumps(r))\n")
    shipped = [str(files[k]) for k in texts]
    runs = {"x86_64 native (build venv)": [sys.executable]}
    for name, (_, qemu, plat, arch) in TARGETS.items():
        root = WORK / "rootfs" / f"bookworm-{arch}"
        wheels = sorted(DIST.glob(f"edgetok-*_{plat}.whl"))
        if not wheels or not (root / ".edgetok-ready").exists():
            print(f"(no {plat} wheel or bookworm root: skipped)")
            continue
        site = tmp / f"site-{plat}"
        with zipfile.ZipFile(wheels[-1]) as z:
            z.extractall(site)
        runs[f"{plat} wheel, qemu"] = ["env", f"PYTHONPATH={site}", qemu, "-L", str(root),
                                       str(root / "usr/bin/python3")]
    print("\n## Python: enc.encode(text) in the process, best of 3, ms (MB/s)")
    print("| interpreter | " + " | ".join(texts) + " |")
    print("|---|" + "---|" * len(texts))
    for name, cmd in runs.items():
        r = json.loads(subprocess.run([*cmd, "-c", probe, *shipped], capture_output=True, check=True,
                                      cwd=tmp).stdout)
        cells = [f"{r[k + '.txt'][0] * 1e3:.0f} ({r[k + '.txt'][2] / r[k + '.txt'][0] / 1e6:.1f} MB/s)"
                 for k in texts]
        print(f"| {name} ({r['machine']}, Python {r['python']}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
