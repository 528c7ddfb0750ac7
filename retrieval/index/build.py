"""Build the L0 and L1 indexes of a knowledge base, cached on disk by the corpus content."""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from retrieval import __version__
from retrieval.index import progress as bp
from retrieval.index.build_columns import StreamedRows, as_columns, indexable_rows, let_go
from retrieval.index.cache import FORMAT, SPILL_PREFIX, CachedIndex, read_cache, write_cache
from retrieval.index.chunk_store import ChunkRows, indexable
from retrieval.index.entry_columns import EntryColumns
from retrieval.index.incremental import UpdateFacts, newest_of_lineage, update_index
from retrieval.index.lineage import Lineage
from retrieval.index.stacked_entries import ChunkPicks
from retrieval.kb.load import exclude_prefixes, load_knowledge_base
from retrieval.kb.model import Chunk, KnowledgeBase
from retrieval.kb.sources import stat_line
from retrieval.l0.index import L0Index
from retrieval.l1.arrays import build_arrays, loaded
from retrieval.l1.config import IndexConfig
from retrieval.l1.embedder import Embedder, LazyEmbedder, default_embedder
from retrieval.l1.kept_fit import LsaFit
from retrieval.l1.search import L1Index
from retrieval.storage.spill import IN_MEMORY, Spill

Progress = bp.Progress  # progress(stage, fraction): see retrieval.index.progress
DEFAULT = "default"  # `embedder=DEFAULT`: the packaged static embedder (retrieval.l1.embedder.default_embedder)


@dataclass
class KnowledgeIndex:
    """A loaded knowledge base with its L0 index and, when it could be built, its L1 index."""

    kb: KnowledgeBase
    l0: L0Index
    l1: L1Index | None
    l1_unavailable_reason: str | None = None
    svd_dims: int = 256
    build_seconds: float = 0.0
    from_cache: bool = False
    index_config: IndexConfig = field(default_factory=IndexConfig)
    update: UpdateFacts | None = None  # set when the index is a cached one updated for changed files
    kept_fit: Lineage | None = None  # set by a full build that kept its base's LSA fit: the fit's lineage
    cache_root: Path | None = None  # the cache it was opened from (None: not cached); dense vectors live beside it

    def settings(self) -> dict:
        """The index settings as built (`svd_dims` asked for; `l1_dimensions` what the corpus allowed)."""
        return {**self.index_config.to_dict(), "l1_dimensions": int(getattr(self.l1, "dimensions", 0) or 0)}


def build_index(kb: KnowledgeBase, *, svd_dims: int | None = None, config: IndexConfig | None = None,
                progress: Progress | None = None, spill: Spill = IN_MEMORY,
                embedder: Embedder | LazyEmbedder | str | None = DEFAULT, fit: LsaFit | None = None) -> KnowledgeIndex:
    """Index `kb`; an L1 index that cannot be built leaves L1 `unavailable` with the reason, not an error.
    `svd_dims` overrides `config.svd_dims` (the older keyword); `progress(stage, fraction)` follows the
    stages of retrieval.index.progress. `embedder` gives L1 its static part (None: none; DEFAULT: the
    packaged one, when installed). `fit` is an LSA fit to keep instead of fitting one (retrieval/l1/kept_fit.py)."""
    config = _with_dims(config, svd_dims)
    embedder = _embedder(embedder)
    started = time.perf_counter()
    columns = as_columns(kb, spill)
    if columns is not kb:  # the base's objects go now, unless the caller holds them (index/build_columns.py)
        kb = columns
        let_go(kb.chunk_count)
    bp.report(progress, bp.L0, 0.0)
    l0 = L0Index(kb.entries)
    bp.report(progress, bp.L0, 1.0)
    l1, reason = None, None
    chunks, streamed = _l1_chunks(kb)
    try:
        arrays = build_arrays(streamed, config, progress, loaded(embedder), spill, fit) if chunks else None
        l1 = L1Index(chunks, config, arrays=arrays, embedder=embedder)  # no chunk: ValueError, as before
    except ValueError as exc:  # e.g. no chunk has any indexable term
        reason = f"{type(exc).__name__}: {exc}"
    return KnowledgeIndex(kb, l0, l1, reason, config.svd_dims, time.perf_counter() - started, False, config)


def open_index(path: str | Path, *, svd_dims: int | None = None, config: IndexConfig | None = None,
               cache_dir: str | Path | None = None, use_cache: bool = True, strict: bool = False,
               exclude_fields: Iterable[str] = (), exclude_paths: Iterable[str] = (),
               progress: Progress | None = None,
               embedder: Embedder | LazyEmbedder | str | None = DEFAULT, rebuild: bool = False,
               keep_fit: bool = False) -> KnowledgeIndex:
    """Load and index a knowledge base, reusing the on-disk cache when the corpus content is unchanged, and
    updating the newest cached index of the same base and options when some files changed: the update writes
    a delta beside the last full build (retrieval/index/incremental.py; `rebuild` builds it whole instead, a
    new full fit; with `keep_fit`, a full build on the fit of the cached index, updated first if files
    changed: what an update equals).

    `config` holds the index settings (`svd_dims` overrides its dimensions). `exclude_paths` (path
    prefixes relative to the root, see retrieval.kb.exclusions) are normalised and sorted, and are part of
    the cache key: excluding `news` never reuses the index that holds it. So is the embedder's name
    (`embedder`: see `build_index`); a cached index loads its embedder only when a query needs it.
    """
    config = _with_dims(config, svd_dims)
    embedder = _embedder(embedder)
    excluded = tuple(sorted(exclude_fields))
    prefixes = exclude_prefixes(exclude_paths)
    if keep_fit and not (rebuild and use_cache):
        raise ValueError("keep_fit keeps the fit of the cached index in a rebuild: use it with rebuild=True and "
                         "the cache (an update keeps its fit anyway)")
    if not use_cache:
        return build_index(_read(path, strict, excluded, prefixes, progress), config=config, progress=progress,
                           embedder=embedder)
    bp.report(progress, bp.HASHING, 0.0)
    name = embedder.name if embedder else None
    lineage = cache_key(f"lineage|{Path(path).resolve()}|{excluded}|{name}", config, strict, prefixes)
    cache_root = Path(cache_dir or default_cache_dir())
    stats: dict[str, bytes] = {}  # each file's stat line, as the key saw it: an update reads no stat again
    key = cache_key(f"{file_signature(path, stats)}|{excluded}|{name}", config, strict, prefixes)
    folder = cache_root / key
    with _collector_paused():
        cached = None if rebuild else read_cache(folder)
        bp.report(progress, bp.HASHING, 1.0)
        if cached is not None:
            bp.report(progress, bp.CACHED, 1.0)
            return replace(_from_cache(cached, embedder), cache_root=cache_root)
        prior = None if rebuild else newest_of_lineage(folder.parent, lineage)
        updated = prior and update_index(prior, path, strict=strict, exclude_fields=excluded, exclude_paths=prefixes,
                                         config=config, embedder=embedder, stats=stats)
        del prior
        if updated:
            bp.report(progress, bp.CACHING, 0.0)
            write_cache(folder, updated.cached)  # the delta only: what changed since the base
            bp.report(progress, bp.CACHING, 1.0)
            return KnowledgeIndex(updated.kb, updated.l0, updated.l1, None, config.svd_dims, updated.facts.seconds,
                                  False, config, updated.facts, cache_root=cache_root)
    kept = _current(path, folder.parent, lineage, dict(svd_dims=svd_dims, config=config, cache_dir=cache_dir,
                     strict=strict, exclude_fields=exclude_fields, exclude_paths=exclude_paths,
                     embedder=embedder)) if keep_fit else None
    fit = LsaFit.of(kept.arrays) if kept is not None and kept.arrays is not None and kept.lineage else None
    spill = Spill(folder.parent / f"{SPILL_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:  # the largest arrays go to the cache's disk as they are made, and the cache takes those files
        index = build_index(_read(path, strict, excluded, prefixes, progress), config=config, progress=progress,
                            embedder=embedder, spill=spill, fit=fit)
        index.kept_fit = kept.lineage if fit is not None else None
        index.cache_root = cache_root
        bp.report(progress, bp.CACHING, 0.0)
        if embedder is not None and index.l1 is not None and index.l1.embedder_info is None:  # the embedder failed:
            folder = folder.parent / cache_key(f"{file_signature(path)}|{excluded}|None", config, strict, prefixes)
        rows = _l1_rows(index.kb)
        write_cache(folder, CachedIndex(index.kb, index.l1.arrays if index.l1 else None, rows,
                                        index.l1_unavailable_reason, config, index.build_seconds, l0=index.l0.arrays,
                                        lineage=index.kept_fit or Lineage(lineage, str(Path(path).resolve()),
                                                                          int(rows.size))))
    finally:  # the index keeps its maps of the spilled files; their names go
        shutil.rmtree(spill.folder, ignore_errors=True)
    bp.report(progress, bp.CACHING, 1.0)
    return index


def _current(path: str | Path, cache_root: Path, lineage: str, options: dict) -> CachedIndex | None:
    """The cached index of the base at `path` as its files are now (updated first if they changed, built if
    there is none or it drifted past the bound: then its fit is a new one), to keep the fit of."""
    open_index(path, **options)
    return newest_of_lineage(cache_root, lineage)


def _read(path: str | Path, strict: bool, excluded: tuple[str, ...], prefixes: tuple[str, ...],
          progress: Progress | None) -> KnowledgeBase:
    bp.report(progress, bp.READING, 0.0)
    kb = load_knowledge_base(path, strict=strict, exclude_fields=excluded, exclude_paths=prefixes)
    bp.report(progress, bp.READING, 1.0)
    return kb


INDEX_CODE = ("kb", "text", "index", "l0", "l1")  # the subpackages whose code a cached index depends on


def default_cache_dir() -> Path:
    """`$LOOKUP_KNOWLEDGE_CACHE`, else `$XDG_CACHE_HOME/lookup-knowledge`, else `~/.cache/lookup-knowledge`."""
    explicit = os.environ.get("LOOKUP_KNOWLEDGE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "lookup-knowledge"


def _code_fingerprint() -> str:
    """Hash of the subpackages that shape an index (every module of kb, text, index, l0 and l1), so a code
    change never reuses a stale cache."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]
    for module in sorted(f for name in INDEX_CODE for f in (package / name).glob("*.py")):
        digest.update(module.relative_to(package).as_posix().encode())
        digest.update(module.read_bytes())
    return digest.hexdigest()


def _library_versions() -> tuple[str, ...]:
    """numpy, scipy, scikit-learn and PyStemmer versions: a new release may change what a build gives."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("numpy", "scipy", "scikit-learn", "PyStemmer"):
        try:
            found.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            found.append(f"{name}==?")
    return tuple(found)


def cache_key(corpus_fingerprint: str, config: IndexConfig, strict: bool, exclude_paths: tuple[str, ...] = ()) -> str:
    parts = (corpus_fingerprint, sorted(config.to_dict().items()), strict, FORMAT, __version__, _library_versions(),
             _code_fingerprint(), *((exclude_paths,) if exclude_paths else ()))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def _embedder(embedder: Embedder | LazyEmbedder | str | None) -> Embedder | LazyEmbedder | None:
    if isinstance(embedder, str):
        if embedder != DEFAULT:
            raise ValueError(f"embedder must be an Embedder, None or {DEFAULT!r}, got {embedder!r}")
        return default_embedder()
    return embedder


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a cached index opens. The open allocates an object or
    three per page (100k pages in a BEIR-shaped base) and keeps them all, so the collections those
    allocations set off (hundreds, the later ones over the whole heap) free nothing; at 100k one-chunk
    entries they were a third of the open. The collector is on again after, as it was before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _from_cache(cached: CachedIndex, embedder: Embedder | LazyEmbedder | None) -> KnowledgeIndex:
    l1 = None
    delta = cached.delta
    if cached.arrays is not None and cached.l1_rows is not None and cached.store is not None:
        chunks = ChunkRows(cached.store, cached.l1_rows) if delta is None else ChunkPicks.end_to_end(
            (cached.store, delta.entries.store), (cached.l1_rows, delta.l1_rows))
        l1 = L1Index(chunks, cached.index_config, arrays=cached.arrays, embedder=embedder,
                     delta=delta.l1 if delta is not None else None)
    return KnowledgeIndex(cached.kb, L0Index(cached.kb.entries, arrays=cached.l0), l1, cached.l1_unavailable_reason,
                          cached.index_config.svd_dims, cached.build_seconds, True, cached.index_config)


def file_signature(path: str | Path, lines: dict[str, bytes] | None = None) -> str:
    """Hash of every file's path, size, inode, and modification and change times under `path` (or of the
    one file): the cache key's view of the corpus. Any edit changes a change time (`ctime` cannot be set
    back), and stat-ing 6k files costs milliseconds where hashing their bytes cost seconds; the content
    fingerprint is still computed at build and kept with the index (`kb.fingerprint`). `lines` gets each file's
    stat line by its full path: an update reads its files' stats from there instead of stat-ing them again."""
    root = Path(path).resolve()
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogatepass"))
    if not root.is_dir():
        digest.update(stat_line(str(root), root.name))
        return digest.hexdigest()
    prefix = len(str(root)) + 1
    for folder, subfolders, names in os.walk(root):
        subfolders.sort()
        for name in sorted(names):
            full = f"{folder}/{name}"
            line = stat_line(full, full[prefix:])
            digest.update(line)
            if lines is not None:
                lines[full] = line
    return digest.hexdigest()


def _l1_chunks(kb: KnowledgeBase) -> tuple[Sequence[Chunk], Sequence[Chunk]]:
    """The chunks L1 indexes, and the same chunks for the build's passes over them: a base held as columns
    gives its store's rows, and streams their texts (build_columns.StreamedRows)."""
    if isinstance(kb.entries, EntryColumns):
        store, rows = kb.entries.store, indexable_rows(kb.entries.store)
        return ChunkRows(store, rows), StreamedRows(store, rows)
    chunks = [c for c in kb.chunks if indexable(c)]
    return chunks, chunks


def _l1_rows(kb: KnowledgeBase) -> np.ndarray:
    """Positions, in the base's chunk order, of the chunks L1 indexes."""
    if isinstance(kb.entries, EntryColumns):
        return indexable_rows(kb.entries.store)
    return np.flatnonzero(np.fromiter((indexable(c) for c in kb.chunks), dtype=bool)).astype(np.int64)


def _with_dims(config: IndexConfig | None, svd_dims: int | None) -> IndexConfig:
    config = config or IndexConfig()
    if svd_dims is None or svd_dims == config.svd_dims:
        return config
    return IndexConfig(**{**config.to_dict(), "svd_dims": svd_dims})
