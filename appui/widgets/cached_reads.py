"""A page's reads of the trace files, cached on the files' state: a rerun over unchanged files opens nothing.

The Traces, Export and Trends pages read the store through `cached(store)`, whose `query` answers a statement it has
answered before from Streamlit's data cache while the files' state (retrieval.traces.file_state: sizes and
times of the file, its log and its live folder, from `os.stat`) is the same. A new row, part, fold or
checkpoint changes the state, and every statement reads again. The process's own recorded rows are made
visible first, as every read does (the store's flush), so an analyst's lookup shows on the next rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from appui.data import trace_export
from appui.data.traces import TraceFilters
from retrieval import TraceStore
from retrieval.traces import ExportEstimate, FileState, expand_sources, nudge_keepers, trace_file_state

CACHED_STATEMENTS = 256  # answers kept per process (a page's dozen statements, for many filters and pages)


class CachedReads:
    """`store` with its `query` cached on the trace files' state; everything else is the store's own."""

    def __init__(self, store: TraceStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @property
    def store(self) -> TraceStore:
        """The store itself, for the core's functions that read it (appui.widgets.trend_reads caches them)."""
        return self._store

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        """What `TraceStore.query` returns, read again only when the files changed since it last was."""
        return _answer(self._store, *file_key(self._store), sql, tuple(params or ()))


def cached(store: TraceStore | None) -> CachedReads | None:
    """The pages' view of `store` (None stays None: the store failed to open, already said)."""
    return None if store is None else CachedReads(store)


def estimate(store: TraceStore, filters: TraceFilters, fmt: str) -> ExportEstimate:
    """The Export page's size estimate (trace_export.estimate: a sample exported), cached the same way."""
    return _estimate(store, *file_key(store), filters, fmt)


def file_key(store: TraceStore) -> tuple[tuple[str, ...], FileState]:
    """The store's sources and their state, once this process's own rows are visible (as every read makes
    them) and a keeper runs for rows a gone writer left (as every read starts one)."""
    if store.has_unshown_rows():
        store.flush(store.lock_timeout)
    nudge_keepers(expand_sources(list(store.sources)))
    return tuple(str(source) for source in store.sources), trace_file_state(store.sources)


@st.cache_data(show_spinner=False, max_entries=CACHED_STATEMENTS)
def _answer(_store: TraceStore, sources: tuple[str, ...], state: FileState, sql: str, params: tuple) -> pd.DataFrame:
    """One statement's answer on the files `sources` in `state` (the store itself is not part of the key)."""
    return _store.query(sql, list(params))


@st.cache_data(show_spinner=False, max_entries=32)
def _estimate(_store: TraceStore, sources: tuple[str, ...], state: FileState, filters: TraceFilters,
              fmt: str) -> ExportEstimate:
    return trace_export.estimate(_store, filters, fmt)
