"""Content gaps: the production questions the knowledge base did not answer in a window, grouped into topics.

`content_gaps(path, index, window="7d")` reads the unanswered production lookups of [until - window, until) and
of the window before (abstained, or relevance graded low or none; one SQL query returning only their query, time
and id), counts each normalised question's repeats, embeds the distinct questions in the base's own L1 space
and clusters them (retrieval/traces/gaps_cluster.py). Each topic is named by its distinctive terms and comes with
its size, its trend against the window before, its most central questions and the base's nearest pages: "the
base has X, but not Y". docs/traces.md (Content gaps) describes each step and its limits.
"""

from __future__ import annotations

import html
import math
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval.traces import gaps_cluster
from retrieval.traces import reader as trace_reader
from retrieval.traces.changes import ReportSection
from retrieval.traces.figures import PRODUCTION
from retrieval.traces.filters import parse_since, parse_span, utc_naive, utc_now
from retrieval.traces.schema import TABLE

if TYPE_CHECKING:
    from retrieval.index.build import KnowledgeIndex
    from retrieval.traces.reader import Target

UNANSWERED = "(abstained OR relevance_level IN ('low', 'none'))"  # schema v16's columns, never the JSON
DEFINITION = "abstained, or relevance graded low or none, in production lookups, not evaluation runs"
MAX_TOPICS = 20
QUESTIONS = 200  # a topic's distinct questions kept for the drill-down, most asked first
EXAMPLES = 5
IDS = 20  # invocation ids kept per topic (this window's, most central questions first): the app's drill-down
GROWTH = 1.5  # a topic grew (fell) when it is at least this many times its size before (at most 1/GROWTH of it)


@dataclass(frozen=True)
class NearestPage:
    """A page of the knowledge base near a topic: its source, title and LSA cosine with the topic's centroid."""

    source: str
    title: str
    score: float

    def __iter__(self):  # a (source, title, score) tuple where one is expected
        return iter((self.source, self.title, self.score))


@dataclass(frozen=True)
class GapTopic:
    """One topic of unanswered questions: named by its terms, `size` questions asked in the window (repeats
    counted; `distinct` texts), `size_before` in the window before, its most central questions, the base's
    nearest pages, and a sample of its rows' invocation ids (this window's)."""

    label: str
    terms: tuple[str, ...]
    size: int
    distinct: int
    size_before: int
    trend_words: str
    examples: tuple[str, ...]
    example_counts: tuple[int, ...]
    nearest_pages: tuple[NearestPage, ...]
    invocation_ids: tuple[str, ...]
    # every distinct question of the window (as most often asked) with its count, most asked first (the drill-down)
    questions: tuple[tuple[str, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "terms": list(self.terms), "size": self.size, "distinct": self.distinct,
                "size_before": self.size_before, "trend": self.trend_words,
                "examples": [{"question": q, "count": c} for q, c in zip(self.examples, self.example_counts,
                                                                         strict=True)],
                "nearest_pages": [{"source": p.source, "title": p.title, "score": round(p.score, 4)}
                                  for p in self.nearest_pages],
                "invocation_ids": list(self.invocation_ids)}


@dataclass(frozen=True)
class ContentGaps:
    """The unanswered questions of [since, until) grouped into topics (largest first, at most `max_topics`
    shown; `more_topics` others hold `more_questions`). `questions` counts every unanswered question (repeats
    included), `clustered` those in a topic and `unclustered` those in none; `empty_reason` says why there is
    nothing to group, when there is not."""

    since: datetime
    until: datetime
    window: timedelta
    questions: int
    distinct: int
    clustered: int
    unclustered: int
    questions_before: int
    topics: tuple[GapTopic, ...]
    more_topics: int = 0
    more_questions: int = 0
    kb: str = ""
    empty_reason: str = ""
    parameters: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"since": self.since.isoformat(), "until": self.until.isoformat(), "window": window_words(self.window),
                "definition": DEFINITION, "kb": self.kb, "questions": self.questions, "distinct": self.distinct,
                "clustered": self.clustered, "unclustered": self.unclustered,
                "questions_before": self.questions_before, "topics": [t.to_dict() for t in self.topics],
                "more_topics": self.more_topics, "more_questions": self.more_questions,
                "empty_reason": self.empty_reason or None, "parameters": dict(self.parameters)}

    def to_markdown(self) -> str:
        """The report as Markdown: the counts, a table of topics, then each topic's terms, examples and pages."""
        return as_markdown(self)

    def to_html(self) -> str:
        """The report as an HTML fragment (every text escaped)."""
        return as_html(self)

    def as_section(self) -> ReportSection:
        """The report as a section of the changes report (`Changes.with_sections`)."""
        return ReportSection("Content gaps", as_markdown(self, level=3), as_html(self, level=3), self.to_dict())


def content_gaps(path: Target, index: KnowledgeIndex, *, window: timedelta | str,
                 until: datetime | str | None = None, max_topics: int = MAX_TOPICS) -> ContentGaps:
    """The content gaps of the trace file(s) at `path` over `window` (a timedelta or a span such as "7d") ending
    at `until` (default: now, UTC), against the base `index` (its L1 vectors embed the questions). Bad input is
    a ValueError naming what was wrong."""
    span = parse_span(window, flag="--window") if isinstance(window, str) else window
    if not isinstance(span, timedelta) or span <= timedelta(0):
        raise ValueError(f"--window takes a span longer than 0, got {window!r}")
    end = utc_now() if until is None else parse_since(until, flag="--until") if isinstance(until, str) \
        else utc_naive(until)
    if isinstance(max_topics, bool) or not isinstance(max_topics, int) or max_topics < 1:
        raise ValueError(f"--max-topics takes a whole number of at least 1, got {max_topics!r}")
    l1 = index.l1
    if l1 is None:
        raise ValueError(f"the knowledge base {index.kb.root} has no L1 index ({index.l1_unavailable_reason}); "
                         "content gaps embed questions with its vectors")
    since, before = end - span, end - 2 * span
    frame = trace_reader.query(path, f"SELECT query, created_at, id FROM {TABLE} WHERE created_at >= ? AND "
                                     f"created_at < ? AND {PRODUCTION} AND {UNANSWERED}", [before, end])
    now_rows = frame["created_at"] >= since
    base = dict(since=since, until=end, window=span, kb=str(index.kb.root))
    if not now_rows.any():
        return ContentGaps(**base, questions=0, distinct=0, clustered=0, unclustered=0,
                           questions_before=int((~now_rows).sum()), topics=(),
                           empty_reason=_empty_reason(path, since, end))
    asked = distinct_questions(frame, now_rows.to_numpy())
    matrix, lsa = gaps_cluster.vectors(l1, asked.texts, asked.now + asked.before)
    total = int(asked.now.sum())
    min_size = max(gaps_cluster.MIN_SIZE, math.ceil(gaps_cluster.MIN_SHARE * total))
    clusters = gaps_cluster.cluster(matrix, lsa, asked.now, asked.now > 0, min_size)
    n_topics = clusters.lsa_centroids.shape[0]
    terms = gaps_cluster.topic_terms(asked.texts, asked.now, clusters.labels, n_topics)
    pages = gaps_cluster.nearest_pages(l1, clusters.lsa_centroids[:max_topics])
    topics = tuple(_topic(index, asked, clusters, t, terms[t], pages[t]) for t in range(min(n_topics, max_topics)))
    sizes = np.bincount(clusters.labels[clusters.labels >= 0], weights=asked.now[clusters.labels >= 0],
                        minlength=n_topics)
    clustered = int(sizes.sum())
    parameters = (("k", clusters.k), ("merged", clusters.merged), ("min_size", min_size),
                  ("lsa_share", gaps_cluster.LSA_SHARE), ("unknown_boost", gaps_cluster.UNKNOWN_BOOST),
                  ("merge_distance", gaps_cluster.MERGE_DISTANCE), ("member_min", gaps_cluster.MEMBER_MIN),
                  ("random_state", gaps_cluster.RANDOM_STATE))
    return ContentGaps(**base, questions=total, distinct=int((asked.now > 0).sum()), clustered=clustered,
                       unclustered=total - clustered, questions_before=int(asked.before.sum()), topics=topics,
                       more_topics=max(n_topics - max_topics, 0), more_questions=int(sizes[max_topics:].sum()),
                       parameters=parameters)


@dataclass(frozen=True, eq=False)
class Asked:
    """The distinct questions (by normalised text): a text to show (the form asked most), how often each was
    asked in the window and in the window before, and the window's invocation ids of each, newest first."""

    texts: list[str]
    now: np.ndarray
    before: np.ndarray
    ids: list[list[str]]


def normalised(text: str) -> str:
    """A question's text as repeats are counted: NFKC, case-folded, whitespace collapsed, end punctuation gone."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).rstrip(" ?!.")


def distinct_questions(frame, now_rows: np.ndarray) -> Asked:
    """`frame` (query, created_at, id) grouped by normalised question, newest first: one pass over the rows."""
    order = frame.reset_index(drop=True).sort_values(["created_at", "id"], ascending=False).index.to_numpy()
    queries, ids, now_flags = frame["query"].to_numpy()[order], frame["id"].to_numpy()[order], now_rows[order]
    position: dict[str, int] = {}
    forms: list[dict[str, int]] = []
    now: list[int] = []
    before: list[int] = []
    kept: list[list[str]] = []
    for query, invocation, is_now in zip(queries.tolist(), ids.tolist(), now_flags.tolist(), strict=True):
        key = normalised(query)
        at = position.get(key)
        if at is None:
            at = position[key] = len(forms)
            forms.append({})
            now.append(0)
            before.append(0)
            kept.append([])
        forms[at][query] = forms[at].get(query, 0) + 1
        if is_now:
            now[at] += 1
            if len(kept[at]) < IDS:
                kept[at].append(invocation)
        else:
            before[at] += 1
    shown = [max(seen, key=lambda q, seen=seen: (seen[q], q)) for seen in forms]  # the form asked most
    return Asked(shown, np.asarray(now, dtype=np.float64), np.asarray(before, dtype=np.float64), kept)


def _topic(index: KnowledgeIndex, asked: Asked, clusters: gaps_cluster.Clusters, topic: int, terms: tuple[str, ...],
           pages: list[tuple[int, float]]) -> GapTopic:
    members = np.flatnonzero((clusters.labels == topic) & (asked.now > 0))
    central = members[np.lexsort((members, -asked.now[members], -clusters.cosines[members]))]
    size = int(asked.now[members].sum())
    size_before = int(asked.before[clusters.labels == topic].sum())
    ids = [i for m in central.tolist() for i in asked.ids[m]][:IDS]
    nearest = []
    for page, score in pages:
        source = index.l1.page_sources[page]
        entry = index.kb.entry(source)
        nearest.append(NearestPage(source, entry.title if entry is not None else source, score))
    return GapTopic(" · ".join(terms[:3]), terms, size, int(members.size), size_before, trend_words(size, size_before),
                    tuple(asked.texts[m] for m in central[:EXAMPLES]),
                    tuple(int(asked.now[m]) for m in central[:EXAMPLES]), tuple(nearest), tuple(ids),
                    tuple(sorted(((asked.texts[m], int(asked.now[m])) for m in members.tolist()),
                                 key=lambda pair: (-pair[1], pair[0]))[:QUESTIONS]))


def trend_words(now: int, before: int) -> str:
    """A topic's size in this window against the one before, in words."""
    if before == 0:
        return "new this window"
    if now >= GROWTH * before:
        return f"grew from {before} to {now}"
    if now * GROWTH <= before:
        return f"fell from {before} to {now}"
    return f"steady ({before} before, {now} now)"


def window_words(span: timedelta) -> str:
    """`7 days`, `12 hours`, `90 minutes`: a window's length as a reader says it."""
    seconds = span.total_seconds()
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds:g} seconds"


def _empty_reason(path: Target, since: datetime, until: datetime) -> str:
    """Why a window has nothing to group: no production lookup at all, or none unanswered."""
    frame = trace_reader.query(path, f"SELECT count(*) AS n FROM {TABLE} WHERE created_at >= ? AND created_at < ? "
                                     f"AND {PRODUCTION}", [since, until])
    lookups = int(frame["n"].iloc[0])
    if lookups == 0:
        return "no production lookups in the window"
    return (f"no unanswered questions: all {lookups} production lookup{'s' if lookups != 1 else ''} in the window "
            "were answered (relevance high or medium)")


# ---- the report as a reader sees it: Markdown (the weekly report, the changes report's section) and HTML ----

def summary(gaps: ContentGaps) -> str:
    """The counts in one sentence."""
    span = (f"{window_words(gaps.window)} from {gaps.since:%Y-%m-%d %H:%M} to {gaps.until:%Y-%m-%d %H:%M} UTC")
    if gaps.empty_reason:
        return f"{span}: {gaps.empty_reason}."
    more = (f"; {gaps.more_topics} smaller topic{'s' if gaps.more_topics != 1 else ''} ({gaps.more_questions} "
            "questions) not shown") if gaps.more_topics else ""
    return (f"{span}: {gaps.questions} unanswered question{'s' if gaps.questions != 1 else ''} ({DEFINITION}), "
            f"{gaps.distinct} distinct; {gaps.clustered} grouped into {len(gaps.topics) + gaps.more_topics} "
            f"topic{'s' if len(gaps.topics) + gaps.more_topics != 1 else ''}, {gaps.unclustered} in no topic{more}. "
            f"The {window_words(gaps.window)} before: {gaps.questions_before} unanswered.")


def _pages_text(topic: GapTopic) -> str:
    return ", ".join(f"{p.title} ({p.source}, {p.score:.2f})" for p in topic.nearest_pages) or "none"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def as_markdown(gaps: ContentGaps, level: int = 2) -> str:
    """The report as Markdown, its heading at `level` (2; 3 inside the changes report)."""
    head = "#" * level
    lines = [f"{head} Content gaps", "", summary(gaps)]
    if not gaps.topics:
        return "\n".join(lines) + "\n"
    lines += ["", "| # | Topic | Questions | Trend | Nearest pages the base has |", "|---|---|---|---|---|"]
    for n, topic in enumerate(gaps.topics, 1):
        lines.append(f"| {n} | {_cell(topic.label)} | {topic.size} ({topic.distinct} distinct) | "
                     f"{_cell(topic.trend_words)} | {_cell(_pages_text(topic))} |")
    for n, topic in enumerate(gaps.topics, 1):
        lines += ["", f"{head}# {n}. {topic.label}", "",
                  f"Terms: {', '.join(topic.terms)}. {topic.size} questions, {topic.trend_words}.", "",
                  "Questions:"]
        lines += [f"- {question} (×{count})" for question, count in zip(topic.examples, topic.example_counts,
                                                                        strict=True)]
        lines += ["", f"Nearest pages the base has: {_pages_text(topic)}."]
    return "\n".join(lines) + "\n"


def as_html(gaps: ContentGaps, level: int = 2) -> str:
    """The report as an HTML fragment, its heading at `level`; every text from the traces or the base escaped."""
    e = html.escape
    parts = [f"<section class=\"content-gaps\"><h{level}>Content gaps</h{level}>", f"<p>{e(summary(gaps))}</p>"]
    if gaps.topics:
        parts.append("<table><thead><tr><th>#</th><th>Topic</th><th>Questions</th><th>Trend</th>"
                     "<th>Nearest pages the base has</th><th>Example questions</th></tr></thead><tbody>")
        for n, topic in enumerate(gaps.topics, 1):
            pages = "<br>".join(f"{e(p.title)} <code>{e(p.source)}</code> {p.score:.2f}"
                                for p in topic.nearest_pages) or "none"
            examples = "".join(f"<li>{e(q)} (×{c})</li>" for q, c in zip(topic.examples, topic.example_counts,
                                                                         strict=True))
            parts.append(f"<tr><td>{n}</td><td><strong>{e(topic.label)}</strong><br><small>"
                         f"{e(', '.join(topic.terms))}</small></td><td>{topic.size} ({topic.distinct} distinct)</td>"
                         f"<td>{e(topic.trend_words)}</td><td>{pages}</td><td><ul>{examples}</ul></td></tr>")
        parts.append("</tbody></table>")
    parts.append("</section>")
    return "\n".join(parts) + "\n"
