"""Scoring one run's lookups: a row per question, metric means, the BM25 baseline's rows, the oracle's diagnostics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from retrieval import (
    KnowledgeIndex,
)

from . import depth
from . import metrics as metric_lib
from . import oracle as oracle_lib
from .abstention import OWN_SET, graded
from .baseline import NAME as BASELINE
from .baseline import BM25Baseline
from .datasets import Query
from .diagnostics import DomainsOf, query_diagnostics
from .ties import tie_ranges


def oracle_diagnostics(enabled: bool, metric_frame: pd.DataFrame, means: dict[str, float],
                        categories: Mapping[str, str | None], parsed: Sequence[metric_lib.Metric]) -> dict[str, Any]:
    if not enabled:
        return oracle_lib.skipped("switched off (--no-oracle)")
    if not any(categories.values()):
        return oracle_lib.skipped("no query has a category (neither in its labels nor on a relevant page)")
    return oracle_lib.oracle_summary(metric_means(metric_frame, oracle_lib.NAME, parsed), means, categories)


def query_categories(query: Query, index: KnowledgeIndex | DomainsOf) -> list[str]:
    """The categories of a query's answer: those its labels state, else its relevant pages' (best grade first),
    read from `index` or from a page -> categories function (a stored run scored again without its index)."""
    if query.categories_labelled or query.categories:
        return list(query.categories)
    domains_of = index if callable(index) else index_domains(index)
    by_grade = sorted((s for s, g in query.qrels.items() if g > 0), key=lambda s: -query.qrels[s])  # stable
    return list(dict.fromkeys(d for s in by_grade for d in domains_of(s)))  # the first relevant page's first


def _domains(index: KnowledgeIndex, source: str) -> tuple[str, ...]:
    entry = index.kb.entry(source)
    return entry.domains if entry is not None else ()


def query_row(query: Query, position: int, invocation_id: str, ranked: list[str], details: Mapping[str, Any],
               latency_ms: float, index: KnowledgeIndex, parsed: Sequence[metric_lib.Metric] = ()) -> dict[str, Any]:
    """One query's eval_query row, its pages' categories read from `index`."""
    return query_facts(query, position, invocation_id, ranked, details, latency_ms, index_domains(index), parsed)


def index_domains(index: KnowledgeIndex) -> DomainsOf:
    """A page's normalised categories as `index` holds them (none for a page it does not hold)."""
    def domains_of(source: str) -> tuple[str, ...]:
        return _domains(index, source)

    return domains_of


def query_facts(query: Query, position: int, invocation_id: str | None, ranked: list[str], details: Mapping[str, Any],
                latency_ms: float, domains_of: DomainsOf, parsed: Sequence[metric_lib.Metric] = ()) -> dict[str, Any]:
    """One query's eval_query row, its pages' categories given by `domains_of` (so a stored run can be scored
    again without its index); with `parsed` metrics, their range over the orders of tied scores (eval.ties)."""
    relevant = sorted(s for s, g in query.qrels.items() if g > 0)
    first = next((rank for rank, s in enumerate(ranked, start=1) if s in query.qrels and query.qrels[s] > 0), None)
    categories = query_categories(query, domains_of)
    return {"query_id": query.id, "position": position, "query": query.text, "n_relevant": len(relevant),
            "relevant": relevant, "categories": categories, "invocation_id": invocation_id,
            "first_relevant_rank": first, "top_sources": ranked[:10],
            **query_diagnostics(details, query.qrels, ranked, domains_of, latency_ms),
            **depth.query_columns(ranked, query.qrels),  # Judged@10 from the labels (eval.depth adds the marks)
            "answerable": query.answerable, "question_set": query.origin or OWN_SET, **graded(details),
            **ranking_columns(query, ranked, details, parsed),
            "facets": dict(query.facets) or None}  # null, not {}: Parquet cannot write a struct with no field


def ranking_columns(query: Query, ranked: Sequence[str], details: Mapping[str, Any],
                    parsed: Sequence[metric_lib.Metric]) -> dict[str, Any]:
    """The whole ranking with its scores (None where a trace recorded none), and, for an answerable question
    scored with `parsed` metrics, their ranges over the orders of tied scores ({}: no tie changes them)."""
    scores = ranked_scores(details, len(ranked))
    ties = None
    if parsed and query.answerable and scores is not None:
        ties = {name: r.to_list() for name, r in tie_ranges(ranked, scores, query.qrels, parsed, seed=query.id).items()}
    return {"ranked": list(ranked), "ranked_scores": scores, "tie_ranges": ties}


def ranked_scores(details: Mapping[str, Any], n: int) -> list[float | None] | None:
    """The scores of a lookup's `n` ranked blocks: `evidence_scores`, else (a trace recorded before it) the
    `evidence` summaries' scores, None beyond them; None when neither is there."""
    scores = details.get("evidence_scores")
    if isinstance(scores, list) and len(scores) == n:
        return [float(s) if s is not None else None for s in scores]
    summaries = details.get("evidence")
    if not isinstance(summaries, list) or not summaries:
        return None
    known = [s.get("score") if isinstance(s, Mapping) else None for s in summaries[:n]]
    return known + [None] * (n - len(known))


def baseline_rows(engine: BM25Baseline, queries: Sequence[Query], parsed: Sequence[metric_lib.Metric], depth: int,
              run_id: str) -> tuple[dict[str, float], list[tuple]]:
    rows = [(run_id, q.id, BASELINE, name, value)
            for q in queries if q.answerable  # an unanswerable question has no rank metric
            for name, value in metric_lib.score(engine.search(q.text, depth), q.qrels, parsed).items()]
    frame = pd.DataFrame(rows, columns=["run_id", "query_id", "system", "metric", "value"])
    return metric_means(frame, BASELINE, parsed), rows


def metric_means(frame: pd.DataFrame, system: str, parsed: Sequence[metric_lib.Metric]) -> dict[str, float]:
    selected = frame[frame["system"] == system].groupby("metric")["value"].mean()
    return {m.name: round(float(selected.get(m.name, 0.0)), 4) for m in parsed}
