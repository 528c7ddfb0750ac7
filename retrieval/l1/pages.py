"""Which pages and rows an L1 filter allows: pages by category and by source, and each filter's rows kept."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from retrieval.kb.model import Chunk
from retrieval.l1.universe import Universe
from retrieval.text.analysis import normalize_label

FILTER_KEYS = ("category", "source")
KEPT_FILTERS = 64  # filters whose rows are kept for their next query; a lookup filters by one of a few categories


class PageSets:
    """The pages of an L1 index, grouped the ways a filter names them, and the rows of each page. Tombstoned
    pages (`dead`: a base's pages an update removed or replaced) are in no group and in no universe."""

    def __init__(self, page_sources: Sequence[str], page_domains: Iterable[Sequence[str]],
                 page_row_starts: np.ndarray, page_row_order: np.ndarray, dead: np.ndarray | None = None) -> None:
        self._starts, self._order = page_row_starts, page_row_order
        self.sizes = np.diff(page_row_starts)
        live = np.ones(self.sizes.size, dtype=bool)
        if dead is not None:
            live[dead] = False
        self._by_domain = _pages_by(page_domains, live)
        self._by_source = {source: page for page, source in enumerate(page_sources) if live[page]}
        self.live_pages = np.flatnonzero(live)
        self.live_rows = int(self.sizes[live].sum())
        if self.live_pages.size == self.sizes.size:
            rows_by_page = bool(np.array_equal(page_row_order, np.arange(len(page_row_order))))
            self.everything = Universe(None if rows_by_page else page_row_order, None, self.sizes)
        else:
            self.everything = Universe(self.rows_of(self.live_pages), self.live_pages, self.sizes[self.live_pages])
        self._universes: dict[tuple[tuple[str, str], ...], Universe] = {}
        self._lock = threading.Lock()

    def page_of(self, source: str) -> int | None:
        """The page number of `source` (None: L1 holds no section of it)."""
        return self._by_source.get(source)

    def allowed(self, filters: Mapping[str, str]) -> np.ndarray | None:
        """The pages `filters` allows (None: every page); an unknown filter key raises ValueError."""
        check_filter_keys(filters)
        allowed = None
        for key, value in filters.items():
            if key == "category":
                pages = self._by_domain.get(normalize_label(value), np.empty(0, dtype=np.int64))
            else:
                page = self._by_source.get(str(value))
                pages = np.asarray([] if page is None else [page], dtype=np.int64)
            allowed = pages if allowed is None else np.intersect1d(allowed, pages)
        return allowed

    def universe(self, filters: Mapping[str, str], allowed: np.ndarray | None) -> Universe:
        """The rows the filter allows, page by page, kept for the filter's next query."""
        if allowed is None:
            return self.everything
        key = tuple(sorted(filters.items()))
        with self._lock:
            universe = self._universes.get(key)
        if universe is None:
            universe = Universe(self.rows_of(allowed), allowed, self.sizes[allowed])
            with self._lock:
                if len(self._universes) >= KEPT_FILTERS:
                    self._universes.clear()
                self._universes[key] = universe
        return universe

    def every_row(self) -> np.ndarray:
        """The rows of every live page, page by page (every row when no page is tombstoned)."""
        universe = self.everything
        return np.arange(self.sizes.sum(), dtype=np.int64) if universe.rows is None else universe.rows

    def rows_of(self, pages: np.ndarray) -> np.ndarray:
        """The rows of `pages`, page by page."""
        starts, ends = self._starts[pages], self._starts[pages + 1]
        lengths = ends - starts
        if not lengths.sum():
            return np.empty(0, dtype=np.int64)
        offsets = np.repeat(starts - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
        return self._order[np.arange(lengths.sum()) + offsets]


def page_heads(chunks: Sequence[Chunk], first_rows: np.ndarray) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Each page's source and domains, read off its first chunk (a page's chunks share them): from a column
    store's entry heads when it has them (at 1M chunks 66k Chunk objects cost a quarter of the cache load)."""
    heads_at = getattr(chunks, "heads_at", None)
    if heads_at is not None:
        heads = heads_at(first_rows)
        return tuple(head[0] for head in heads), [head[2] for head in heads]
    first = [chunks[int(row)] for row in first_rows]
    return tuple(c.source for c in first), [c.domains for c in first]


def check_filter_keys(filters: Mapping[str, str]) -> None:
    """Raise ValueError, naming the supported keys, for a filter key L1 does not know."""
    unknown = sorted(set(filters) - set(FILTER_KEYS))
    if unknown:
        raise ValueError(f"unknown L1 filter key(s) {unknown}; supported: {', '.join(FILTER_KEYS)}")


def _pages_by(domains_per_page: Iterable[Sequence[str]], live: np.ndarray) -> dict[str, np.ndarray]:
    pages: dict[str, list[int]] = {}
    for page, domains in enumerate(domains_per_page):
        if not live[page]:
            continue
        for domain in domains:
            pages.setdefault(domain, []).append(page)
    return {k: np.asarray(v, dtype=np.int64) for k, v in pages.items()}
