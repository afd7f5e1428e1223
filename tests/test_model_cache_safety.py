"""The cache of compiled models (~/.cache/edgetok/models): a damaged entry is verified away and
compiled again, never used; failed writes leave no *.tmp behind for long."""
from __future__ import annotations

import base64
import os
import struct
import time

import pytest

import edgetok
import edgetok.registry as registry
from edgetok._ffi import Model

TEXT = ("A cached model must give tiktoken's ids, whatever happened to the file: don't trust it "
        "blindly. 12345 \u00e9\u00e8 \u4e2d\u6587 \U0001f600 if (x) { return y; }\n") * 4


@pytest.fixture()
def cache(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("EDGETOK_NO_CACHE", "0")
    monkeypatch.setenv("EDGETOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(registry, "_verified", set(), raising=False)  # a fresh process
    return tmp_path / "cache" / "models"


@pytest.fixture(scope="module")
def tiktoken_source(ref, tmp_path_factory):  # type: ignore[no-untyped-def]
    f = tmp_path_factory.mktemp("src") / "cl100k.tiktoken"
    f.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r
                           for t, r in sorted(ref._mergeable_ranks.items(), key=lambda kv: kv[1])))
    return f


def _damage_that_changes_ids(image: bytes, want: list[int]) -> bytes:
    """image with one byte of its trie cells flipped such that the model still loads (the
    checksum unchecked) but encodes TEXT to other ids than want."""
    cells_off, cells_size = struct.unpack_from("<QQ", image, 64)  # et_header.sec[ET_SEC_CELLS]
    for k in range(0, cells_size, 4099):
        b = bytearray(image)
        b[cells_off + k] ^= 0x01
        try:
            got = Model.from_bytes(bytes(b)).encode(TEXT.encode())[0]
        except (ValueError, KeyError):
            continue
        if got != want:
            return bytes(b)
    raise AssertionError("no damage found that changes the ids")


def test_damaged_entry_is_recompiled(ref, cache, tiktoken_source):  # type: ignore[no-untyped-def]
    want = ref.encode_ordinary(TEXT)
    assert edgetok.load(tiktoken_source).encode_ordinary(TEXT) == want
    (entry,) = cache.glob("*.etok")
    bad = _damage_that_changes_ids(entry.read_bytes(), want)
    entry.write_bytes(bad)  # in place, as a disk error would: same inode, size, name
    registry._verified.clear()  # a new process
    enc = edgetok.load(tiktoken_source)
    assert enc.encode_ordinary(TEXT) == want
    assert enc.model.backing == "buffer"  # compiled again, not mapped from the damaged entry
    assert entry.read_bytes() != bad and Model.open(str(entry), verify=True).verify()
    assert edgetok.load(tiktoken_source).model.backing == "mmap"  # the replacement is used
    assert not list(cache.glob("*.tmp"))


def test_each_entry_is_verified_once_per_process(cache, tiktoken_source, monkeypatch):  # type: ignore[no-untyped-def]
    edgetok.load(tiktoken_source)
    registry._verified.clear()
    opened = []
    real = Model.open.__func__  # type: ignore[attr-defined]

    def spy(cls, path, **kw):  # type: ignore[no-untyped-def]
        opened.append(kw.get("verify", False))
        return real(cls, path, **kw)

    monkeypatch.setattr(Model, "open", classmethod(spy))
    for _ in range(3):
        assert edgetok.load(tiktoken_source).model.backing == "mmap"
    assert opened == [True, False, False]


def test_stale_tmp_files_are_pruned(cache, tiktoken_source, tmp_path):  # type: ignore[no-untyped-def]
    cache.mkdir(parents=True)
    stale, live = cache / "0123abcd.4242.tmp", cache / "4567cdef.4343.tmp"
    for f in (stale, live):
        f.write_bytes(b"half a model")
    old = time.time() - 3600  # an hour old: nobody is still writing it
    os.utime(stale, (old, old))
    edgetok.load(tiktoken_source)  # compiles, writes its entry, prunes
    assert not stale.exists()
    assert live.exists()  # may be another process's write in progress


def test_failed_write_leaves_no_tmp(cache, tiktoken_source, monkeypatch, ref):  # type: ignore[no-untyped-def]
    from pathlib import Path

    def fail(self, target):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", fail)
    assert edgetok.load(tiktoken_source).encode_ordinary(TEXT) == ref.encode_ordinary(TEXT)
    assert not list(cache.glob("*"))
