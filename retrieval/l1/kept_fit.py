"""An index's fit, kept for a full build of the same base: the terms the SVD saw, each one's idf and row of
the projection, found again by the term's text in the new build's vocabulary, and the mean lengths BM25
normalised sections and pages by (frozen until the next refit, as the LSA idf is: docs/l1.md).

A full build that keeps the fit (`open_index(..., rebuild=True, keep_fit=True)`) recomputes everything
else from the files, so it is what an update should equal: the update folds new sections into the same
fit. A new fit moves every LSA cosine a little (docs/l1.md, Incremental updates), enough to swap pages
whose scores are 1e-4 apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.l1.terms import TermIndex
from retrieval.storage.text_column import TextColumn


@dataclass(frozen=True, eq=False)
class LsaFit:
    """The fit: `rows[term]` is the term's row of `projection` (terms x dims), `idf[row]` its idf, and BM25's
    mean section and page lengths."""

    rows: Mapping[str, int] | _SeenRows  # term -> its row of `projection`
    idf: np.ndarray  # float32 per projection row
    projection: np.ndarray  # float32 (terms the SVD saw, dims)
    lengths_mean: tuple[float | None, float | None] = (None, None)  # None: the build's own

    @classmethod
    def of(cls, arrays) -> LsaFit | None:
        """The fit of `arrays` (an L1Arrays); None when it has no LSA space (too few chunks or terms)."""
        projection = arrays.projection
        if projection.ndim != 2 or projection.shape[1] == 0:
            return None
        return cls.frozen(arrays)

    @classmethod
    def frozen(cls, arrays) -> LsaFit:
        """The fit of `arrays` (an L1Arrays), an empty LSA space included: what a delta segment is built on."""
        projection = arrays.projection
        vocabulary = TermIndex(TextColumn(arrays.unigram_blob, arrays.unigram_offsets), arrays.unigram_hashes,
                               arrays.unigram_ids)
        seen = np.flatnonzero(arrays.projection_row >= 0)
        idf = np.zeros(projection.shape[0], dtype=np.float32)
        idf[arrays.projection_row[seen]] = arrays.lsa_idf[seen]
        section_mean, page_mean = (float(v) for v in arrays.lengths_mean)
        return cls(_SeenRows(vocabulary, arrays.projection_row), idf, projection, (section_mean, page_mean))

    def for_terms(self, unigrams: Sequence[str], idf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`idf` (a new build's, per unigram) with the fit's idf for every term it saw, and each unigram's
        row of the projection (-1: a term the fit never saw, which projects to nothing)."""
        idf = idf.astype(np.float32, copy=True)
        projection_row = np.fromiter((self.rows.get(term, -1) for term in unigrams), dtype=np.int32,
                                     count=len(unigrams))
        known = projection_row >= 0
        idf[known] = self.idf[projection_row[known]]
        return idf, projection_row


class _SeenRows:
    """term -> its row of the projection (-1: a term the fit never saw), read off a stored vocabulary."""

    def __init__(self, vocabulary: TermIndex, projection_row: np.ndarray) -> None:
        self._vocabulary, self._projection_row = vocabulary, projection_row

    def get(self, term: str, default: int = -1) -> int:
        term_id = self._vocabulary.get(term)
        return int(self._projection_row[term_id]) if term_id >= 0 else default
