"""The libFuzzer targets of csrc/fuzz (encode on each model family, the loader on mutated and
re-sealed models, the compiler on generated vocabularies, token automata), each run briefly from its committed
seed corpus: no sanitizer report, no broken invariant, no hang. Long runs: csrc/fuzz/run.sh."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECONDS = int(os.environ.get("ET_FUZZ_SECONDS", "30"))


def libfuzzer_missing(tmp: Path) -> str | None:
    clang = os.environ.get("CC_FUZZ") or shutil.which("clang")
    if clang is None:
        return "no clang"
    src = tmp / "probe.c"
    src.write_text("int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)"
                   " { (void)d; (void)n; return 0; }\n")
    p = subprocess.run([clang, "-fsanitize=fuzzer,address,undefined", str(src), "-o",
                        str(tmp / "probe")], capture_output=True, text=True)
    if p.returncode:
        return ("clang cannot link libFuzzer with ASan/UBSan (Debian: apt-get install "
                "libclang-rt-dev): " + p.stderr.strip().splitlines()[-1])
    return None


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    d = tmp_path_factory.mktemp("fuzz")
    why = libfuzzer_missing(d)
    if why:
        pytest.skip(why)
    return d


@pytest.mark.slow
@pytest.mark.parametrize("target", ["encode", "load", "compile", "automata"])
def test_fuzz_target(fuzz_dir, target):  # type: ignore[no-untyped-def]
    p = subprocess.run(["bash", "csrc/fuzz/run.sh", target, str(SECONDS)], cwd=ROOT,
                       capture_output=True, text=True, timeout=SECONDS + 300,
                       env={**os.environ, "ET_FUZZ_DIR": str(fuzz_dir)})
    crashes = sorted(fuzz_dir.glob(f"crash-{target}-*"))
    assert p.returncode == 0 and not crashes, (
        f"fuzz_{target} found {[c.name for c in crashes]} (hex: "
        f"{[c.read_bytes()[:256].hex() for c in crashes]})\n{p.stderr[-6000:]}")
    assert "Done" in p.stderr, p.stderr[-3000:]
