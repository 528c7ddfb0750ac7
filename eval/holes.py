"""The judging queue of a comparison: the unjudged pages that a change of settings brought into a top 10.

For the questions whose top 10 differs between runs A and B (paired by query id, as eval.compare pairs them),
every page in either top 10 that carries no judgement — neither a label (eval.run_labels; grade 0 included)
nor an analyst's mark on the question's text (the latest mark, eval.judgements) — with its rank in A and in B.
Such a page counts as not relevant in both runs' metrics only because nobody looked at it; judging the queue
and scoring again (eval.what_if) says whether the comparison's conclusions hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from retrieval import TraceStore

from . import depth, judged
from .reading import one_read
from .run_labels import run_labels
from .storage import load_per_query, load_run_row

COLUMNS = ["query_id", "query", "source", "rank_a", "rank_b", "invocation_id"]


@dataclass(frozen=True)
class Hole:
    """One unjudged page of a changed top 10: its question, its rank in A and in B (None: not in that top 10),
    and the lookup a mark on it is made on (B's when B returned it, else A's)."""

    query_id: str
    query: str
    source: str
    rank_a: int | None
    rank_b: int | None
    invocation_id: str | None


@dataclass(frozen=True, eq=False)
class JudgingQueue:
    """The holes of comparing `run_a` with `run_b`: how many paired questions, how many changed their top 10,
    the unjudged pages in those top 10s (question by question, B's order first), where the labels came from, and
    (`labels_warning`) why they are only the run's stored relevant pages, when they are: to show as a warning."""

    run_a: str
    run_b: str
    paired: int
    changed: int
    holes: tuple[Hole, ...]
    labels: str
    labels_warning: str = ""  # the labels fell back to the stored relevant pages at grade 1: why (eval.run_labels)

    def frame(self) -> pd.DataFrame:
        """The holes as a table, one row per page (COLUMNS)."""
        return pd.DataFrame([h.__dict__ for h in self.holes], columns=COLUMNS)

    def by_query(self) -> dict[str, list[Hole]]:
        """The holes grouped by question (query id), in queue order."""
        grouped: dict[str, list[Hole]] = {}
        for hole in self.holes:
            grouped.setdefault(hole.query_id, []).append(hole)
        return grouped

    def sentence(self) -> str:
        """What the queue holds, in words."""
        return (f"{self.changed} of {self.paired} paired question(s) changed their top {depth.DEPTH}; "
                f"{len(self.holes)} page(s) in those top {depth.DEPTH}s carry no judgement "
                f"(labels: {self.labels})")


@one_read
def judging_queue(store: TraceStore, run_a: str, run_b: str) -> JudgingQueue:
    """The judging queue of runs `run_a` and `run_b` (ids or unique prefixes) with the marks as they are now."""
    row_a, row_b = load_run_row(store, run_a), load_run_row(store, run_b)
    frame_a, frame_b = load_per_query(store, row_a["run_id"]), load_per_query(store, row_b["run_id"])
    labels = run_labels(row_a, frame_a, store)
    marks = judged.judged_qrels(store)
    paired = frame_a.merge(frame_b, on="query_id", suffixes=("_a", "_b"))
    holes, changed = [], 0
    for row in paired.itertuples(index=False):
        top_a, top_b = (depth.top(t if isinstance(t, list) else []) for t in (row.top_sources_a, row.top_sources_b))
        if top_a == top_b:
            continue
        changed += 1
        text = str(row.query_a)
        known = {**labels.qrels.get(str(row.query_id), {}), **marks.get(text.strip(), {})}
        holes.extend(_holes(str(row.query_id), text, top_a, top_b, known,
                            (_text(row.invocation_id_a), _text(row.invocation_id_b))))
    return JudgingQueue(row_a["run_id"], row_b["run_id"], len(paired), changed, tuple(holes), labels.source,
                        labels.warning)


def _holes(query_id: str, query: str, top_a: list[str], top_b: list[str], known: Mapping[str, float],
           invocations: tuple[str | None, str | None]) -> list[Hole]:
    """The pages of either top 10 that `known` does not judge, B's order first, then A's."""
    rank_a = {s: i for i, s in enumerate(top_a, start=1)}
    rank_b = {s: i for i, s in enumerate(top_b, start=1)}
    pages = [s for s in dict.fromkeys([*top_b, *top_a]) if s not in known]
    return [Hole(query_id, query, s, rank_a.get(s), rank_b.get(s), invocations[1] if s in rank_b else invocations[0])
            for s in pages]


def _text(value: object) -> str | None:
    return str(value) if isinstance(value, str) and value else None
