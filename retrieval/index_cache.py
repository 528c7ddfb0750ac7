"""The on-disk index cache: data only, checked on load. No pickle, so a planted file cannot run code.

One folder per cache key holds the L1 arrays and the chunks' text columns as `.npy` files (read with
`allow_pickle=False`), the knowledge base's entries as JSON, and `manifest.json` naming every file with
its dtype, shape and SHA-256. A folder is written under a temporary name and renamed into place, so a
reader never sees half of one. Any mismatch on load (missing file, wrong checksum, shape or type) is a
warning and a rebuild, never a wrong index. Every array is memory-mapped read-only, so the checksum
pass is the only read, and processes that open the same index share its pages. The folder is bounded:
4 GiB in all by default (`$LOOKUP_KNOWLEDGE_CACHE_MAX_MB` to change it) and `KEEP_CACHED` indexes; the
oldest go first.
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

from .chunk_store import ChunkRows, ChunkStore, TextColumn
from .corpus import Entry, KnowledgeBase, LoadProblem
from .index_config import IndexConfig
from .l1 import L1Arrays

FORMAT = 3
KEEP_CACHED = 16
DEFAULT_MAX_MB = 4096
MANIFEST = "manifest.json"
ENTRIES = "entries.json"


class CacheWarning(UserWarning):
    """The index cache could not be used or written; the lookup goes on with a fresh index."""


@dataclasses.dataclass(frozen=True)
class CachedIndex:
    """What a cache folder holds: the knowledge base, the L1 arrays (None when L1 was unavailable) with
    the chunk rows L1 indexes (positions in the base's chunk order), and the build facts."""

    kb: KnowledgeBase
    arrays: L1Arrays | None
    l1_rows: np.ndarray | None
    l1_unavailable_reason: str | None
    index_config: IndexConfig
    build_seconds: float
    store: ChunkStore | None = None  # set on read: the chunks' columns behind the base's entries


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
        if cached.arrays is not None and cached.l1_rows is not None:
            for field in dataclasses.fields(L1Arrays):
                files[field.name] = _write_array(temporary / f"{field.name}.npy", getattr(cached.arrays, field.name))
            files["l1_rows"] = _write_array(temporary / "l1_rows.npy", cached.l1_rows)
        store = ChunkStore.of(cached.kb.entries)
        for name, value in _store_arrays(store).items():
            files[name] = _write_array(temporary / f"{name}.npy", value)
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
    files = manifest["files"]
    heads = _read_json(folder, manifest["entries"])
    columns = {name: _read_array(folder, files[name], True) for name in STORE_ARRAYS}
    shells = [_entry(h, ()) for h in heads]
    store = ChunkStore(tuple((e.source, e.title, e.domains) for e in shells), columns["chunk_entry"],
                       columns["chunk_position"],
                       TextColumn(columns["breadcrumb_blob"], columns["breadcrumb_offsets"]),
                       TextColumn(columns["text_blob"], columns["text_offsets"]))
    _check_store(store, heads)
    starts = np.r_[0, np.cumsum([int(h["chunk_count"]) for h in heads])]
    entries = [dataclasses.replace(e, chunks=ChunkRows(store, np.arange(starts[i], starts[i + 1])))
               for i, e in enumerate(shells)]
    kb = _kb(manifest["kb"], entries)
    arrays, l1_rows = None, None
    if "l1_rows" in files:
        arrays = L1Arrays(**{f.name: _read_array(folder, files[f.name], True)
                             for f in dataclasses.fields(L1Arrays)})
        l1_rows = _read_array(folder, files["l1_rows"], True)
        if l1_rows.size and (l1_rows.min() < 0 or l1_rows.max() >= len(store)):
            raise ValueError("l1_rows names chunks the base does not hold")
    return CachedIndex(kb, arrays, l1_rows, manifest["l1_unavailable_reason"],
                       IndexConfig(**manifest["index_config"]), float(manifest["build_seconds"]), store)


def _store_arrays(store: ChunkStore) -> dict[str, np.ndarray]:
    return {"chunk_entry": store.entry_of, "chunk_position": store.position,
            "breadcrumb_blob": store.breadcrumbs.blob, "breadcrumb_offsets": store.breadcrumbs.offsets,
            "text_blob": store.texts.blob, "text_offsets": store.texts.offsets}


STORE_ARRAYS = ("chunk_entry", "chunk_position", "breadcrumb_blob", "breadcrumb_offsets", "text_blob",
                "text_offsets")


def _check_store(store: ChunkStore, heads: list[Any]) -> None:
    """The chunk columns agree with each other and with the entries (counts, offsets in range)."""
    n = len(store.entry_of)
    if sum(int(h["chunk_count"]) for h in heads) != n or len(store.position) != n:
        raise ValueError("chunk columns and entries disagree on the number of chunks")
    for column in (store.breadcrumbs, store.texts):
        offsets = column.offsets
        if len(offsets) != n + 1 or offsets[0] != 0 or offsets[-1] != column.blob.size or np.any(np.diff(offsets) < 0):
            raise ValueError("a text column's offsets do not fit its bytes")
    if n and (store.entry_of.min() < 0 or store.entry_of.max() >= len(heads)):
        raise ValueError("a chunk names an entry the base does not hold")


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
    # a plain read-only ndarray over the mapping: np.memmap wraps every scalar read in a new memmap object
    return array.view(np.ndarray) if isinstance(array, np.memmap) else array


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
    for chunk in entry.chunks:  # what the chunk store leaves to the entry must be the entry's
        if (chunk.source, chunk.title, chunk.domains) != (entry.source, entry.title, entry.domains):
            raise OSError(f"chunk {chunk.chunk_id} differs from its entry in source, title or domains")
    return {"source": entry.source, "title": entry.title, "categories": list(entry.categories),
            "keywords": list(entry.keywords), "entities": list(entry.entities), "description": entry.description,
            "chunk_count": len(entry.chunks)}


def _entry(data: dict[str, Any], chunks: Any) -> Entry:
    return Entry(str(data["source"]), str(data["title"]), tuple(map(str, data["categories"])),
                 tuple(map(str, data["keywords"])), tuple(map(str, data["entities"])), str(data["description"]),
                 chunks)


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
