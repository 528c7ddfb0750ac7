"""The Trends page's reads of the core (retrieval.traces.trends, .changes, .gaps), cached with st.cache_data on
the trace files' state (appui.widgets.cached_reads.file_key): a rerun over unchanged files computes nothing, a
new row computes again. Content gaps are keyed by the knowledge base's content fingerprint too."""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from appui.data.trends import Window
from appui.widgets.cached_reads import CachedReads, file_key
from retrieval import KnowledgeIndex, TraceStore
from retrieval.traces import Changes, ContentGaps, FileState, Trends
from retrieval.traces import content_gaps as gaps_of
from retrieval.traces import trace_changes as changes_of
from retrieval.traces import trace_trends as trends_of


def trends(store: CachedReads, *, since: datetime, until: datetime, by: str, per: str | None) -> Trends:
    """Every figure per bucket of [since, until) over the store's files (the charts)."""
    return _trends(store.store, *file_key(store.store), since, until, by, per)


def changes(store: CachedReads, *, window: str, until: datetime) -> Changes:
    """The window of length `window` ending at `until` against the one before it (What changed)."""
    return _changes(store.store, *file_key(store.store), window, until)


def content_gaps(store: CachedReads, index: KnowledgeIndex, *, window: str, until: datetime) -> ContentGaps:
    """The topics of the window's unanswered questions on the knowledge base `index` serves (Content gaps)."""
    return _gaps(store.store, index, *file_key(store.store), str(index.kb.root), index.kb.fingerprint, window, until)


@st.cache_data(show_spinner=False, max_entries=32)
def _trends(_store: TraceStore, sources: tuple[str, ...], state: FileState, since: datetime, until: datetime,
            by: str, per: str | None) -> Trends:
    return trends_of(_store, since=since, until=until, by=by, per=per)


@st.cache_data(show_spinner=False, max_entries=16)
def _changes(_store: TraceStore, sources: tuple[str, ...], state: FileState, window: str, until: datetime) -> Changes:
    return changes_of(_store, window=window, until=until)


@st.cache_data(show_spinner="Grouping the unanswered questions into topics…", max_entries=8)
def _gaps(_store: TraceStore, _index: KnowledgeIndex, sources: tuple[str, ...], state: FileState, kb_root: str,
          kb_fingerprint: str, window: str, until: datetime) -> ContentGaps:
    return gaps_of(_store, _index, window=window, until=until)


def report(store: TraceStore, changes: Changes, index: KnowledgeIndex | None, window: Window, fmt: str) -> str:
    """The changes report as Markdown or HTML ("markdown" or "html"), with the content gaps of the base `index`
    serves as a section (None: without them); built when its download is clicked, in the download's own thread
    (no Streamlit call, so not cached)."""
    if index is not None:
        changes = changes.with_sections([gaps_of(store, index, window=window.span, until=window.end).as_section()])
    return changes.to_markdown() if fmt == "markdown" else changes.to_html()
