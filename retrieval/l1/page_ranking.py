"""A selection's scored rows grouped by page, best first: which pages lead and which of their sections are kept."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class PageRanking:
    """Rows grouped by page, best first within a page (ties by row); where each page starts, its number of
    rows, and its leaders' indices (into `starts`) of the `top_k` best pages, best first (ties by page)."""

    rows: np.ndarray
    pages: np.ndarray
    fused: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    best: np.ndarray

    @classmethod
    def of(cls, rows: np.ndarray, fused: np.ndarray, page_of_chunk: np.ndarray, top_k: int) -> PageRanking:
        pages = page_of_chunk[rows]
        order = np.lexsort((rows, -fused, pages))
        rows, pages, fused = rows[order], pages[order], fused[order]
        first = np.empty(rows.size, dtype=bool)
        first[:1] = True
        np.not_equal(pages[1:], pages[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        counts = np.diff(starts, append=rows.size)
        best = np.lexsort((pages[starts], -fused[starts]))[:top_k]
        return cls(rows, pages, fused, starts, counts, best)

    def chosen(self, sections: int) -> np.ndarray:
        """The best `sections` rows of each of the best pages, best first (ties by row)."""
        if self.rows.size == 0:
            return np.empty(0, dtype=np.int64)
        picked = np.zeros(self.starts.size, dtype=bool)
        picked[self.best] = True
        rank_in_page = np.arange(self.rows.size) - np.repeat(self.starts, self.counts)
        keep = (rank_in_page < sections) & np.repeat(picked, self.counts)
        chosen, fused = self.rows[keep], self.fused[keep]
        return chosen[np.lexsort((chosen, -fused))]
