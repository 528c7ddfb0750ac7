"""What every page shares: the cached index and trace store, the knowledge-base picker and config widgets.

The index is cached per (knowledge-base path, svd_dims, excluded folders) and the trace store per trace path with
`st.cache_resource`, so switching pages or opening more tabs never rebuilds or reopens anything.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import streamlit as st

from appui.widgets import annotator, build_bar, exclusions, wording
from appui.widgets.config_inputs import GROUPS, config_widgets, grouped_fields, reset_config  # noqa: F401 (state.*)
from appui.widgets.tracing import otel_recorder
from retrieval import (
    KnowledgeBaseError,
    KnowledgeIndex,
    LookupConfig,
    LookupResult,
    TraceStore,
    TraceStoreError,
    combine_recorders,
    lookup_knowledge,
    open_index,
)
from retrieval.index import LiveIndex
from retrieval.paths import default_kb, default_traces, trace_sources
from retrieval.traces import TraceStoreLocked, TraceStoreLockedWarning, expand_sources, held_message

SAMPLE, FOLDER = "Sample knowledge base", "Folder path"
LOCK_TIMEOUT = 3.0  # seconds a page waits for another process's lock on the trace file before saying so
T = TypeVar("T")


@dataclass(frozen=True)
class AppContext:
    """The knowledge base (less its excluded folders) and trace store the pages work on; None where opening
    failed (already shown). `exclude_error` says why the excluded folders cannot be used: no index opens then."""

    kb_path: str
    traces_path: str
    store: TraceStore | None
    exclude_paths: tuple[str, ...] = ()
    exclude_error: str | None = None

    def index(self, svd_dims: int, *, fresh: bool = False) -> KnowledgeIndex | None:
        """The base's index under `svd_dims`; `fresh` first takes in files changed since the last look (a lookup
        asked for now answers from the pages as they are, not as the watcher last saw them)."""
        if self.exclude_error:
            st.error(f"Cannot open the knowledge base: fix the excluded folders in the sidebar ({self.exclude_error})")
            return None
        return load_index(self.kb_path, svd_dims, self.exclude_paths, fresh=fresh)


class _IndexSlot:
    """One knowledge base's index, built once under a lock; the slot itself is what st.cache_resource keeps.

    The build happens outside the cached function so its progress bar is a normal element: Streamlit
    cannot replay elements drawn from inside a cached function into a container created outside it.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: LiveIndex | None = None
        self.stage_seconds: dict[str, float] = {}  # the build's stages and their seconds (empty: from cache)

    @property
    def index(self) -> KnowledgeIndex | None:
        """The current index: it follows the knowledge base's files (an edited page is served at the next rerun)."""
        return self.live.current() if self.live is not None else None

    def get(self, kb_path: str, svd_dims: int, progress: Callable[[str, float], None],
            exclude_paths: tuple[str, ...] = (), *, fresh: bool = False) -> KnowledgeIndex:
        """The index, built on first use with `progress` (a BuildBar keeps each stage's seconds for the caption),
        then kept up to date by a watcher thread (retrieval.index.live); `fresh` rebuilds now if files changed
        since the watcher's last look, without waiting for them to settle."""
        with self.lock:  # a second tab asking for the same index waits for the first build
            if self.live is None:
                index = open_index(kb_path, svd_dims=svd_dims, exclude_paths=exclude_paths, progress=progress)
                self.stage_seconds = {} if index.from_cache else dict(getattr(progress, "seconds", {}))
                self.live = LiveIndex(kb_path, index, svd_dims=svd_dims, exclude_paths=exclude_paths).start()
            elif fresh:
                self.live.refresh()
            return self.live.current()


@st.cache_resource(show_spinner=False, max_entries=8)
def _index_slot(kb_path: str, svd_dims: int, exclude_paths: tuple[str, ...] = ()) -> _IndexSlot:
    return _IndexSlot()


@st.cache_resource(show_spinner=False)
def _cached_store(traces_path: str, sources: tuple[str, ...] = ()) -> TraceStore:
    # a file another process holds (an analyst's DuckDB shell) is checked later: lookups are recorded meanwhile
    return TraceStore(traces_path, lock_timeout=LOCK_TIMEOUT, sources=sources or None, defer_if_locked=True)


def load_index(kb_path: str, svd_dims: int, exclude_paths: tuple[str, ...] = (), *,
               fresh: bool = False) -> KnowledgeIndex | None:
    """The cached index without `exclude_paths` (normalised prefixes), building it behind a progress bar (each
    stage's real fraction and an estimate of the time left, see build_bar.py); a bad folder becomes an in-page error.
    `fresh`: files changed since the watcher's last look are taken in first."""
    bar = st.empty()
    try:
        return _index_slot(kb_path, svd_dims, exclude_paths).get(kb_path, svd_dims, build_bar.BuildBar(bar, kb_path),
                                                                 exclude_paths, fresh=fresh)
    except KnowledgeBaseError as exc:
        st.error(f"Cannot open the knowledge base: {wording.for_error(exc)}")
    except (OSError, ValueError) as exc:
        st.error(f"Cannot index {kb_path}: {type(exc).__name__}: {exc}")
    finally:
        bar.empty()
    return None


def open_store(traces_path: str, sources: tuple[str, ...] = ()) -> TraceStore | None:
    """The cached store writing `traces_path` and reading `sources` as one (default: its own file); a file
    another process holds is said so, a broken one is an in-page error."""
    try:
        return _cached_store(traces_path, sources)
    except TraceStoreLocked as exc:
        st.warning(held_message(exc.holder))
    except TraceStoreError as exc:
        st.error(f"Cannot open the trace file: {wording.for_page(str(exc))}")
    return None


def sidebar_context() -> AppContext:
    """The knowledge-base picker, its excluded folders and the trace file, in the sidebar of every page."""
    with st.sidebar:
        st.subheader("Knowledge base")
        source = st.radio("Knowledge base", [SAMPLE, FOLDER], key="kb_source", label_visibility="collapsed",
                          help=f"The sample is {default_kb()} ($LOOKUP_KNOWLEDGE_KB overrides it)")
        kb_path = default_kb()
        if source == FOLDER:
            typed = st.text_input("Folder (Markdown) or corpus.jsonl", key="kb_path",
                                  placeholder="/path/to/kb").strip()
            kb_path = Path(typed).expanduser() if typed else kb_path
        excluded = exclusions.sidebar_input(kb_path)
        st.button("Reload knowledge base", key="kb_reload", on_click=_index_slot.clear,
                  help="Re-read the files (the on-disk index cache is reused when nothing changed)")
        traces = str(Path(default_traces()).resolve())
        sources = tuple(str(Path(p).resolve()) for p in trace_sources())
        read = expand_sources(sources)
        st.caption(f"Traces: `{traces}`" + (f" · reading {len(read)} trace files as one" if len(read) > 1 else ""),
                   help="$LOOKUP_KNOWLEDGE_TRACES: a trace file, a folder of them, or several separated by ':'")
        annotator.sidebar()
    return AppContext(str(Path(kb_path).resolve()), traces, open_store(traces, sources), excluded.prefixes,
                      excluded.error)


def run_lookup(ctx: AppContext, query: str, config: LookupConfig, category: str | None = None, *,
               tags: Mapping[str, Any] | None = None) -> LookupResult | None:
    """One recorded lookup through the core, its row carrying `tags` (e.g. the Compare page's side);
    bad input and store problems become in-page messages."""
    index = ctx.index(config.svd_dims)
    if index is None:
        return None
    return guarded(lambda: _recorded_lookup(ctx, index, query, config, category, tags))


def _recorded_lookup(ctx: AppContext, index: KnowledgeIndex, query: str, config: LookupConfig,
                     category: str | None, tags: Mapping[str, Any] | None) -> LookupResult:
    store = ctx.store
    recorder = store if store is None or not tags else (lambda call: store(replace(call, tags=dict(tags))))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = lookup_knowledge(query, index=index, config=config, category=category or None,
                                  recorder=combine_recorders(recorder, otel_recorder()))
        if ctx.store is not None:  # an analyst's lookup is in the table at once (record() only spools it)
            ctx.store.flush()
    for warning in caught:
        held = warning.message.holder if isinstance(warning.message, TraceStoreLockedWarning) else ""
        st.warning(held_message(held) if held else str(warning.message))
    if ctx.store is None:
        st.warning("This lookup was not recorded: the trace file could not be opened.")
    return result


def guarded(work: Callable[[], T]) -> T | None:
    """Run `work`; known failures become an st.error naming the cause instead of a traceback."""
    try:
        return work()
    except TraceStoreLocked as exc:  # an analyst's DuckDB shell holds the file: nothing is lost, say so
        st.warning(held_message(exc.holder))
    except (ValueError, KnowledgeBaseError, TraceStoreError, OSError, duckdb.Error) as exc:
        st.error(f"{_kind(exc)}: {wording.for_error(exc)}")  # a KeyError is a bug: it is not caught
    return None


def _kind(exc: Exception) -> str:
    if isinstance(exc, TraceStoreError):
        return "Trace store problem"
    if isinstance(exc, KnowledgeBaseError):
        return "Knowledge base problem"
    return "Cannot do that" if isinstance(exc, ValueError) else type(exc).__name__


def remember(ctx: AppContext) -> None:
    st.session_state["app_context"] = ctx


def current() -> AppContext:
    """The context app.py opened for this run (pages are only run through app.py's navigation)."""
    ctx = st.session_state.get("app_context")
    if ctx is None:
        st.error("Open the app with `streamlit run app.py`; pages cannot run on their own.")
        st.stop()
    return ctx


def sidebar_config(prefix: str = "cfg_", title: str = "Configuration") -> LookupConfig | None:
    """Every LookupConfig field in the sidebar (shared by Lookup and Compare), with a reset button."""
    with st.sidebar:
        st.subheader(title)
        st.button("Reset to defaults", key=f"{prefix}reset", on_click=reset_config, args=(prefix,))
        return config_widgets(prefix)


def build_stages(kb_path: str, svd_dims: int, exclude_paths: tuple[str, ...] = ()) -> dict[str, float]:
    """The seconds each stage of this index's build took (empty when it came from the on-disk cache)."""
    return dict(_index_slot(kb_path, svd_dims, exclude_paths).stage_seconds)


def index_caption(index: KnowledgeIndex, stages: dict[str, float] | None = None) -> None:
    summary = index.kb.summary()
    st.caption(f"Knowledge base `{summary['root']}`: {summary['entries']} entries · {summary['chunks']} chunks · "
               f"{len(summary['domains'])} domains · "
               + ("index from cache" if index.from_cache else f"indexed in {index.build_seconds:.1f}s")
               + (f" · excluding {', '.join(f'`{p}`' for p in summary['excluded_paths'])} "
                  f"({summary['files_excluded']} files)" if summary["excluded_paths"] else ""))
    if stages:
        st.caption("Build stages: " + build_bar.stage_summary(stages), help="Seconds per stage of the index build")
    if index.l1 is None:
        st.warning(f"L1 unavailable: {index.l1_unavailable_reason}")
    skipped = summary["skipped"]
    if skipped:
        st.warning(f"{len(skipped)} file(s) skipped: " + "; ".join(
            f"{s['path']} line {s['line']}: {s['message']}" for s in skipped))
