"""Hugging Face conventions for where a tokenizer is: a folder holding tokenizer.json (what
save_pretrained writes), or a hub id such as "Qwen/Qwen2.5-7B-Instruct" found in the local
Hugging Face cache (models--Org--Name/snapshots/<revision>/, the revision from refs/main).
Never a network call: a model that is not on disk is a ModelError saying where it looked."""
from __future__ import annotations

import os
import re
from pathlib import Path

from ._ffi import ModelError

# what a hub id looks like: owner/name, optionally @revision (a branch, a tag or a commit)
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?$")
# the files in a folder that hold a tokenizer edgetok reads, in order of preference
FOLDER_FILES = ("tokenizer.json",)


def hub_cache() -> Path:
    """The Hugging Face hub cache, as huggingface_hub finds it: HF_HUB_CACHE, else
    HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "huggingface" / "hub"


def is_hub_id(spec: str) -> bool:
    return bool(_HUB_ID.match(spec)) and ".." not in spec


def in_folder(folder: Path) -> Path:
    """The tokenizer file of a save_pretrained folder (tokenizer.json)."""
    for name in FOLDER_FILES:
        if (folder / name).is_file():
            return folder / name
    raise ModelError(f"{folder}: a folder without a tokenizer.json (edgetok reads a "
                     "save_pretrained folder's tokenizer.json)")


def snapshot(repo_id: str) -> Path:
    """The folder of repo_id ("Org/Name" or "Org/Name@revision") in the local Hugging Face
    cache: snapshots/<commit>, the commit read from refs/<revision> (main by default), or the
    revision itself when it is a commit there."""
    repo, _, revision = repo_id.partition("@")
    revision = revision or "main"
    root = hub_cache()
    folder = root / ("models--" + repo.replace("/", "--"))
    ref = folder / "refs" / revision
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8").strip()
    else:
        commit = revision
    snap = folder / "snapshots" / commit
    if not commit or "/" in commit or not snap.is_dir():
        looked = ref if not ref.is_file() else snap
        raise ModelError(
            f"{repo_id}: not a file, and not in the local Hugging Face cache (looked for {looked}; "
            f"the cache is HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub). "
            "edgetok never downloads: fetch it first, e.g. `huggingface-cli download "
            f"{repo} tokenizer.json`")
    return snap


def resolve(spec: str | os.PathLike[str]) -> tuple[Path, str | None]:
    """(the tokenizer file spec names, the name to give the encoding or None): a file as it
    is, a folder's tokenizer.json, a hub id's tokenizer.json in the local cache."""
    p = Path(spec)
    if p.is_dir():
        return in_folder(p), p.resolve().name
    if p.exists() or not is_hub_id(str(spec)):
        return p, None
    snap = snapshot(str(spec))
    try:
        return in_folder(snap), str(spec).partition("@")[0]
    except ModelError:
        raise ModelError(f"{spec}: its snapshot {snap} in the local Hugging Face cache holds no "
                         "tokenizer.json") from None
