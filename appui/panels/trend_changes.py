"""The Trends page's "What changed": the picked window against the window of the same length before it, as the
core's changes report says it (retrieval.traces.changes), significant changes first with the queries that drive
them, and the report (Markdown or HTML, with the content gaps) to download."""

from __future__ import annotations

from functools import partial

import streamlit as st

from appui.data import trends as data
from appui.widgets import cached_reads, state, trend_reads
from retrieval import LookupConfig
from retrieval.traces import FIGURES


def render(ctx: state.AppContext, store: cached_reads.CachedReads, window: data.Window) -> None:
    """What changed in `window` (ending at its end) against the window before it, and the report's downloads."""
    st.subheader(f"What changed: {window.words()}")
    changes = state.guarded(lambda: trend_reads.changes(store, window=window.span, until=window.end))
    if changes is None:
        return
    if changes.empty_reason:
        st.info(f"Nothing to compare: {changes.empty_reason}.")
        return
    figures = data.ordered(changes.figures)
    significant = [c for c in figures if c.significant]
    st.caption(f"{changes.lookups_after:,} production lookups in {changes.window_words()} "
               f"({changes.lookups_before:,}): {len(significant)} of {changes.tested()} figures tested changed "
               f"significantly at {changes.level:g}, the p-values corrected for the number of figures (Holm). "
               "Shares: two-proportion z-test; p50 and p95: Mood's quantile test; mean confidence: Welch's t-test.")
    if not significant:
        st.info("No figure changed significantly in this window.")
    labels = {figure.name: figure.label for figure in FIGURES}
    for n, change in enumerate(significant):
        st.markdown(f"- **{change.words}**")
        if change.drivers:
            with st.expander(f"The queries driving the change in {labels.get(change.name, change.name)}"):
                st.dataframe(data.drivers_table(change), hide_index=True, key=f"trn_drivers_{n}")
    rest = [c for c in figures if not c.significant]
    if rest:
        with st.expander(f"The other {len(rest)} figure(s): no significant change"):
            st.markdown("\n".join(f"- {change.words}" for change in rest))
    _downloads(ctx, store, changes, window)


def _downloads(ctx: state.AppContext, store: cached_reads.CachedReads, changes: object,
               window: data.Window) -> None:
    """The changes report as Markdown or HTML, built when clicked, with the content gaps of the sidebar's base."""
    with_gaps = st.checkbox("Add the content gaps (the sidebar's knowledge base) to the report", value=True,
                            key="trn_report_gaps")
    index = ctx.index(LookupConfig().svd_dims) if with_gaps else None
    stamp = f"{window.end:%Y-%m-%d}"
    left, right = st.columns(2)
    build = partial(trend_reads.report, store.store, changes, index, window)
    left.download_button("Download the report (Markdown)", partial(build, "markdown"), file_name=f"changes-{stamp}.md",
                         mime="text/markdown", key="trn_report_md")
    right.download_button("Download the report (HTML)", partial(build, "html"), file_name=f"changes-{stamp}.html",
                          mime="text/html", key="trn_report_html")
