"""The on-disk index cache: data only, checked on load. No pickle, so a planted file cannot run code.

One folder per cache key holds, as `.npy` files (read with `allow_pickle=False`): the L1 arrays, the L0
arrays (its postings, idf and vocabulary: a load tokenises no entry), the chunks' text columns and the
entries' columns (entry_columns.EntryColumns: a load builds no `Entry`; one is built when read), plus
`manifest.json` naming every file with its dtype, shape, size in bytes and XXH3-128 hash. A folder is
written under a temporary name and renamed into place, so a reader never sees half of one.

On load every file is checked, whole, before any of it is used: its size (a truncated file fails here,
before it is read), then the XXH3-128 hash of all its bytes (a flipped or overwritten byte anywhere fails
here) unless the folder's stamp vouches that the file was not written since its hash was known good
(retrieval/index/integrity.py: any write changes a file's ctime), then its dtype and shape against the
manifest; then the arrays are checked against each other
(offsets within their bytes, positions in range, chunks in their entries' order, sorted hash arrays).
Any mismatch is a warning and a rebuild, never a wrong index. The hash guards against damage, not
against an attacker (who could rewrite the manifest too: the cache folder is the user's own), so it is
a fast non-cryptographic one: XXH3 hashes at memory speed, several times faster than SHA-256 on a large
index. Every array is memory-mapped read-only, so the hash pass is the only read, and processes
that open the same index share its pages. The folder is bounded: 4 GiB in all by default
(`$LOOKUP_KNOWLEDGE_CACHE_MAX_MB` to change it) and `KEEP_CACHED` indexes; the oldest go first.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.index import integrity
from retrieval.index.array_files import write_array
from retrieval.index.chunk_store import ChunkStore, TextColumn
from retrieval.index.entry_columns import EntryColumns
from retrieval.index.integrity import MANIFEST, check_bytes
from retrieval.index.lineage import Lineage, source_arrays, source_table
from retrieval.index.stacked_entries import StackedEntries
from retrieval.kb.files import LoadProblem
from retrieval.kb.model import Entry, KnowledgeBase
from retrieval.kb.sources import SourceTable
from retrieval.l0.arrays import L0Arrays
from retrieval.l0.index import L0Index
from retrieval.l1.arrays import L1Arrays
from retrieval.l1.config import IndexConfig
from retrieval.l1.segments import Delta, Tombstones
from retrieval.storage.spill import IN_MEMORY, Spill

FORMAT = 8  # one number for every cache folder; 8: a base and a delta beside it (issue 50)
KEEP_CACHED = 16
DEFAULT_MAX_MB = 4096
SPILL_PREFIX = ".spill-"  # a build's spilled arrays (retrieval/storage/spill.py), until the cache takes them
L0_PREFIX = "l0_"


class CacheWarning(UserWarning):
    """The index cache could not be used or written; the lookup goes on with a fresh index."""


@dataclasses.dataclass(frozen=True)
class CachedIndex:
    """What a cache folder holds: the knowledge base, the L1 arrays (None when L1 was unavailable) with
    the chunk rows L1 indexes (positions in the base's chunk order), the build facts and the L0 arrays
    (None on write: computed from the entries)."""

    kb: KnowledgeBase
    arrays: L1Arrays | None
    l1_rows: np.ndarray | None
    l1_unavailable_reason: str | None
    index_config: IndexConfig
    build_seconds: float
    store: ChunkStore | None = None  # set on read: the chunks' columns behind the base's entries
    l0: L0Arrays | None = None
    lineage: Lineage | None = None  # what it was built from and its drift (retrieval/index/lineage.py)
    delta: IndexDelta | None = None  # what updates changed since the base (None: a full build's folder)
    folder: Path | None = None  # set on read: the folder it was read from


@dataclasses.dataclass(frozen=True, eq=False)
class IndexDelta:
    """What updates changed since a full build (the base, in the cache folder named `base`): the entries added or
    edited since, with their chunks; every entry's place (`picks`: base entry e, or len(base) + k for delta entry
    k); L1's delta segment and tombstones (retrieval/l1/segments.py) and the delta's store rows L1 indexes."""

    base: str
    entries: EntryColumns
    picks: np.ndarray
    l1: Delta | None
    l1_rows: np.ndarray


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
    """Write `cached` to `folder` atomically, a full build's arrays or (`cached.delta`) only the delta's beside
    its base's folder; a failure (read-only or full disk) is a warning, not an error."""
    def arrays(temporary: Path) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        l0 = cached.l0 if cached.l0 is not None else L0Index(cached.kb.entries).arrays
        found.update({L0_PREFIX + f.name: getattr(l0, f.name) for f in dataclasses.fields(L0Arrays)})
        delta = cached.delta
        if delta is not None:
            if cached.kb.source_table is not None:
                found.update(source_arrays(cached.kb.source_table))
            found.update({**_store_arrays(delta.entries.store), **delta.entries.arrays(), "picks": delta.picks,
                          "delta_l1_rows": delta.l1_rows})
            if delta.l1 is not None:
                found.update(_delta_arrays(delta.l1))
            return found
        if cached.arrays is not None and cached.l1_rows is not None:
            found.update({f.name: getattr(cached.arrays, f.name) for f in dataclasses.fields(L1Arrays)})
            found["l1_rows"] = cached.l1_rows
        spill = Spill(temporary / ".spill")  # a large base's text columns are written as they are encoded
        found.update(_kb_arrays(cached.kb, spill))
        return found

    extra = {"base": cached.delta.base} if cached.delta is not None else {}
    if cached.delta is not None and cached.delta.l1 is not None:
        extra["dead_rows"] = cached.delta.l1.dead.rows
    _write_folder(folder, arrays, {**extra, "lineage": cached.lineage.to_dict() if cached.lineage else None,
                                   "kb": _kb_dict(cached.kb), "l1_unavailable_reason": cached.l1_unavailable_reason,
                                   "index_config": cached.index_config.to_dict(),
                                   "build_seconds": cached.build_seconds})


def _write_folder(folder: Path, arrays, manifest: dict[str, Any]) -> None:
    """Write the arrays `arrays(temporary folder)` gives and `manifest` as `folder`, under a temporary name
    renamed into place; a failure is a warning."""
    temporary = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".building-"))
        files = {name: write_array(temporary / f"{name}.npy", value) for name, value in arrays(temporary).items()}
        shutil.rmtree(temporary / ".spill", ignore_errors=True)
        (temporary / MANIFEST).write_text(json.dumps({"format": FORMAT, "files": files, **manifest}),
                                          encoding="utf-8")
        # the hashes were made from the bytes written, in a folder no one else knows yet: a stamp vouches for them
        at, states = integrity.states(temporary / spec["file"] for spec in files.values())
        integrity.record(temporary, states, at, integrity.fine_clock(temporary))
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(temporary, folder)
        temporary = None
        prune(folder.parent, keep=KEEP_CACHED, max_bytes=max_cache_bytes())
    except OSError as exc:
        warnings.warn(f"could not write the index cache in {folder.parent} ({type(exc).__name__}: {exc}); "
                      "the index works but will be rebuilt next time", CacheWarning, stacklevel=3)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


DELTA_PREFIX = "delta_"
DEAD_ARRAYS = ("pages", "section_columns", "section_counts", "page_columns", "page_counts")


def _delta_arrays(delta: Delta) -> dict[str, np.ndarray]:
    """The arrays of L1's delta segment and tombstones, as a delta folder stores them."""
    found = {f"dead_{name}": getattr(delta.dead, name) for name in DEAD_ARRAYS}
    if delta.arrays is not None:
        found.update({DELTA_PREFIX + f.name: getattr(delta.arrays, f.name) for f in dataclasses.fields(L1Arrays)})
    return found


def prune(root: Path, *, keep: int, max_bytes: int) -> None:
    """Remove the oldest cache folders beyond `keep` of them or beyond `max_bytes` in all (the newest
    folder always stays), plus leftovers of interrupted writes and of the old pickle format."""
    day_ago = time.time() - 86_400  # a spill folder is a running build's until it is a day old
    spills = [p for p in root.glob(f"{SPILL_PREFIX}*") if _modified(p, day_ago) < day_ago]
    for stale in [*root.glob(".building-*"), *root.glob("*.pkl"), *root.glob("*.tmp"), *spills]:
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
    folders = sorted((p for p in root.iterdir() if (p / MANIFEST).is_file()),
                     key=lambda p: (p / MANIFEST).stat().st_mtime, reverse=True)
    newest_base = _base_of(folders[0]) if folders else None  # the newest folder's base stays with it
    total = 0
    removed: set[str] = set()
    for position, folder in enumerate(folders):
        total += sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        if position > 0 and folder.name != newest_base and (position >= keep or total > max_bytes):
            shutil.rmtree(folder, ignore_errors=True)
            removed.add(folder.name)
    for folder in folders:  # a delta whose base is gone can never be read
        if folder.name not in removed and _base_of(folder) in removed:
            shutil.rmtree(folder, ignore_errors=True)


def _base_of(folder: Path) -> str | None:
    """The base folder's name a delta folder's manifest names (None: a full build's folder, or unreadable)."""
    try:
        base = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("base")
    except (OSError, ValueError, AttributeError):
        return None
    return base if isinstance(base, str) else None


def _modified(path: Path, default: float) -> float:
    """`path`'s modification time, or `default` when it went meanwhile (a build's spill folder is removed
    by that build, which may run beside this prune)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return default


def _read(folder: Path) -> CachedIndex:
    manifest, arrays = _read_folder(folder)
    base_name = manifest.get("base")
    if base_name is not None:
        return _read_delta(folder, manifest, arrays)
    entries = _entries(arrays)
    l0 = _l0(arrays, len(entries))
    table = source_table(arrays, len(entries)) if "source_entries" in arrays else None
    kb = _kb(manifest["kb"], entries, table)
    l1, l1_rows = None, None
    if "l1_rows" in arrays:
        l1 = L1Arrays(**{f.name: arrays[f.name] for f in dataclasses.fields(L1Arrays)})
        l1_rows = arrays["l1_rows"]
        if l1_rows.size and (l1_rows.min() < 0 or l1_rows.max() >= len(entries.store)):
            raise ValueError("l1_rows names chunks the base does not hold")
    lineage = Lineage.of_dict(manifest["lineage"]) if manifest.get("lineage") else None
    return CachedIndex(kb, l1, l1_rows, manifest["l1_unavailable_reason"], IndexConfig(**manifest["index_config"]),
                       float(manifest["build_seconds"]), entries.store, l0, lineage, folder=folder)


def _read_folder(folder: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A folder's manifest and its arrays, every file checked against the manifest first."""
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"manifest format is not {FORMAT}")
    files = manifest["files"]
    if not isinstance(files, dict):
        raise ValueError("manifest names no files")
    paths = {name: _member(folder, spec["file"]) for name, spec in files.items()}
    check_bytes([(paths[name], spec) for name, spec in files.items()], folder)
    return manifest, {name: _read_array(paths[name], spec) for name, spec in files.items()}


def _read_delta(folder: Path, manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> CachedIndex:
    """A delta folder read with its base's (which must be a full build's folder beside it)."""
    base_name = manifest["base"]
    if not isinstance(base_name, str) or Path(base_name).name != base_name or base_name in ("", ".", ".."):
        raise ValueError(f"the delta names a base outside the cache: {base_name!r}")
    base = _read(folder.parent / base_name)
    if base.delta is not None or base.arrays is None or base.l1_rows is None:
        raise ValueError("the delta's base is not a full build with L1")
    delta_entries = _entries(arrays)
    picks = arrays["picks"]
    n_base = len(base.kb.entries)
    if picks.ndim != 1 or (picks.size and (picks.min() < 0 or picks.max() >= n_base + len(delta_entries))):
        raise ValueError("the delta's entry order names entries it does not hold")
    entries = StackedEntries(base.kb.entries, delta_entries, picks)
    l0 = _l0(arrays, len(entries))
    table = source_table(arrays, len(entries)) if "source_entries" in arrays else None
    l1_rows = arrays["delta_l1_rows"]
    if l1_rows.size and (l1_rows.min() < 0 or l1_rows.max() >= len(delta_entries.store)):
        raise ValueError("delta_l1_rows names chunks the delta does not hold")
    l1 = None
    if "dead_pages" in arrays:
        dead = Tombstones(*(arrays[f"dead_{name}"] for name in DEAD_ARRAYS), int(manifest["dead_rows"]))
        delta_arrays = None
        if DELTA_PREFIX + "lsa" in arrays:
            delta_arrays = L1Arrays(**{f.name: arrays[DELTA_PREFIX + f.name] for f in dataclasses.fields(L1Arrays)})
            if delta_arrays.page_of_chunk.size != l1_rows.size:
                raise ValueError("the delta's L1 rows and arrays disagree")
        if dead.pages.size and dead.pages.max() >= base.arrays.page_row_starts.size - 1:
            raise ValueError("the delta tombstones pages the base does not hold")
        l1 = Delta(delta_arrays, dead)
    kb = _kb(manifest["kb"], entries, table)
    lineage = Lineage.of_dict(manifest["lineage"]) if manifest.get("lineage") else None
    return CachedIndex(kb, base.arrays, base.l1_rows, manifest["l1_unavailable_reason"],
                       IndexConfig(**manifest["index_config"]), float(manifest["build_seconds"]), base.store, l0,
                       lineage, IndexDelta(base_name, delta_entries, picks, l1, l1_rows), folder)


def _entries(arrays: dict[str, np.ndarray]) -> EntryColumns:
    return EntryColumns.of_arrays({n: arrays[n] for n in ENTRY_ARRAYS}, arrays["chunk_entry"], arrays["chunk_position"],
                                  TextColumn(arrays["breadcrumb_blob"], arrays["breadcrumb_offsets"]),
                                  TextColumn(arrays["text_blob"], arrays["text_offsets"]))


def _l0(arrays: dict[str, np.ndarray], n_entries: int) -> L0Arrays:
    l0 = L0Arrays(**{f.name: arrays[L0_PREFIX + f.name] for f in dataclasses.fields(L0Arrays)})
    l0.check()
    if l0.n_docs != n_entries:
        raise ValueError("the L0 arrays and the entries disagree on the number of entries")
    return l0


def _kb_arrays(kb: KnowledgeBase, spill: Spill = IN_MEMORY) -> dict[str, np.ndarray]:
    """The arrays of a base's entries, chunks and source table; columns already (an updated base) are taken
    as they are, entries read from files are checked and made into columns."""
    entries = kb.entries
    if isinstance(entries, EntryColumns):
        arrays = {**_store_arrays(entries.store), **entries.arrays()}
    else:
        _check_chunk_heads(entries)
        arrays = {**_store_arrays(ChunkStore.of(entries, spill)), **EntryColumns.columns_of(entries)}
    return {**arrays, **(source_arrays(kb.source_table) if kb.source_table is not None else {})}


def _store_arrays(store: ChunkStore) -> dict[str, np.ndarray]:
    return {"chunk_entry": store.entry_of, "chunk_position": store.position,
            "breadcrumb_blob": store.breadcrumbs.blob, "breadcrumb_offsets": store.breadcrumbs.offsets,
            "text_blob": store.texts.blob, "text_offsets": store.texts.offsets}


ENTRY_ARRAYS = tuple(f"entry_{name}_{part}" for name in ("source", "title", "description", "label")
                     for part in ("blob", "offsets")) + (
    "entry_label_starts", "entry_source_hashes", "entry_source_ids", "entry_chunk_starts")


def _read_array(path: Path, spec: dict[str, Any]) -> np.ndarray:
    array = np.load(path, mmap_mode="r", allow_pickle=False)
    if array.dtype.str != spec["dtype"] or list(array.shape) != spec["shape"]:
        raise ValueError(f"{path.name} holds {array.dtype.str}{list(array.shape)}, the manifest says "
                         f"{spec['dtype']}{spec['shape']}")
    # a plain read-only ndarray over the mapping: np.memmap wraps every scalar read in a new memmap object
    return array.view(np.ndarray) if isinstance(array, np.memmap) else array


def _member(folder: Path, name: Any) -> Path:
    """A file named by the manifest, which must be a plain name inside the folder."""
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise ValueError(f"manifest names a file outside its folder: {name!r}")
    return folder / name


def _check_chunk_heads(entries: Sequence[Entry]) -> None:
    """What the chunk store leaves to the entry (source, title, domains) must be the entry's."""
    for entry in entries:
        for chunk in entry.chunks:
            if (chunk.source, chunk.title, chunk.domains) != (entry.source, entry.title, entry.domains):
                raise OSError(f"chunk {chunk.chunk_id} differs from its entry in source, title or domains")


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


def _kb(data: dict[str, Any], entries: EntryColumns, table: SourceTable | None) -> KnowledgeBase:
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
    return KnowledgeBase(entries=entries, _sources=table, **values)
