"""Runs scored against the trace file's judgements, scored again whenever they are read.

A saved replay of interactive lookups and its `recorded-…` run (dataset kind `replay`, eval.replays) have no
labels of their own: their labels are the judgements analysts make in the app, which change after the save.
So their label-dependent figures are never frozen: eval.storage's readers (a run's row, its per-query
frame, the run list) score them again from their lookups' ranked sources (`eval_query.invocation_id` →
`tool_invocation.retrieval_details`) and the judgements as they are now (the latest mark of each query and
source), through the same `score` the save used. A mark made, changed or cleared after the save shows at
the next read, whichever page or process made it. The rows stored at save time keep the figures of that
moment. A judged page's categories (filter precision and harm, the true category) come from the map the
save stored (`dataset_info["source_domains"]`: every page the lookups returned or analysts had judged);
a page judged later that neither lookup returned counts as uncategorised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from retrieval import KnowledgeIndex, TraceStore
from retrieval.export import json_object

from . import depth, judgements
from . import metrics as metric_lib
from .abstention import answerability_summary
from .datasets import Query
from .defaults import LOOKUP
from .diagnostics import DomainsOf, summarize
from .scoring import metric_means, query_facts
from .ties import ties_summary

KIND = "replay"  # the dataset kind of a run whose labels are the trace file's judgements
NOT_GRADED = ("a replay's labels are judgements of returned pages, which cannot say that a question has no "
              "answer")


@dataclass(frozen=True)
class Lookup:
    """One lookup of a replay or of the calls it replayed: the query id it is paired on, and what it returned."""

    query_id: str
    query: str
    invocation_id: str
    latency_ms: float
    details: Mapping[str, Any]

    @property
    def ranked(self) -> list[str]:
        return list(self.details.get("evidence_sources") or [e["source"] for e in self.details.get("evidence") or []])


@dataclass(frozen=True, eq=False)
class Scored:
    """A run's lookups scored: per-query rows, long-form metrics, mean metrics, diagnostics, labelled queries."""

    per_query: pd.DataFrame
    metric_frame: pd.DataFrame
    metrics: dict[str, float]
    diagnostics: dict[str, Any]
    labelled: int


def is_judged(kind: Any) -> bool:
    """Whether a run of this dataset kind is scored against the trace file's judgements."""
    return kind == KIND


def judged_qrels(store: TraceStore) -> dict[str, dict[str, float]]:
    """The trace file's judgements as qrels by query text: the latest mark of each query and source, if it is
    a grade (a mark that no longer counts as one, such as a cleared one, drops out)."""
    qrels: dict[str, dict[str, float]] = {}
    for row in judgements.latest(store).itertuples(index=False):
        if not pd.isna(row.grade) and int(row.grade) in judgements.GRADES:
            qrels.setdefault(str(row.query).strip(), {})[str(row.source)] = float(row.grade)
    return qrels


def judged_query(lookup: Lookup, qrels: Mapping[str, Mapping[str, float]]) -> Query | None:
    """The lookup's query labelled by the judgements of its text, or None when nobody judged it."""
    found = qrels.get(lookup.query.strip())
    return Query(lookup.query_id, lookup.query, dict(found)) if found else None


def version(store: TraceStore) -> str:
    """A short fingerprint of the judgement table: it changes whenever a mark is added or removed, so a cache
    of judged runs' figures can be keyed on it."""
    row = store.query("SELECT count(*) AS n, max(created_at) AS last, bit_xor(hash(query, source, grade, "
                      "created_at)) AS h FROM judgement").iloc[0]
    return f"{row['n']}:{row['last']}:{row['h']}"


def source_domains(sources: Iterable[str], index: KnowledgeIndex) -> dict[str, list[str]]:
    """The categories of every page of `sources` the knowledge base holds, for scoring without the index."""
    found = {}
    for source in dict.fromkeys(sources):
        entry = index.kb.entry(source)
        if entry is not None:
            found[source] = list(entry.domains)
    return found


def score(run_id: str, lookups: Sequence[Lookup], label: Callable[[Lookup], Query | None], domains_of: DomainsOf,
          metric_names: Sequence[str], oracle: Mapping[str, Any], *, grade_unanswerable: bool = False,
          marks: Mapping[str, Mapping[str, float]] | None = None) -> Scored:
    """Score `lookups` against `label(lookup)` (None: unlabelled, every metric 0): the one scoring of a saved
    replay, at save and on every read of a judged run. With `grade_unanswerable` (a replay of a labelled run),
    a label with no relevant page is an unanswerable question, graded and never ranked, as in the run. `marks`
    (eval.judged.judged_qrels) count as judgements in Judged@10 besides the labels (eval.depth)."""
    parsed = metric_lib.parse_metrics(metric_names)
    rows, metric_rows, labelled = [], [], 0
    for position, lookup in enumerate(lookups):
        found = label(lookup)
        unanswerable = grade_unanswerable and found is not None and not found.answerable
        found = found or Query(lookup.query_id, lookup.query, {})
        labelled += bool(found.qrels)
        query = Query(lookup.query_id, lookup.query, found.qrels, found.categories, found.categories_labelled,
                      found.origin, found.facets)
        row = query_facts(query, position, lookup.invocation_id, lookup.ranked, lookup.details, lookup.latency_ms,
                          domains_of, parsed)
        # unjudged is not unanswerable: only a labelled run's unanswerable questions are graded apart
        rows.append({**row, "run_id": run_id, "answerable": not unanswerable if grade_unanswerable else None})
        if not unanswerable:
            metric_rows.extend((run_id, lookup.query_id, LOOKUP, name, value)
                               for name, value in metric_lib.score(lookup.ranked, query.qrels, parsed).items())
    depth.add_marks(rows, marks or {})
    per_query = pd.DataFrame(rows)
    metric_frame = pd.DataFrame(metric_rows, columns=["run_id", "query_id", "system", "metric", "value"])
    ranked = per_query[per_query["answerable"].astype("boolean").fillna(True).astype(bool)] if rows else per_query
    graded = answerability_summary(per_query) if grade_unanswerable else {"skipped": NOT_GRADED}
    means = metric_means(metric_frame, LOOKUP, parsed)
    diagnostics = {**summarize(ranked), "oracle": dict(oracle), "answerability": graded,
                   "ties": ties_summary(list(ranked["tie_ranges"]) if rows else [], means),
                   depth.COLUMN: depth.mean_judged(ranked)}
    return Scored(per_query, metric_frame, means, diagnostics, labelled)


def rescore(store: TraceStore, row: Mapping[str, Any], queries: pd.DataFrame) -> Scored:
    """A judged run scored again against the judgements as they are now: `row` is its stored `eval_run` row
    (JSON decoded), `queries` its stored `eval_query` rows in order."""
    details = store.query("SELECT id, retrieval_details FROM tool_invocation WHERE id IN (SELECT invocation_id "
                          "FROM eval_query WHERE run_id = ?)", [row["run_id"]])
    by_id = {str(i): json_object(d) for i, d in zip(details["id"], details["retrieval_details"], strict=True)}
    lookups = []
    for q in queries.itertuples(index=False):
        stored = by_id.get(str(q.invocation_id))
        if stored is None:  # the lookup's trace row is gone: its stored top sources are all that is left
            stored = {"evidence_sources": list(q.top_sources) if isinstance(q.top_sources, list) else []}
        lookups.append(Lookup(str(q.query_id), str(q.query), str(q.invocation_id),
                              float(q.latency_ms or 0.0), stored))
    info = row.get("dataset_info") or {}
    domains = {s: tuple(d) for s, d in (info.get("source_domains") or {}).items()}
    qrels = judged_qrels(store)
    return score(str(row["run_id"]), lookups, lambda lookup: judged_query(lookup, qrels),
                 lambda source: domains.get(source, ()), row.get("metric_names") or [],
                 (row.get("diagnostics") or {}).get("oracle") or {})
