"""Which knowledge base and index settings answered a lookup: the provenance every trace row carries; and
which versions of the libraries that decide the numbers an evaluation run recorded (`library_versions`).

Computed once per loaded index (entry and chunk counts walk the corpus) and kept beside it, so a
lookup pays a dictionary read, not a walk.
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval.index.build import KnowledgeIndex

COLUMNS = ("kb_path", "kb_fingerprint", "kb_entries", "kb_chunks", "index_settings")
# the libraries whose arithmetic decides a run's numbers: the LSA (scikit-learn, scipy, numpy), the static
# embedding (wordllama), stemming (PyStemmer), the traces' and metrics' storage (duckdb), and Python; BM25 is
# computed in retrieval/l0 (equal to rank-bm25's scores), and rank-bm25, the reference the tests compare it with,
# is recorded too
LIBRARIES = ("python", "numpy", "scipy", "scikit-learn", "duckdb", "rank-bm25", "wordllama", "PyStemmer")


@dataclass(frozen=True)
class Provenance:
    """A knowledge base by path and content fingerprint, its size, and the settings its index was built with."""

    kb_path: str
    kb_fingerprint: str
    kb_entries: int
    kb_chunks: int
    index_settings: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in COLUMNS}


_SEEN: dict[int, tuple[weakref.ref, Provenance]] = {}


def of_index(index: KnowledgeIndex) -> Provenance:
    """The provenance of `index`, computed on first use and reused while the index lives."""
    seen = _SEEN.get(id(index))
    if seen is not None and seen[0]() is index:
        return seen[1]
    kb = index.kb
    built = index.settings() if hasattr(index, "settings") else {"svd_dims": index.svd_dims}
    settings = {**built, "l1_available": index.l1 is not None, "excluded_paths": list(kb.excluded_paths)}
    found = Provenance(str(kb.root), kb.fingerprint, len(kb.entries), kb.chunk_count,
                       settings)
    key = id(index)
    _SEEN[key] = (weakref.ref(index, lambda _ref: _SEEN.pop(key, None)), found)
    return found


def library_versions() -> dict[str, str | None]:
    """The versions of LIBRARIES in this process: the distribution's version from importlib.metadata (None when
    it is not installed) and Python's own, keyed by the names in LIBRARIES.

    An evaluation run records them because these libraries decide its numbers: a new numpy, scipy or
    scikit-learn can move the LSA's floats, and a borderline score or tie can then fall on the other side of a
    cut-off, so two runs that differ only in their library versions can differ in their metrics. Read once per
    process (the libraries a process has imported do not change under it); the dict returned is a copy.
    """
    return dict(_versions())


@functools.cache
def _versions() -> tuple[tuple[str, str | None], ...]:
    import platform
    from importlib import metadata  # here, not at import: the trace schema imports this module at start-up

    found: list[tuple[str, str | None]] = [("python", platform.python_version())]
    for name in LIBRARIES[1:]:
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            found.append((name, None))
    return tuple(found)
