"""The Trends page's choices and shapes, with no Streamlit calls: the span, bucket, grouping and highlighted window
an analyst picks, the figures each chart draws, the trends frame in long form for Altair, and the changes in
the order the page says them. Every figure comes from the core (retrieval.traces.trends, .changes, .gaps);
nothing here computes one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

import pandas as pd

from retrieval import TRACE_TABLE
from retrieval.traces import PRODUCTION_ROWS, parse_span

# the span the charts cover: a choice and the span text the core parses (retrieval.traces.filters.parse_span)
SPANS = {"Last 24 hours": "1d", "Last 7 days": "7d", "Last 30 days": "30d", "Last 90 days": "90d"}
DEFAULT_SPAN = "Last 30 days"
BUCKETS = ("hour", "day", "week")
DEFAULT_BUCKET = "day"
NO_GROUP = "(none)"
PER = {NO_GROUP: None, "host": "host", "category": "category", "knowledge base": "kb"}
# the highlighted window: the last day, week or two, or a range of days picked in a calendar
PICKED = "Pick a range of days"
WINDOWS = {"Last 24 hours": "1d", "Last 7 days": "7d", "Last 14 days": "14d", PICKED: None}
DEFAULT_WINDOW = "Last 7 days"
GROUPS_DRAWN = 6  # with a grouping, the charts draw the groups with the most lookups (a panel each)

# the charts: (title, figures drawn, kind, the y axis's title); kinds: "bars" (counts), "stacked" (shares adding
# to 1), "lines"
CHARTS = (("Lookups", ("lookups",), "bars", "lookups"),
          ("Relevance level (share of lookups with a level)", ("high_share", "medium_share", "low_share",
                                                              "none_share"), "stacked", "share"),
          ("Abstentions, empty results, L1 failures and fallbacks (share of lookups)",
           ("abstain_share", "empty_share", "l1_failed_share", "fallback_share"), "lines", "share"),
          ("Latency (ms)", ("p50_ms", "p95_ms"), "lines", "ms"),
          ("Mean confidence", ("mean_confidence",), "lines", "confidence"))

@dataclass(frozen=True)
class Window:
    """The highlighted window [start, end) in naive UTC, and its length as the span text the core takes."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if self.start >= self.end:
            raise ValueError(f"the window is empty: it starts {self.start:%Y-%m-%d %H:%M} and ends "
                             f"{self.end:%Y-%m-%d %H:%M} UTC; pick an end after the start")

    @property
    def span(self) -> str:
        """The window's length as the core's span text: whole days as `7d`, else hours (`36h`) or minutes."""
        seconds = int((self.end - self.start).total_seconds())
        for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
            if seconds % size == 0:
                return f"{seconds // size}{unit}"
        return f"{seconds / 60:g}m"

    def words(self) -> str:
        """'2026-01-05 14:00 – 2026-01-12 14:00 UTC (7 days)'."""
        days = (self.end - self.start) / timedelta(days=1)
        length = f"{days:g} day{'s' if days != 1 else ''}" if days >= 1 else \
            f"{(self.end - self.start) / timedelta(hours=1):g} hours"
        return f"{self.start:%Y-%m-%d %H:%M} – {self.end:%Y-%m-%d %H:%M} UTC ({length})"


def now_minute(now: datetime) -> datetime:
    """`now` (naive UTC) cut to the minute: the moment the page's windows end at, the same over a minute of reruns
    (so their reads stay cached)."""
    return now.replace(second=0, microsecond=0)


def window(choice: str, now: datetime, picked: Sequence[date] | None = None) -> Window:
    """The window a choice of WINDOWS names, ending at `now`; PICKED: the days `picked` (first and last, both whole
    days, UTC) — a ValueError naming what to pick when they are missing."""
    if choice not in WINDOWS:
        raise ValueError(f"the window is one of {', '.join(WINDOWS)}, got {choice!r}")
    span = WINDOWS[choice]
    if span is not None:
        return Window(now - parse_span(span, flag="window"), now)
    days = [d for d in (picked or ()) if d is not None]
    if len(days) != 2:
        raise ValueError("pick the first and the last day of the window in the calendar")
    first, last = sorted(days)
    return Window(datetime.combine(first, time()), datetime.combine(last + timedelta(days=1), time()))


def newest_production(store: Any) -> datetime | None:
    """The time of the newest production lookup in `store` (None: there is none), one aggregate on `created_at`."""
    frame = store.query(f"SELECT max(created_at) AS newest FROM {TRACE_TABLE} WHERE {PRODUCTION_ROWS}")
    value = frame["newest"][0]
    return None if value is None or pd.isna(value) else pd.Timestamp(value).to_pydatetime()


def since(span_choice: str, now: datetime) -> datetime:
    """The start of the charts' span (a choice of SPANS) counted back from `now`."""
    if span_choice not in SPANS:
        raise ValueError(f"the span is one of {', '.join(SPANS)}, got {span_choice!r}")
    return now - parse_span(SPANS[span_choice], flag="span")


def long_form(frame: pd.DataFrame, figures: Sequence[str], labels: dict[str, str], per: str | None,
              groups: Iterable[str] | None = None) -> pd.DataFrame:
    """`frame` (a row per bucket, and per group) as one row per bucket, group and figure: bucket, group, figure
    (its label), value; only `groups` when given. Buckets are UTC (tz-aware, so the browser draws them in UTC)."""
    present = [f for f in figures if f in frame.columns]
    keep = ["bucket", *([per] if per else [])]
    long = frame[keep + present].melt(id_vars=keep, value_vars=present, var_name="name", value_name="value")
    long["group"] = long[per].astype(str) if per else "all"
    if groups is not None:
        long = long[long["group"].isin(list(groups))]
    long["figure"] = long["name"].map(lambda name: labels.get(name, name))
    long["bucket"] = pd.to_datetime(long["bucket"]).dt.tz_localize("UTC")
    return long[["bucket", "group", "figure", "name", "value"]].reset_index(drop=True)


def top_groups(frame: pd.DataFrame, per: str | None, limit: int = GROUPS_DRAWN) -> list[str]:
    """The `limit` groups with the most lookups over the span (all of them without a grouping: ["all"])."""
    if not per or frame.empty:
        return ["all"]
    totals = frame.groupby(frame[per].astype(str))["lookups"].sum().sort_values(ascending=False, kind="stable")
    return [str(g) for g in totals.index[:limit]]


def ordered(figures: Iterable[Any]) -> list[Any]:
    """The changes' figures as the page says them: significant ones first, then by adjusted p (smallest
    first), figures without a test last, each group in the core's order."""
    def key(change: Any) -> tuple[int, float]:
        p = getattr(change, "p_adjusted", None)
        return (0 if change.significant else 1, float(p) if p is not None and p == p else 2.0)
    return sorted(figures, key=key)


def drivers_table(change: Any) -> pd.DataFrame:
    """A change's driving queries as a table: query, count before, count after."""
    return pd.DataFrame([{"query": q, "before": int(b), "after": int(a)} for q, b, a in change.drivers],
                        columns=["query", "before", "after"])


def gaps_words(gaps: Any) -> str:
    """'412 unanswered question(s) (180 distinct) in 4 topic(s); 12 in no topic'."""
    more = f"; {gaps.more_topics} smaller topic(s) not shown hold {gaps.more_questions:,}" if gaps.more_topics else ""
    return (f"{gaps.questions:,} unanswered question(s) ({gaps.distinct:,} distinct), {gaps.clustered:,} of them in "
            f"{len(gaps.topics) + gaps.more_topics} topic(s)" + more
            + (f"; {gaps.unclustered:,} in no topic" if gaps.unclustered else ""))


GAP_COLUMNS = ["topic", "terms", "questions", "distinct", "before", "trend", "examples", "nearest pages"]


def gaps_table(gaps: Any) -> pd.DataFrame:
    """The topics as the page's table: topic, terms, questions (asked in the window, repeats counted), distinct,
    before (the window before), trend, examples, nearest pages (title, source and score)."""
    return pd.DataFrame([{
        "topic": topic.label, "terms": ", ".join(topic.terms), "questions": int(topic.size),
        "distinct": int(topic.distinct), "before": int(topic.size_before), "trend": topic.trend_words,
        "examples": " · ".join(topic.examples),
        "nearest pages": " · ".join(f"{title} ({source}, {score:.2f})"
                                    for source, title, score in topic.nearest_pages),
    } for topic in gaps.topics], columns=GAP_COLUMNS)


def topic_questions(topic: Any) -> list[tuple[str, int]]:
    """A topic's questions and how often each was asked in the window, most asked first: all of them (up to the
    core's cap), or its most central ones where the core gives only those."""
    pairs = topic.questions or zip(topic.examples, topic.example_counts, strict=True)
    return sorted(((str(q), int(n)) for q, n in pairs), key=lambda pair: (-pair[1], pair[0]))


def common_term(topic: Any, questions: Sequence[str]) -> str | None:
    """The topic's term found (as text, any case) in the most of its questions, to filter the Traces page by; None
    when no term is found in any of them (a stem that is no word of theirs)."""
    lowered = [q.lower() for q in questions]
    found = [(sum(term.lower() in q for q in lowered), -n, term) for n, term in enumerate(topic.terms)]
    best = max(found, default=(0, 0, None))
    return best[2] if best[0] else None
