"""The C core cross-compiled for ARM and run under qemu user-mode emulation: aarch64, and armhf
(32-bit ARMv7, hard float: 32-bit size_t and pointers, unsigned plain char). The csrc/tools/etok
driver, static, -O2 -Wall -Wextra -Werror, on real text against tiktoken's ids computed here,
and byte for byte against the same driver built for this machine. Then, when cross/build.sh
has built them, the aarch64 and armv7l wheels installed into Debian's own Python under qemu.

Needs the Debian packages gcc-aarch64-linux-gnu, gcc-arm-linux-gnueabihf,
libc6-dev-arm64-cross, libc6-dev-armhf-cross and qemu-user-static; skips, saying which is
missing, otherwise. See cross/README.md."""
from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path

import pytest

import reference

# exhaustive: `pytest -m slow` (README)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CROSS = ROOT / "cross"
WORK = Path(os.environ.get("EDGETOK_CROSS_WORK", CROSS / "build"))
DIST = Path(os.environ.get("EDGETOK_CROSS_DIST", CROSS / "dist"))
APT = ("apt-get install gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf libc6-dev-arm64-cross "
       "libc6-dev-armhf-cross qemu-user-static")
# target: (cross compiler, qemu user-mode emulator, wheel platform, Debian architecture)
TARGETS = {
    "aarch64": ("aarch64-linux-gnu-gcc", "qemu-aarch64-static", "aarch64", "arm64"),
    "armhf": ("arm-linux-gnueabihf-gcc", "qemu-arm-static", "armv7l", "armhf"),
}
FLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-Icsrc/include", "-Icsrc"]


def core_sources() -> list[str]:
    """The driver and the C files the extension is built from."""
    return ["csrc/tools/etok.c", *reference.core_sources()]


def compile_driver(cc: list[str], exe: Path) -> Path:
    p = subprocess.run([*cc, *FLAGS, *core_sources(), "-o", str(exe)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{' '.join(cc)} failed:\n{p.stderr[-4000:]}"
    return exe


@pytest.fixture(scope="module", params=sorted(TARGETS))
def target(request, tmp_path_factory) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
    """(name, command prefix) of the cross-compiled driver run under qemu."""
    name = request.param
    cc, qemu, _, _ = TARGETS[name]
    for tool in (cc, qemu):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed ({APT})")
    libc = subprocess.run([cc, "-print-file-name=libc.a"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(libc):
        pytest.skip(f"no static C library for {cc} ({APT})")
    exe = compile_driver([cc, "-static"], tmp_path_factory.mktemp(name) / "etok")
    return name, [qemu, str(exe)]


@pytest.fixture(scope="module")
def native(tmp_path_factory) -> list[str]:  # type: ignore[no-untyped-def]
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler for this machine")
    return [str(compile_driver([cc], tmp_path_factory.mktemp("native") / "etok"))]


@pytest.fixture(scope="module")
def model(enc) -> str:  # type: ignore[no-untyped-def]
    return enc.model.source


@pytest.fixture(scope="module")
def texts(ref, corpora, tmp_path_factory) -> dict[str, tuple[Path, list[int]]]:  # type: ignore[no-untyped-def]
    """Each real text in a file, with tiktoken's ids for it (computed once, here)."""
    d = tmp_path_factory.mktemp("texts")
    out = {}
    for kind, text in corpora.items():
        f = d / f"{kind}.txt"
        f.write_text(text, encoding="utf-8")
        out[kind] = (f, ref.encode_ordinary(text))
    return out


def run(cmd: list[str], *args: str, data: bytes | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*cmd, *args], input=data, capture_output=True, timeout=120,
                          env={**os.environ, **(env or {})})


def ids(out: bytes) -> list[int]:
    return [int(x) for x in out.split()]


def test_real_text(target, model, texts):  # type: ignore[no-untyped-def]
    name, etok = target
    for kind, (f, want) in texts.items():
        p = run(etok, "encode", model, str(f))
        assert p.returncode == 0, (name, kind, p.stderr.decode()[-2000:])
        got = ids(p.stdout)
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        assert got == want, f"{name} {kind}: {len(got)} ids vs tiktoken {len(want)}, first difference at {first}"
        assert int(run(etok, "count", model, str(f)).stdout) == len(want), (name, kind)


def test_long_pieces(target, model, ref):  # type: ignore[no-untyped-def]
    name, etok = target
    for text in ("x" * 70000, "\u00e9" * 30000 + "!", " " * 50000 + "a", "7" * 9000, "=+" * 20000,
                 "QUJD" * 25000):
        p = run(etok, "encode", model, data=text.encode())
        assert p.returncode == 0, (name, p.stderr.decode()[-2000:])
        assert ids(p.stdout) == ref.encode_ordinary(text), (name, text[:10])


def test_arbitrary_bytes(target, model, enc):  # type: ignore[no-untyped-def]
    """Bytes >= 0x80 are where plain char's signedness (signed on x86, unsigned on ARM) would
    show; invalid UTF-8 everywhere. Ids and piece ends as this machine's binding gives them."""
    name, etok = target
    rng = random.Random(1)
    alphabet = b"\x80\xbf\xc0\xc3\xe0\xe6\xed\xf0\xf4\xf5\xff 'a1\n\r\t\x00\x7f"
    for n in (1, 2, 3, 7, 64, 1000, 20000):
        data = bytes(rng.choice(alphabet) for _ in range(n))
        data += bytes(rng.randrange(256) for _ in range(n))
        p = run(etok, "encode", model, data=data)
        assert p.returncode == 0, (name, n)
        assert ids(p.stdout) == enc.model.encode(data)[0], (name, n)
        p = run(etok, "pretok", model, data=data)
        assert ids(p.stdout) == list(enc.model.pretokenize(data)), (name, n)


def test_budget_operations_match_native(target, native, model, corpora, tmp_path):  # type: ignore[no-untyped-def]
    name, etok = target
    text = corpora["multilingual"][:3000] + "x" * 400 + " \u00e9\U0001f600" * 30 + "  \n"
    f = tmp_path / "t.txt"
    f.write_bytes(text.encode())
    for n in ("1", "4", "9", "300"):
        a = run(etok, "split", model, str(f), env={"ETOK_N": n})
        b = run(native, "split", model, str(f), env={"ETOK_N": n})
        assert (a.returncode, a.stdout) == (b.returncode, b.stdout), (name, n)
    f.write_bytes("It's  a test\n\n of 12345 ranges \u00e9\u00e9 \U0001f600!".encode())
    a, b = run(etok, "range", model, str(f)), run(native, "range", model, str(f))
    assert a.returncode == 0 and (a.returncode, a.stdout) == (b.returncode, b.stdout), name


def test_damaged_models_match_native(target, native, model, tmp_path):  # type: ignore[no-untyped-def]
    """Truncated and randomly damaged models: the same status and output as on this machine."""
    name, etok = target
    image = Path(model).read_bytes()
    rng = random.Random(2)
    sample = tmp_path / "in.txt"
    sample.write_text("Hello, world! Damaged models must never crash: 12345 'll \u00e9\u00e9 \U0001f600\n")
    cases = [image, *(image[:n] for n in (0, 7, 64, 255, 256, 257, 4096, len(image) // 2, len(image) - 1))]
    for _ in range(25):
        b = bytearray(image)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(320)] ^= 1 << rng.randrange(8)
        cases.append(bytes(b))
    for _ in range(15):
        b = bytearray(image)
        for _ in range(rng.randint(1, 200)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(bytes(b))
    bad = tmp_path / "bad.etok"
    for i, case in enumerate(cases):
        bad.write_bytes(case)
        for cmd in (("encode", str(bad), str(sample)), ("verify", str(bad))):
            a, b = run(etok, *cmd), run(native, *cmd)
            assert a.returncode in (0, 1), (name, i, cmd[0], a.returncode, a.stderr[-300:])
            assert (a.returncode, a.stdout) == (b.returncode, b.stdout), (name, i, cmd[0])
    assert run(etok, "verify", model).stdout.startswith(b"ok:")


def header_fields(image: bytes, n_vocab: int) -> tuple[int, int, int]:
    """Offsets of n_vocab and n_cells in the header, and of the trie section (found by value:
    n_cells follows n_vocab, and the trie section's size, n_cells * 12, is in the table)."""
    head = image[:512]
    at = head.find(struct.pack("<I", n_vocab))
    if at < 0 or at % 4:
        pytest.skip("model header layout not understood")
    n_cells = struct.unpack_from("<I", head, at + 4)[0]
    size_at = head.find(struct.pack("<Q", n_cells * 12))
    if size_at < 8 or size_at % 8:
        pytest.skip("model header layout not understood")
    return at, at + 4, struct.unpack_from("<Q", head, size_at - 8)[0]


def test_header_counts_that_wrap_32bit_sizes(target, native, model, enc, tmp_path):  # type: ignore[no-untyped-def]
    """A header whose n_vocab or n_cells is 2^30 more than the file holds must be refused.
    The expected section sizes, n * 4 and n * 12, wrap around to the true ones in a 32-bit
    size_t; the model would then be accepted, and trie steps read far past the mapping."""
    name, etok = target
    image = Path(model).read_bytes()
    vocab_at, cells_at, trie_at = header_fields(image, enc.n_vocab)
    sample = tmp_path / "in.txt"
    sample.write_text("Hello world\n")

    def bumped(at: int, root_base: int | None = None) -> bytes:
        b = bytearray(image)
        struct.pack_into("<I", b, at, struct.unpack_from("<I", b, at)[0] + (1 << 30))
        if root_base is not None:  # the root's children then lie far outside the trie
            struct.pack_into("<I", b, trie_at, root_base)
        return bytes(b)

    failures = []
    for what, case in (("n_vocab + 2^30", bumped(vocab_at)), ("n_cells + 2^30", bumped(cells_at)),
                       ("n_cells + 2^30, root base 2^28", bumped(cells_at, 1 << 28))):
        bad = tmp_path / "bad.etok"
        bad.write_bytes(case)
        for cmd in (("encode", str(bad), str(sample)), ("verify", str(bad))):
            assert run(native, *cmd).returncode == 1, (what, cmd[0])
            p = run(etok, *cmd)
            if p.returncode != 1 or b"not an edgetok model" not in p.stderr:
                why = {-11: " SIGSEGV", 0: " accepted"}.get(p.returncode, "")
                why += " (only the checksum caught it)" if b"checksum" in p.stderr else ""
                failures.append(f"{what}: etok {cmd[0]} exit {p.returncode}{why}")
    assert not failures, failures


# ---- the wheels (cross/build.sh) in Debian's Python under qemu ---------------------------

ROOTS = [("aarch64", "bullseye", "sysroot"), ("aarch64", "bookworm", "rootfs"),
         ("armhf", "bullseye", "sysroot"), ("armhf", "bookworm", "rootfs")]


@pytest.mark.parametrize("name,suite,kind", ROOTS, ids=[f"{a}-{s}" for a, s, _ in ROOTS])
def test_wheel_under_qemu(name, suite, kind, ref, tmp_path):  # type: ignore[no-untyped-def]
    """pip (the target's) installs the wheel into a venv of the target's Python; `edgetok
    encode` on the shipped samples and the Python API give tiktoken's ids."""
    _, qemu, plat, arch = TARGETS[name]
    wheels = sorted(DIST.glob(f"edgetok-*-cp39-abi3-*_{plat}.whl"))
    root = WORK / kind / f"{suite}-{arch}"
    if not wheels:
        pytest.skip(f"no {plat} wheel in {DIST} (bash cross/build.sh)")
    if not (root / ".edgetok-ready").exists():
        pytest.skip(f"no {suite} {arch} root in {root} (bash cross/build.sh; bash cross/test.sh)")
    if shutil.which(qemu) is None:
        pytest.skip(f"{qemu} not installed ({APT})")
    wheel = wheels[-1]

    def py(*args: str, exe: Path = root / "usr" / "bin" / "python3") -> str:
        p = subprocess.run([qemu, "-L", str(root), str(exe), *args], capture_output=True, cwd=tmp_path,
                           timeout=120, env={k: v for k, v in os.environ.items()
                                             if not k.startswith(("PYTHON", "VIRTUAL_ENV"))})
        assert p.returncode == 0, (name, suite, args[:3], p.stderr.decode()[-3000:])
        return p.stdout.decode()

    venv = tmp_path / "venv"
    py("-m", "venv", "--without-pip", "--system-site-packages", str(venv))
    # Debian 11's python3-cffi is 1.14.5, older than the declared cffi>=1.15 (it works): the
    # dependencies are checked against the system's packages on Debian 12 only.
    py("-m", "pip", "install", "-q", "--no-index", *(["--no-deps"] if suite == "bullseye" else []),
       str(wheel), exe=venv / "bin" / "python")
    with zipfile.ZipFile(wheel) as z:
        samples = {n.rsplit("sample-", 1)[1][:-7]: z.read(n) for n in z.namelist() if "/sample-" in n}
    assert set(samples) == {"english", "code", "multilingual"}
    for kind_, blob in samples.items():
        f = tmp_path / f"{kind_}.txt"
        f.write_bytes(gzip.decompress(blob))
        out = py(str(venv / "bin" / "edgetok"), "encode", str(f), exe=venv / "bin" / "python")
        assert ids(out.encode()) == ref.encode(f.read_text("utf-8")), (name, suite, kind_)
    probe = ("import edgetok, json, platform, struct, sys\n"
             "e = edgetok.get_encoding('cl100k_base')\n"
             "texts = json.loads(sys.argv[1])\n"
             "print(json.dumps({'machine': platform.machine(), 'bits': 8 * struct.calcsize('P'),\n"
             "  'python': platform.python_version(), 'native': edgetok._native.__file__,\n"
             "  'ids': [e.encode(t) for t in texts], 'counts': [e.count(t) for t in texts],\n"
             "  'back': [e.decode(e.encode(t)) for t in texts],\n"
             "  'pieces': [e.pretokenize(t) for t in texts],\n"
             "  'appended': [e.counter().append(t) for t in texts],\n"
             "  'eot': e.encode('<|endoftext|>', allowed_special='all')}))\n")
    texts = ["Hello world", "It's 2026! \u00e9\u00e9 \U0001f600 \u65e5\u672c\u8a9e\n\n  x",
             "x" * 5000, "def f(a, b):\n    return a + b  # \u0441\u0443\u043c\u043c\u0430\n"]
    info = json.loads(py(str(venv / "bin" / "edgetok"), "info", "--verify", "--json",
                         exe=venv / "bin" / "python"))
    assert info["checksum"] == "ok" and info["n_vocab"] == ref.n_vocab, info
    got = json.loads(py("-c", probe, json.dumps(texts), exe=venv / "bin" / "python"))
    assert got["machine"] == plat and got["bits"] == (64 if plat == "aarch64" else 32), got
    assert str(venv) in got["native"], got["native"]
    assert got["ids"] == [ref.encode(t) for t in texts]
    assert got["counts"] == [len(ref.encode(t)) for t in texts]
    assert got["back"] == texts and got["eot"] == [100257]
    import regex

    assert got["pieces"] == [regex.findall(ref._pat_str, t) for t in texts]
    assert got["appended"] == got["counts"]
