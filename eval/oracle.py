"""The oracle filter diagnostic: how good could the category filter make a run if it always chose right?

Each query is looked up again through the same `lookup_knowledge`, with its true category passed as the
caller's `category` (decision `caller`: L1 and L0 evidence are restricted to it). The true category is
the query's first category: the one its labels state (`category_of_first`), else the first relevant
page's. Queries without one run unfiltered, so the oracle scores the same queries as the lookup and the
difference of the means is the headroom a perfect filter would open.

The oracle lookups are not recorded (recorder=None): the run's `tool_invocation` rows stay exactly one
per query, the lookups the run measures. Their per-query metrics are stored as system `oracle`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from retrieval import KnowledgeIndex, LookupConfig, lookup_knowledge

from . import metrics as metric_lib
from .datasets import Query

NAME = "oracle"
CATEGORY_RULE = "first relevant page's category"
MetricRow = tuple[str, str, str, str, float]


def true_category(categories: Sequence[str] | None) -> str | None:
    """The category the oracle filters on: the first of a query's categories, or None."""
    return next((str(c) for c in categories or () if str(c).strip()), None)


def oracle_lookups(queries: Sequence[Query], categories: Mapping[str, str | None], *, index: KnowledgeIndex,
                   config: LookupConfig, parsed: Sequence[metric_lib.Metric], run_id: str) -> list[MetricRow]:
    """Per-query metric rows (run, query, `oracle`, metric, value) of every query looked up with its true
    category as the caller's filter; `categories[query.id]` None means an unfiltered lookup."""
    rows: list[MetricRow] = []
    for query in (q for q in queries if q.answerable):  # an unanswerable question has no rank metric
        result = lookup_knowledge(query.text, index=index, config=config, category=categories.get(query.id),
                                  top_k=config.top_k, recorder=None)
        ranked = [block.source for block in result.evidence_blocks]
        rows.extend((run_id, query.id, NAME, name, value)
                    for name, value in metric_lib.score(ranked, query.qrels, parsed).items())
    return rows


def oracle_summary(oracle_means: Mapping[str, float], lookup_means: Mapping[str, float],
                   categories: Mapping[str, str | None]) -> dict[str, Any]:
    """`diagnostics["oracle"]`: the oracle's mean metrics, headroom (oracle - lookup) and how many queries
    had a category to filter on."""
    with_category = sum(1 for c in categories.values() if c)
    return {"metrics": dict(oracle_means),
            "headroom": {m: round(v - lookup_means.get(m, 0.0), 4) for m, v in oracle_means.items()},
            "queries_with_category": with_category, "queries_unfiltered": len(categories) - with_category,
            "category_rule": CATEGORY_RULE}


def skipped(reason: str) -> dict[str, Any]:
    """`diagnostics["oracle"]` when the oracle did not run, saying why."""
    return {"skipped": reason}


def headroom_table(metrics: Mapping[str, float], baseline: Mapping[str, float] | None,
                   diagnostics: Mapping[str, Any]) -> pd.DataFrame:
    """One row per metric: lookup, BM25 baseline, oracle filter and headroom (None where not measured)."""
    oracle = diagnostics.get("oracle") or {}
    rows = [{"metric": m, "lookup": v, "bm25": (baseline or {}).get(m),
             "oracle filter": (oracle.get("metrics") or {}).get(m), "headroom": (oracle.get("headroom") or {}).get(m)}
            for m, v in metrics.items()]
    return pd.DataFrame(rows, columns=["metric", "lookup", "bm25", "oracle filter", "headroom"])


def negative_headroom_note(headroom: Mapping[str, float]) -> str | None:
    """Why the oracle can score below the lookup, naming the metrics where it does (None when it does not): it
    filters each question by its first relevant page's category, which hides relevant pages in the others."""
    below = {metric: value for metric, value in headroom.items() if value < 0}
    if not below:
        return None
    listed = ", ".join(f"{metric} {value:+.3f}" for metric, value in below.items())
    return (f"Negative headroom ({listed}) is not a broken oracle: the oracle filters each question by the "
            "category of its first relevant page, so relevant pages in other categories are hidden from it, "
            "while the lookup, filtering less, still finds them.")
