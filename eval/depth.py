"""Judged depth: the share of a question's top 10 that carries a judgement (Judged@10, trec_eval's `judged_10`).

A page carries a judgement for a question when the question's labels grade it, 0 included (a qrels row with
grade 0 is a judgement), or when an analyst's mark in the trace file's `judgement` table (eval.judgements; the
latest mark of the question's text and the page) grades it. The top 10 is the first 10 distinct ranked pages;
a ranking shorter than 10 is divided by 10 all the same, as trec_eval does. A run's figure is the mean over its
answerable questions. A low figure says the metrics treat many returned pages as not relevant only because
nobody looked at them: a comparison can flip once they are judged (eval.holes).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

DEPTH = 10
COLUMN = "judged_at_10"  # the eval_query column and the diagnostics key
UNJUDGED = "unjudged_at_10"  # a row's top-10 pages its labels do not grade (not stored: marks are added to it)


def top(ranked: Iterable[str], depth: int = DEPTH) -> list[str]:
    """The first `depth` distinct pages of a ranking (an id seen twice counts once, at its first position)."""
    return list(dict.fromkeys(str(s) for s in ranked))[:depth]


def judged_at(ranked: Iterable[str], judged: Collection[str], depth: int = DEPTH) -> float:
    """The share of the first `depth` distinct pages that are in `judged`, over `depth` (a short ranking too)."""
    return sum(1 for s in top(ranked, depth) if s in judged) / depth


def unjudged(ranked: Iterable[str], judged: Collection[str], depth: int = DEPTH) -> list[str]:
    """The first `depth` distinct pages that are not in `judged`, in rank order."""
    return [s for s in top(ranked, depth) if s not in judged]


def query_columns(ranked: Sequence[str], qrels: Mapping[str, float]) -> dict[str, Any]:
    """A question's Judged@10 from its labels, and the top-10 pages they leave unjudged (for the marks)."""
    return {COLUMN: judged_at(ranked, qrels), UNJUDGED: unjudged(ranked, qrels)}


def add_marks(rows: Iterable[dict[str, Any]], marks: Mapping[str, Mapping[str, float]]) -> None:
    """Count the analysts' marks too: `marks` is {query text: {page: grade}}; a row's top-10 page its labels
    leave unjudged but a mark on the row's query text grades is judged. Updates the rows in place."""
    for row in rows:
        open_pages = row.get(UNJUDGED)
        marked = marks.get(str(row.get("query", "")).strip()) or {}
        if not isinstance(open_pages, list) or row.get(COLUMN) is None or not marked:
            continue
        found = [s for s in open_pages if s in marked]
        if found:
            row[COLUMN] = (round(row[COLUMN] * DEPTH) + len(found)) / DEPTH
            row[UNJUDGED] = [s for s in open_pages if s not in marked]


def mean_judged(frame: pd.DataFrame) -> float | None:
    """A run's Judged@10: the mean over its questions that have the figure (None: none has, an old run)."""
    if COLUMN not in frame:
        return None
    values = pd.to_numeric(frame[COLUMN], errors="coerce").dropna()
    return round(float(values.mean()), 4) if len(values) else None


def judged_line(diagnostics: Mapping[str, Any]) -> str:
    """The summary's and the reports' line: `judged@10: 0.43 (the share of each question's top 10 …)`."""
    value = diagnostics.get(COLUMN)
    if value is None:
        return "judged@10: not measured (a run stored before it was)"
    return (f"judged@10: {value:.2f} (the share of each question's top 10 that its labels or an analyst's mark "
            "judge, 0 included; the rest count as not relevant, unseen)")
