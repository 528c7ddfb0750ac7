"""Trends page: production lookups over time (lookups, relevance levels, abstentions and failures, latency,
confidence) with a picked window highlighted, what changed in that window, and the content gaps: the topics
of the questions the knowledge base did not answer. Every figure is the core's (retrieval.traces.trends,
.changes, .gaps), read in place and cached on the trace files' state."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import streamlit as st

from appui.data import file_facts
from appui.data import trends as data
from appui.panels import content_gaps, trend_changes
from appui.widgets import cached_reads, state, trend_charts, trend_reads
from retrieval.traces import FIGURES

CHARTS_TAB, CHANGES_TAB, GAPS_TAB = "Trends", "What changed", "Content gaps"


@dataclass(frozen=True)
class Picks:
    """What the analyst picked: the charts' span (from `since` to `until`), bucket, grouping and the window."""

    since: datetime
    until: datetime
    by: str
    per: str | None
    window: data.Window


def _pickers(now: datetime) -> Picks | None:
    """The span, bucket, grouping and window pickers (kept for the session, as the Traces page's filters)."""
    c1, c2, c3, c4 = st.columns(4)
    span = c1.selectbox("Span", list(data.SPANS), index=list(data.SPANS).index(data.DEFAULT_SPAN),
                        key="trn_span", persist_state="session", help="The charts cover this span, up to now")
    by = c2.selectbox("Bucket", data.BUCKETS, index=data.BUCKETS.index(data.DEFAULT_BUCKET), key="trn_by",
                      persist_state="session", help="Each point is an hour, a day or a week (UTC)")
    per = c3.selectbox("Per", list(data.PER), key="trn_per", persist_state="session",
                       help="A panel per host, category (the filter's applied category) or knowledge base")
    choice = c4.selectbox("Window", list(data.WINDOWS), index=list(data.WINDOWS).index(data.DEFAULT_WINDOW),
                          key="trn_window", persist_state="session",
                          help="Highlighted on the charts; What changed compares it with the window before it")
    picked = None
    if choice == data.PICKED:
        today = now.date()
        picked = st.date_input("Window's first and last day (UTC)", value=(today - timedelta(days=6), today),
                               max_value=today, key="trn_range", persist_state="session")
        picked = tuple(day for day in (picked if isinstance(picked, tuple) else (picked,)) if day is not None)
        if len(picked) < 2:  # the calendar's first click picks the first day only
            st.info("Pick the window's last day too (a range: first day, then last day).")
            return None
    window = state.guarded(lambda: data.window(choice, now, picked))
    if window is None:
        return None
    return Picks(data.since(span, now), now, by, data.PER[per], window)


def _charts(store: cached_reads.CachedReads, picks: Picks) -> bool:
    """The charts over the span; False (said on the page) when the span holds no production lookup."""
    trends = state.guarded(lambda: trend_reads.trends(store, since=picks.since, until=picks.until, by=picks.by,
                                                       per=picks.per))
    if trends is None:
        return False
    frame = trends.frame()
    if trends.empty_reason or frame.empty:
        st.info(f"No production lookups to chart: {trends.empty_reason or 'none in the span'}. Production lookups "
                "are the calls of the tool itself, not an evaluation run's; pick a longer span.")
        return False
    labels = {f.name: f.label for f in FIGURES}
    groups = data.top_groups(frame, picks.per)
    st.caption(f"{int(frame['lookups'].sum()):,} production lookups from {picks.since:%Y-%m-%d %H:%M} to "
               f"{picks.until:%Y-%m-%d %H:%M} UTC, per {picks.by}"
               + (f", a panel per {picks.per} (the {len(groups)} with the most lookups)" if picks.per else "")
               + f" · window {picks.window.words()} shaded")
    columns = st.columns(2)
    for n, (title, figures, kind, y_title) in enumerate(data.CHARTS):
        with columns[n % 2]:
            st.markdown(f"**{title}**")
            long = data.long_form(frame, figures, labels, picks.per, groups)
            share = all(name.endswith("_share") or name == "mean_confidence" for name in figures)
            st.altair_chart(trend_charts.chart(long, kind, picks.window, by=picks.by, groups=groups,
                                               y_title=y_title, share=share), key=f"trn_chart_{n}")
    return True


def _end(store: cached_reads.CachedReads, now: datetime) -> datetime | None:
    """Where the charts and windows end: now, or, when the longest span back from now holds no production lookup,
    the minute after the newest one (said on the page); None (said) when the file holds none at all."""
    newest = state.guarded(lambda: data.newest_production(store))
    if newest is None:
        st.info("No production lookups in this trace file: it holds only evaluation runs' lookups (or other "
                "tools' calls). Production lookups are the tool's own calls (the MCP server's, the CLI's, this "
                "app's Lookup page's).")
        return None
    if newest >= data.since(list(data.SPANS)[-1], now):
        return now
    end = data.now_minute(newest) + timedelta(minutes=1)
    st.info(f"No production lookups in the last {list(data.SPANS)[-1].lower().removeprefix('last ')}: the newest "
            f"was at {newest:%Y-%m-%d %H:%M} UTC, so the charts and the window end at {end:%Y-%m-%d %H:%M} UTC "
            "instead of now.")
    return end


def render() -> None:
    ctx = state.current()
    st.title("Trends")
    store = cached_reads.cached(ctx.store)
    if store is None:
        st.info("Trends read the trace file, which could not be opened (said above).")
        return
    facts = state.guarded(lambda: file_facts.file_facts(store))
    if facts is None:
        return
    if facts.rows == 0:
        st.info(f"No traces yet in `{facts.path.name}`: the tool's lookups (the MCP server's, the CLI's, this app's "
                "Lookup page's) are recorded there, and their trends show here.")
        return
    st.caption(f"Trace file {facts.words()} · production lookups only (no evaluation run)")
    now = _end(store, data.now_minute(datetime.now(timezone.utc).replace(tzinfo=None)))
    if now is None:
        return
    picks = _pickers(now)
    if picks is None:
        return
    st.session_state["trends_picks"] = picks  # what the page shows, said once (the tests read it too)
    # lazy tabs: only the open one computes (the charts, the tests of What changed and the clustering of Content
    # gaps each take up to a second or more on a month of lookups; together they would pass the 2 s a page may take)
    charts_tab, changes_tab, gaps_tab = st.tabs([CHARTS_TAB, CHANGES_TAB, GAPS_TAB], key="trn_tab",
                                                on_change="rerun")
    if charts_tab.open is not False:
        with charts_tab:
            _charts(store, picks)
    if changes_tab.open:
        with changes_tab:
            trend_changes.render(ctx, store, picks.window)
    if gaps_tab.open:
        with gaps_tab:
            content_gaps.render(ctx, store, picks.window)

if __name__ == "__main__":
    render()
