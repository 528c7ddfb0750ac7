"""Figures a replay scored against judgements should show, worked out by hand from the ranked sources its
lookups recorded (one relevant page per query), so the replay tests do not trust the scoring they check."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

from retrieval import TraceStore

DEPTH = 10


def recorded_rankings(store: TraceStore, *, ids: Sequence[str] = (), run_id: str | None = None
                      ) -> list[tuple[str, list[str]]]:
    """(query, ranked sources) of the recorded calls `ids`, or of every call recorded under `run_id`."""
    if run_id is not None:
        frame = store.query("SELECT query, retrieval_details FROM tool_invocation WHERE run_id = ?", [run_id])
    else:
        frame = store.query("SELECT query, retrieval_details FROM tool_invocation WHERE list_contains(?, id)",
                            [list(ids)])
    return [(q, json.loads(d)["evidence_sources"]) for q, d in zip(frame["query"], frame["retrieval_details"],
                                                                  strict=True)]


def by_hand(rankings: Sequence[tuple[str, list[str]]], relevant: Mapping[str, str]) -> dict[str, float]:
    """Mean mrr@10, hit@10, recall@10 and ndcg@10 (rounded to 4 places, as a run stores them) when each query
    of `relevant` has that one relevant page and every other query none."""
    totals = dict.fromkeys(("mrr@10", "hit@10", "recall@10", "ndcg@10"), 0.0)
    for query, ranked in rankings:
        page = relevant.get(query)
        if page in ranked[:DEPTH]:
            rank = ranked.index(page) + 1
            totals["mrr@10"] += 1 / rank
            totals["hit@10"] += 1.0
            totals["recall@10"] += 1.0
            totals["ndcg@10"] += 1 / math.log2(rank + 1)
    return {name: round(total / len(rankings), 4) for name, total in totals.items()}


def shown(value: float) -> str:
    """A metric as the run's card shows it."""
    return f"{value:.3f}"
