"""An index's LSA fit, kept for a full build of the same base: the terms the SVD saw, each one's idf and
row of the projection, found again by the term's text in the new build's vocabulary.

A full build that keeps the fit (`open_index(..., rebuild=True, keep_fit=True)`) recomputes everything
else from the files, so it is what an update should equal: the update folds new sections into the same
fit. A new fit moves every LSA cosine a little (docs/l1.md, Incremental updates), enough to swap pages
whose scores are 1e-4 apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.index.chunk_store import TextColumn


@dataclass(frozen=True, eq=False)
class LsaFit:
    """The fit: `rows[term]` is the term's row of `projection` (terms x dims), `idf[row]` its idf."""

    rows: dict[str, int]
    idf: np.ndarray  # float32 per projection row
    projection: np.ndarray  # float32 (terms the SVD saw, dims)

    @classmethod
    def of(cls, arrays) -> LsaFit | None:
        """The fit of `arrays` (an L1Arrays); None when it has no LSA space (too few chunks or terms)."""
        projection = arrays.projection
        if projection.ndim != 2 or projection.shape[1] == 0:
            return None
        column = TextColumn(arrays.unigram_blob, arrays.unigram_offsets)
        seen = np.flatnonzero(arrays.projection_row >= 0)
        rows = arrays.projection_row[seen]
        idf = np.zeros(projection.shape[0], dtype=np.float32)
        idf[rows] = arrays.lsa_idf[seen]
        return cls({column[int(t)]: int(r) for t, r in zip(seen.tolist(), rows.tolist(), strict=True)},
                   idf, projection)

    def for_terms(self, unigrams: Sequence[str], idf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`idf` (a new build's, per unigram) with the fit's idf for every term it saw, and each unigram's
        row of the projection (-1: a term the fit never saw, which projects to nothing)."""
        idf = idf.astype(np.float32, copy=True)
        projection_row = np.fromiter((self.rows.get(term, -1) for term in unigrams), dtype=np.int32,
                                     count=len(unigrams))
        known = projection_row >= 0
        idf[known] = self.idf[projection_row[known]]
        return idf, projection_row
