"""Which knowledge base and index settings answered a lookup: the provenance every trace row carries.

Computed once per loaded index (entry and chunk counts walk the corpus) and kept beside it, so a
lookup pays a dictionary read, not a walk.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval.index.build import KnowledgeIndex

COLUMNS = ("kb_path", "kb_fingerprint", "kb_entries", "kb_chunks", "index_settings")


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
