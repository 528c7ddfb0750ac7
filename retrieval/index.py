"""Build the L0 and L1 indexes of a knowledge base, cached on disk by the corpus content."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import sklearn

from . import __version__
from .corpus import KnowledgeBase, exclude_prefixes, fingerprint, load_knowledge_base
from .l0 import L0Index
from .l1 import L1Index

Progress = Callable[[str, float], None]
_FORMAT = 1
KEEP_CACHED = 16  # index files kept in the cache folder; older ones are removed on write


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


def build_index(kb: KnowledgeBase, *, svd_dims: int = 256, progress: Progress | None = None) -> KnowledgeIndex:
    """Index `kb`; an L1 index that cannot be built leaves L1 `unavailable` with the reason, not an error."""
    started = time.perf_counter()
    _report(progress, "L0: BM25 over titles, keywords, categories, entities", 0.1)
    l0 = L0Index(kb.entries)
    _report(progress, "L1: TF-IDF + SVD over chunks", 0.4)
    l1, reason = None, None
    chunks = [c for c in kb.chunks if c.text.strip() or c.breadcrumb.strip()]
    try:
        l1 = L1Index(chunks, svd_dims=svd_dims)
    except ValueError as exc:  # e.g. no chunk has any indexable term
        reason = f"{type(exc).__name__}: {exc}"
    _report(progress, "done", 1.0)
    return KnowledgeIndex(kb, l0, l1, reason, svd_dims, time.perf_counter() - started)


def open_index(path: str | Path, *, svd_dims: int = 256, cache_dir: str | Path | None = None,
               use_cache: bool = True, strict: bool = False, exclude_fields: Iterable[str] = (),
               exclude_paths: Iterable[str] = (), progress: Progress | None = None) -> KnowledgeIndex:
    """Load and index a knowledge base, reusing the on-disk cache when the corpus content is unchanged.

    `exclude_paths` (path prefixes relative to the root, see retrieval.exclusions) are normalised and
    sorted, and are part of the cache key: excluding `news` never reuses the index that holds it.
    """
    excluded = tuple(sorted(exclude_fields))
    prefixes = exclude_prefixes(exclude_paths)
    if not use_cache:
        return build_index(load_knowledge_base(path, strict=strict, exclude_fields=excluded, exclude_paths=prefixes),
                           svd_dims=svd_dims, progress=progress)
    _report(progress, "hashing the knowledge base", 0.0)
    key = _cache_key(fingerprint(path, exclude_fields=excluded, exclude_paths=prefixes), svd_dims, strict, prefixes)
    cache_file = Path(cache_dir or default_cache_dir()) / f"{key}.pkl"
    cached = _read_cache(cache_file)
    if cached is not None:
        _report(progress, "loaded from cache", 1.0)
        return cached
    index = build_index(load_knowledge_base(path, strict=strict, exclude_fields=excluded, exclude_paths=prefixes),
                        svd_dims=svd_dims, progress=progress)
    _write_cache(cache_file, index)
    return index


def default_cache_dir() -> Path:
    """`$LOOKUP_KNOWLEDGE_CACHE`, else `$XDG_CACHE_HOME/lookup-knowledge`, else `~/.cache/lookup-knowledge`."""
    explicit = os.environ.get("LOOKUP_KNOWLEDGE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "lookup-knowledge"


def _code_fingerprint() -> str:
    """Hash of the modules that shape an index, so a code change never reuses a stale cache."""
    digest = hashlib.sha256()
    for name in ("corpus", "exclusions", "markdown", "text", "l0", "l1", "index"):
        digest.update((Path(__file__).parent / f"{name}.py").read_bytes())
    return digest.hexdigest()


def _cache_key(corpus_fingerprint: str, svd_dims: int, strict: bool, exclude_paths: tuple[str, ...] = ()) -> str:
    parts = (corpus_fingerprint, svd_dims, strict, _FORMAT, __version__, sklearn.__version__, _code_fingerprint(),
             *((exclude_paths,) if exclude_paths else ()))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def _read_cache(cache_file: Path) -> KnowledgeIndex | None:
    try:
        with cache_file.open("rb") as handle:
            index = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None  # missing or stale cache: rebuild
    index.from_cache = True
    return index


def _write_cache(cache_file: Path, index: KnowledgeIndex) -> None:
    """Write atomically so a concurrent reader never sees half a file; a read-only cache dir is not fatal."""
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=cache_file.parent, delete=False, suffix=".tmp") as handle:
            pickle.dump(index, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(handle.name, cache_file)
        _prune(cache_file.parent, KEEP_CACHED)
    except OSError:
        pass


def _prune(folder: Path, keep: int) -> None:
    """Remove all but the `keep` most recently written index files (a changed corpus leaves old ones)."""
    files = sorted(folder.glob("*.pkl"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[keep:]:
        old.unlink(missing_ok=True)


def _report(progress: Progress | None, stage: str, fraction: float) -> None:
    if progress is not None:
        progress(stage, fraction)
