"""The .etok model file: loading paths, validation of damaged files, the generated tables."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

import edgetok
from edgetok._ffi import Model, ModelError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def image(enc) -> bytes:  # type: ignore[no-untyped-def]
    return Path(enc.model.source).read_bytes()


def test_loading_paths_agree(enc, ref, image, tmp_path, corpora):  # type: ignore[no-untyped-def]
    text = corpora["code"][:100000]
    want = ref.encode_ordinary(text)
    f = tmp_path / "m.etok"
    f.write_bytes(image)
    for m in (Model.open(str(f)), Model.open(str(f), hugepages=True, verify=True),
              Model.from_bytes(image)):
        assert m.backing in ("mmap", "hugetlb", "thp", "heap", "buffer")
        assert m.verify()
        assert m.encode(text.encode())[0] == want
    assert edgetok.load(f).encode_ordinary(text) == want


def test_truncated_and_damaged_images_fail_cleanly(image):  # type: ignore[no-untyped-def]
    for n in (0, 1, 8, 100, 255, 256, 1000, len(image) - 8, len(image) - 1):
        with pytest.raises(ModelError):
            Model.from_bytes(image[:n])
    rng = random.Random(3)
    for _ in range(200):
        b = bytearray(image)
        b[rng.randrange(256)] ^= 1 << rng.randrange(8)
        try:
            m = Model.from_bytes(bytes(b))
        except ModelError:
            continue
        assert not m.verify()  # loaded after validation: only the checksum can tell
        m.encode(b"still safe to use: 'll 123 \xff")


def test_not_a_model(tmp_path):  # type: ignore[no-untyped-def]
    f = tmp_path / "junk.etok"
    f.write_bytes(b"EDGETOK\0" + b"\0" * 500)
    with pytest.raises(ModelError):
        edgetok.load(f)
    f.write_text("this is not base64 0\n")
    with pytest.raises(ModelError):
        edgetok.load(f)
    with pytest.raises(FileNotFoundError):
        edgetok.load(tmp_path / "missing.etok")
    with pytest.raises(ValueError, match="Unknown encoding"):
        edgetok.get_encoding("nope")


def test_tiktoken_file_loads_like_the_builtin(enc, ref, tmp_path):  # type: ignore[no-untyped-def]
    import base64

    f = tmp_path / "cl100k_base.tiktoken"
    f.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r
                           for t, r in sorted(ref._mergeable_ranks.items(), key=lambda kv: kv[1])))
    mine = edgetok.load(f)
    text = "Compiled in memory from the user's own file \u00e9\u00e9 12345"
    assert mine.encode_ordinary(text) == ref.encode_ordinary(text)


def test_unicode_tables_are_generated(image):  # type: ignore[no-untyped-def]
    import regex

    gen = ROOT / "csrc/unicode/gen_tables.py"
    if regex.__version__ != "2026.5.9":
        pytest.skip(f"tables are derived with regex 2026.5.9, not {regex.__version__}")
    p = subprocess.run([sys.executable, str(gen), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_vocabulary_without_backtracking_uses_the_heap(ref, tmp_path):  # type: ignore[no-untyped-def]
    import tiktoken

    # the first 1000 ranks of cl100k_base plus a token that BPE cannot make from its own
    # bytes: the compiler must notice and keep long pieces off the backtracking encoder
    ranks = dict(sorted(ref._mergeable_ranks.items(), key=lambda kv: kv[1])[:1000])
    ranks[b"qqzzqqzz"] = 1000
    small = tiktoken.Encoding("small", pat_str=ref._pat_str, mergeable_ranks=ranks, special_tokens={})
    assert 1000 not in small.encode_ordinary("qqzzqqzz" * 3)  # merges never make it
    import base64

    f = tmp_path / "v.tiktoken"
    f.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items()))
    mine = edgetok.load(f)
    assert not mine.model.backtracks
    for text in ("qqzzqqzz" * 50, "abracadabra" * 30, "the quick brown fox " * 20, "=" * 500):
        assert mine.encode_ordinary(text) == small.encode_ordinary(text)
    assert edgetok.get_encoding("cl100k_base").model.backtracks


def test_regex_is_a_dependency_imported_only_when_needed():  # type: ignore[no-untyped-def]
    # --pattern, regex-fallback models (Qwen3.5, Falcon, DeepSeek) and any .etok compiled from
    # one need `regex` at run time: installed with edgetok, but not imported by `import edgetok`
    tomllib = pytest.importorskip("tomllib")
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.split(">")[0].split("=")[0].strip() == "regex" for d in deps), deps
    code = ("import sys, edgetok; edgetok.get_encoding('cl100k_base').encode('x'); "
            "print('regex' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
