"""The on-disk index cache: data only, checked on load. No pickle, so a planted file cannot run code.

One folder per cache key holds the L1 arrays as `.npy` files (read with `allow_pickle=False`; the LSA
matrix memory-mapped), the knowledge base's entries as JSON, and `manifest.json` naming every file with
its dtype, shape and SHA-256. A folder is written under a temporary name and renamed into place, so a
reader never sees half of one. Any mismatch on load (missing file, wrong checksum, shape or type) is a
warning and a rebuild, never a wrong index. The folder is bounded: `MAX_CACHE_BYTES` in all (default
4 GiB, `$LOOKUP_KNOWLEDGE_CACHE_MAX_MB` to change it) and `KEEP_CACHED` indexes; the oldest go first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .corpus import Chunk, Entry, KnowledgeBase, LoadProblem
from .index_config import IndexConfig
from .l1 import L1Arrays

FORMAT = 2
KEEP_CACHED = 16
DEFAULT_MAX_MB = 4096
MANIFEST = "manifest.json"
ENTRIES = "entries.json"
MEMORY_MAPPED = frozenset({"lsa"})


class CacheWarning(UserWarning):
    """The index cache could not be used or written; the lookup goes on with a fresh index."""


@dataclasses.dataclass(frozen=True)
class CachedIndex:
    """What a cache folder holds: the knowledge base, the L1 arrays (None when L1 was unavailable) and
    the build facts."""

    kb: KnowledgeBase
    arrays: L1Arrays | None
    l1_unavailable_reason: str | None
    index_config: IndexConfig
    build_seconds: float


def max_cache_bytes() -> int:
    """The cache folder's size bound in bytes (`$LOOKUP_KNOWLEDGE_CACHE_MAX_MB`, default 4096 MB)."""
    raw = os.environ.get("LOOKUP_KNOWLEDGE_CACHE_MAX_MB", "")
    try:
        return int(float(raw) * 2**20) if raw.strip() else DEFAULT_MAX_MB * 2**20
    except ValueError:
        warnings.warn(f"LOOKUP_KNOWLEDGE_CACHE_MAX_MB={raw!r} is not a number; using {DEFAULT_MAX_MB}",
                      CacheWarning, stacklevel=2)
        return DEFAULT_MAX_MB * 2**20


def read_cache(folder: Path) -> CachedIndex | None:
    """The cached index in `folder`, or None (with a warning when a folder exists but does not check out)."""
    if not folder.exists():
        return None
    try:
        return _read(folder)
    except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
        warnings.warn(f"index cache {folder} is unusable ({type(exc).__name__}: {exc}); rebuilding the index",
                      CacheWarning, stacklevel=2)
        shutil.rmtree(folder, ignore_errors=True)
        return None


def write_cache(folder: Path, cached: CachedIndex) -> None:
    """Write `cached` to `folder` atomically; a failure (read-only or full disk) is a warning, not an error."""
    temporary = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".building-"))
        files: dict[str, Any] = {}
        if cached.arrays is not None:
            for field in dataclasses.fields(L1Arrays):
                value = getattr(cached.arrays, field.name)
                if field.name == "unigrams":
                    files[field.name] = _write_json(temporary / "unigrams.json", list(value))
                else:
                    files[field.name] = _write_array(temporary / f"{field.name}.npy", np.asarray(value))
        entries = _write_json(temporary / ENTRIES, [_entry_dict(e) for e in cached.kb.entries])
        manifest = {"format": FORMAT, "files": files, "entries": entries,
                    "kb": _kb_dict(cached.kb), "l1_unavailable_reason": cached.l1_unavailable_reason,
                    "index_config": cached.index_config.to_dict(), "build_seconds": cached.build_seconds}
        (temporary / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(temporary, folder)
        temporary = None
        prune(folder.parent, keep=KEEP_CACHED, max_bytes=max_cache_bytes())
    except OSError as exc:
        warnings.warn(f"could not write the index cache in {folder.parent} ({type(exc).__name__}: {exc}); "
                      "the index works but will be rebuilt next time", CacheWarning, stacklevel=2)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def prune(root: Path, *, keep: int, max_bytes: int) -> None:
    """Remove the oldest cache folders beyond `keep` of them or beyond `max_bytes` in all (the newest
    folder always stays), plus leftovers of interrupted writes and of the old pickle format."""
    for stale in [*root.glob(".building-*"), *root.glob("*.pkl"), *root.glob("*.tmp")]:
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
    folders = sorted((p for p in root.iterdir() if (p / MANIFEST).is_file()),
                     key=lambda p: (p / MANIFEST).stat().st_mtime, reverse=True)
    total = 0
    for position, folder in enumerate(folders):
        total += sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        if position > 0 and (position >= keep or total > max_bytes):
            shutil.rmtree(folder, ignore_errors=True)


def _read(folder: Path) -> CachedIndex:
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"manifest format is not {FORMAT}")
    entries = [_entry(e) for e in _read_json(folder, manifest["entries"])]
    kb = _kb(manifest["kb"], entries)
    arrays = None
    files = manifest["files"]
    if files:
        values = {}
        for field in dataclasses.fields(L1Arrays):
            if field.name == "unigrams":
                values[field.name] = tuple(_read_json(folder, files[field.name]))
            else:
                values[field.name] = _read_array(folder, files[field.name], field.name in MEMORY_MAPPED)
        arrays = L1Arrays(**values)
    return CachedIndex(kb, arrays, manifest["l1_unavailable_reason"], IndexConfig(**manifest["index_config"]),
                       float(manifest["build_seconds"]))


def _write_array(path: Path, array: np.ndarray) -> dict[str, Any]:
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)
    return {"file": path.name, "dtype": array.dtype.str, "shape": list(array.shape), "sha256": _sha256(path)}


def _read_array(folder: Path, spec: dict[str, Any], memory_mapped: bool) -> np.ndarray:
    path = _member(folder, spec["file"])
    if _sha256(path) != spec["sha256"]:
        raise ValueError(f"{path.name} does not match its checksum")
    array = np.load(path, mmap_mode="r" if memory_mapped else None, allow_pickle=False)
    if array.dtype.str != spec["dtype"] or list(array.shape) != spec["shape"]:
        raise ValueError(f"{path.name} holds {array.dtype.str}{list(array.shape)}, the manifest says "
                         f"{spec['dtype']}{spec['shape']}")
    return array


def _write_json(path: Path, value: Any) -> dict[str, Any]:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return {"file": path.name, "sha256": _sha256(path)}


def _read_json(folder: Path, spec: dict[str, Any]) -> Any:
    path = _member(folder, spec["file"])
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != spec["sha256"]:
        raise ValueError(f"{path.name} does not match its checksum")
    return json.loads(data.decode("utf-8"))


def _member(folder: Path, name: Any) -> Path:
    """A file named by the manifest, which must be a plain name inside the folder."""
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise ValueError(f"manifest names a file outside its folder: {name!r}")
    return folder / name


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def _entry_dict(entry: Entry) -> dict[str, Any]:
    return {"source": entry.source, "title": entry.title, "categories": list(entry.categories),
            "keywords": list(entry.keywords), "entities": list(entry.entities), "description": entry.description,
            "chunks": [[c.position, c.title, c.breadcrumb, c.text, list(c.domains)] for c in entry.chunks]}


def _entry(data: dict[str, Any]) -> Entry:
    source = str(data["source"])
    chunks = tuple(Chunk(source, int(position), str(title), str(crumb), str(text), tuple(map(str, domains)))
                   for position, title, crumb, text, domains in data["chunks"])
    return Entry(source, str(data["title"]), tuple(map(str, data["categories"])), tuple(map(str, data["keywords"])),
                 tuple(map(str, data["entities"])), str(data["description"]), chunks)


def _kb_dict(kb: KnowledgeBase) -> dict[str, Any]:
    values = {}
    for field in dataclasses.fields(KnowledgeBase):
        if field.name in ("entries",) or field.name.startswith("_"):
            continue
        value = getattr(kb, field.name)
        if field.name == "problems":
            value = [dataclasses.asdict(p) for p in value]
        elif isinstance(value, tuple):
            value = list(value)
        values[field.name] = value
    return values


def _kb(data: dict[str, Any], entries: list[Entry]) -> KnowledgeBase:
    known = {f.name: f for f in dataclasses.fields(KnowledgeBase)}
    values: dict[str, Any] = {}
    for name, value in data.items():
        if name not in known:
            raise ValueError(f"unknown knowledge-base field {name!r}")
        if name == "problems":
            value = tuple(LoadProblem(**p) for p in value)
        elif isinstance(value, list):
            value = tuple(value)
        values[name] = value
    return KnowledgeBase(entries=tuple(entries), **values)
