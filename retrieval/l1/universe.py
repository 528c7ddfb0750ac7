"""The rows an L1 selection may return, page by page, and the runs of pages whose lexical bounds are shared."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

BOUND_SEGMENTS = 2048  # at most this many page bounds are reduced; more pages share one (a reduceat costs per
# segment, ~60 ns: at 1M chunks 3.5 ms for 65k pages, 0.6 ms for 8k, 0.2 ms for 2k); a shared bound is looser,
# never wrong: at 1M, 2k runs scored 479 LSA rows a query against 416 for 8k, and the selection took 1.92
# against 2.29 ms (docs/l1.md)


@dataclass(frozen=True, eq=False)
class Universe:
    """The rows a selection may return, page by page: `rows` (None: every row, pages' rows contiguous and
    in order), their `pages` (None: every page) and each page's number of rows."""

    rows: np.ndarray | None
    pages: np.ndarray | None
    sizes: np.ndarray

    @cached_property
    def starts(self) -> np.ndarray:
        """Where each page's rows start among the universe's positions (one more entry than pages)."""
        return np.r_[0, np.cumsum(self.sizes)].astype(np.int64)

    def bound_runs(self) -> tuple[np.ndarray, np.ndarray]:
        """Runs of pages that share one lexical bound (at most BOUND_SEGMENTS of them): where each run starts
        among the universe's positions, and each page's run (pages without rows: one past the last run, whose
        bound is 0). Kept per universe, so a query's page bounds are one reduceat and one gather."""
        kept = self.__dict__.get("_bound_runs")
        if kept is not None and kept[0] == BOUND_SEGMENTS:
            return kept[1]
        filled = np.flatnonzero(self.sizes > 0)
        group = max(1, filled.size // BOUND_SEGMENTS)
        page_run = np.full(self.sizes.size, -(-filled.size // group), dtype=np.int64)
        page_run[filled] = np.arange(filled.size, dtype=np.int64) // group
        runs = (self.starts[:-1][filled][::group], page_run)
        self.__dict__["_bound_runs"] = (BOUND_SEGMENTS, runs)  # racing callers make equal copies
        return runs

    @cached_property
    def page_of_position(self) -> np.ndarray:
        """The page (by its place in the universe) of each position: made once per universe, on first use."""
        return np.repeat(np.arange(self.sizes.size, dtype=np.int64), self.sizes)

    def positions_of(self, pages: np.ndarray) -> np.ndarray:
        """The universe positions of `pages` (places in the universe), page by page."""
        starts, lengths = self.starts[pages], self.sizes[pages]
        total = int(lengths.sum())
        if not total:
            return np.empty(0, dtype=np.int64)
        offsets = np.repeat(starts - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
        return np.arange(total, dtype=np.int64) + offsets
