"""Diagnostics read from `retrieval_details`: what the filter, L1 and dedupe did, per query and per run.

Per query: the filter decision and applied category, whether that category is a relevant document's
category (filter precision), whether a relevant document lies outside it (filter harm: L1 never saw
it), whether a guard widened the search again (`retrieval_details["filter"]["widened"]`: L1 re-ran
without the filter, so it did see every row), whether the filter changed the returned sources at all
(`filter_effect.first_changed_rank` ≤ 10: a filter that agrees with the ranking's best pages cannot
move the metrics), the layer and L1 status, candidate and block counts, and latency. Per run: their
rates and counts, precision and harm per applied category, and the confusion of the applied category
against the query's true (first) category.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from retrieval.text import normalize_label

DomainsOf = Callable[[str], tuple[str, ...]]
NONE = "(none)"
TOP_CHANGED = 10  # `filter_changed`: the applied filter changed the returned order within this rank


def query_diagnostics(details: Mapping[str, Any], qrels: Mapping[str, float], ranked: Sequence[str],
                      domains_of: DomainsOf, latency_ms: float) -> dict[str, Any]:
    """One query's diagnostic columns; `domains_of(source)` gives a document's normalised categories."""
    decision = details.get("filter") or {}
    applied = (decision.get("applied") or {}).get("category")
    relevant = [s for s, g in qrels.items() if g > 0]
    category = normalize_label(applied) if applied else None
    outside = [s for s in relevant if category is not None and category not in domains_of(s)]
    returned = set(ranked)
    return {
        "filter_decision": decision.get("decision"),
        "filter_category": category,
        "filter_correct": None if category is None else any(category in domains_of(s) for s in relevant),
        "filter_harm": bool(outside),
        "filter_harm_missed": any(s not in returned for s in outside),
        "filter_widened": bool(decision.get("widened", False)),
        "filter_changed": _changed_top(details.get("filter_effect"), TOP_CHANGED),
        "retrieval_layer": details.get("retrieval_layer"),
        "l1_status": (details.get("l1") or {}).get("status"),
        "candidate_count": int(details.get("candidate_count") or 0),
        "duplicates_merged": int(details.get("duplicates_merged") or 0),
        "evidence_count": int(details.get("evidence_count") or 0),
        "latency_ms": float(latency_ms),
    }


def summarize(frame: pd.DataFrame) -> dict[str, Any]:
    """Run-level diagnostics from the per-query frame (columns of `query_diagnostics` plus `query_id`)."""
    n = len(frame)
    if n == 0:
        return {"queries": 0}
    applied = frame[frame["filter_decision"] == "applied"]
    harmed = frame[frame["filter_harm"].astype(bool)]
    widened = _flag(frame, "filter_widened")
    candidates, blocks = int(frame["candidate_count"].sum()), int(frame["evidence_count"].sum())
    return {
        "queries": n,
        "filter_applied_rate": _rate(len(applied), n),
        "filter_decisions": _counts(frame["filter_decision"]),
        "filter_precision": _rate(int(applied["filter_correct"].astype(bool).sum()), len(applied)),
        "filter_harm": _harm(harmed, n),
        "filter_harm_effective": _harm(harmed[~widened[harmed.index]], n),
        "filter_widened_rate": _rate(int(widened.sum()), n),
        "filter_changed": int(_flag(frame, "filter_changed").sum()),
        "filter_changed_within": TOP_CHANGED,
        "filter_by_domain": filter_by_domain(applied),
        "filter_confusion": filter_confusion(applied),
        "l0_only_fallback_rate": _rate(int((frame["retrieval_layer"] == "L0").sum()), n),
        "retrieval_layers": _counts(frame["retrieval_layer"]),
        "l1_status": _counts(frame["l1_status"]),
        "dedup_ratio": round(candidates / blocks, 4) if blocks else None,
        "duplicates_merged_rate": _rate(int(frame["duplicates_merged"].sum()), candidates),
        "latency_ms": {"p50": _percentile(frame["latency_ms"], 50), "p95": _percentile(frame["latency_ms"], 95),
                       "mean": round(float(frame["latency_ms"].mean()), 3)},
    }


def filter_by_domain(applied: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per applied filter category: queries it was applied to, how many correctly (a relevant document is
    in it), precision, and how many it harmed (a relevant document outside it)."""
    result = {}
    for domain, group in applied.groupby("filter_category", sort=True):
        correct = int(_flag(group, "filter_correct").sum())
        result[str(domain)] = {"applied": len(group), "correct": correct, "precision": _rate(correct, len(group)),
                               "harm": int(_flag(group, "filter_harm").sum())}
    return result


def filter_confusion(applied: pd.DataFrame) -> list[dict[str, Any]]:
    """(chosen category, true category, count) over queries with an applied filter, most frequent first;
    the true category is the query's first (`(none)` when it has none)."""
    if applied.empty:
        return []
    true = applied.get("categories", pd.Series([[]] * len(applied), index=applied.index))
    pairs = pd.DataFrame({"chosen": applied["filter_category"].astype(str),
                          "true": true.map(lambda c: str(c[0]) if isinstance(c, (list, tuple)) and c else NONE)})
    counts = pairs.value_counts().rename("count").reset_index()
    counts = counts.sort_values(["count", "chosen", "true"], ascending=[False, True, True])
    return [{"chosen": r["chosen"], "true": r["true"], "count": int(r["count"])} for r in counts.to_dict("records")]


def _changed_top(effect: Any, within: int) -> bool | None:
    """Whether an applied filter changed the first `within` results (None: no filter ran, or an old trace)."""
    if not isinstance(effect, Mapping):
        return None
    rank = effect.get("first_changed_rank")
    return rank is not None and int(rank) <= within


def _harm(harmed: pd.DataFrame, n: int) -> dict[str, Any]:
    return {"count": len(harmed), "rate": _rate(len(harmed), n),
            "missed": int(harmed["filter_harm_missed"].astype(bool).sum()),
            "query_ids": [str(q) for q in harmed["query_id"]]}


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    """A boolean column, False where absent or null (runs stored before the column existed)."""
    if column not in frame:
        return pd.Series(False, index=frame.index)
    # element by element: fillna and where on an object column warn of their downcasting on pandas 2.2
    return pd.Series([bool(v) if pd.notna(v) else False for v in frame[column]], index=frame.index, dtype=bool)


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _counts(column: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in column.fillna("none").value_counts().sort_index().items()}


def _percentile(column: pd.Series, q: float) -> float:
    return round(float(np.percentile(column.to_numpy(dtype=float), q)), 3)
