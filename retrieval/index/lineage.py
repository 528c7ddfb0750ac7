"""What a cached index was built from and how far it has drifted from its last full fit.

Every cache folder records its lineage: the key of the base and options it indexes, whatever the files'
content (the base's resolved path, the load and index options, the embedder, the code and library versions:
an index of the same lineage can be updated instead of built), what the load read (retrieval/kb/sources.py's table,
stored as arrays beside the index) and the drift: how many L1 rows were added or removed by updates since
the last full fit, against the rows the fit saw. Past REFIT_SHARE the next update is a full build instead.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from retrieval.index.chunk_store import TextColumn
from retrieval.kb.sources import SourceTable

REFIT_SHARE = 0.2  # rows changed since the last fit, over the rows it saw, past which an update refits (builds)
SOURCE_ARRAYS = ("source_names_blob", "source_names_offsets", "source_stats_blob", "source_stats_offsets",
                 "source_digests", "source_entries")


@dataclass(frozen=True)
class Lineage:
    """A cached index's lineage key, the base it indexes, and its drift since the last full fit."""

    key: str
    root: str
    rows_at_fit: int  # L1 rows the last full fit saw
    rows_changed: int = 0  # L1 rows added or removed by updates since then (an edited row counts twice)
    updates: int = 0  # updates since the last full fit

    @property
    def drift(self) -> float:
        """The share of the fit's rows changed since: what REFIT_SHARE bounds."""
        return self.rows_changed / max(self.rows_at_fit, 1)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "drift": round(self.drift, 6)}

    @classmethod
    def of_dict(cls, data: dict[str, Any]) -> Lineage:
        return cls(str(data["key"]), str(data["root"]), int(data["rows_at_fit"]), int(data["rows_changed"]),
                   int(data["updates"]))

    def updated(self, rows_changed: int) -> Lineage:
        """The lineage after one more update that changed `rows_changed` rows."""
        return Lineage(self.key, self.root, self.rows_at_fit, self.rows_changed + rows_changed, self.updates + 1)


def source_arrays(table: SourceTable) -> dict[str, np.ndarray]:
    """The arrays a cache folder stores a source table as."""
    names, stats = TextColumn.of(list(table.names)), TextColumn.of(list(table.stats))
    return {"source_names_blob": names.blob, "source_names_offsets": names.offsets, "source_stats_blob": stats.blob,
            "source_stats_offsets": stats.offsets, "source_digests": table.digests.astype(np.uint64),
            "source_entries": table.entries.astype(np.int64)}


def source_table(arrays: dict[str, np.ndarray], n_entries: int) -> SourceTable:
    """The source table of a cache folder's arrays; ValueError unless they fit each other and the entries."""
    names = TextColumn(arrays["source_names_blob"], arrays["source_names_offsets"])
    stats = TextColumn(arrays["source_stats_blob"], arrays["source_stats_offsets"])
    digests, entries = arrays["source_digests"], arrays["source_entries"]
    count = len(entries)
    names.check(count, "source name")
    stats.check(count, "source stat")
    if digests.shape != (count, 2) or (count and (entries.min() < -1 or entries.max() >= n_entries)):
        raise ValueError("the source table does not fit the entries")
    return SourceTable(names, stats, digests, entries)  # decoded only by an update
