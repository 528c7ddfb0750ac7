"""Where a run lost its relevant pages: each relevant page missing from a question's first `cutoff` blocks (the
primary metric's cut-off) gets the stage of the lookup that lost it (retrieval.lookup.explain's STAGES).

Per question, `relevant_stages` maps every relevant page to its stage and rank (`returned` within the cut-off);
the run's lookup itself is explained (`explain_result`), so attribution costs no second lookup, except for a
lookup a resumed run recorded before, which is made again. Per run, `diagnostics["missed_stages"]` counts the
missed pages by stage ("of 212 missed relevant pages: not in pool 61, below top 10 120, …"); a comparison says
which stages moved between two runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from retrieval import MISSING_STAGES, KnowledgeIndex, LookupConfig, LookupResult, explain_missing, explain_result

from .datasets import Query

RETURNED = "returned"
WORDS = {"not_in_kb": "not in the knowledge base", "filtered_out": "filtered out",
         "below_min_score": "below min score", "not_in_pool": "not in pool", "below_top_k": "below top {k}",
         "merged": "merged", "could_not_reproduce": "could not reproduce"}


def relevant_stages(query: Query, result: LookupResult | None, *, index: KnowledgeIndex, config: LookupConfig,
                    cutoff: int) -> dict[str, dict[str, Any]] | None:
    """Every relevant page of `query` with its stage and rank (None: no relevant page). `result` is the run's
    lookup of it (None: recorded by a resumed run, so looked up again)."""
    relevant = sorted(s for s, g in query.qrels.items() if g > 0)
    if not relevant:
        return None
    if result is not None and result.details is not None:
        report = explain_result(result, relevant, index=index, config=config, category=None, top_k=config.top_k,
                                cutoff=cutoff)
    else:
        report = explain_missing(query.text, relevant, index=index, config=config, top_k=config.top_k, cutoff=cutoff)
    return {e.source: {"stage": e.stage, "rank": e.rank} for e in report.explanations}


def missed_summary(stages: Iterable[Mapping[str, Any] | None], cutoff: int, metric: str) -> dict[str, Any]:
    """`diagnostics["missed_stages"]`: the missed relevant pages counted by stage, in pipeline order."""
    counts = Counter(v["stage"] for found in stages if isinstance(found, Mapping) for v in found.values()
                     if v["stage"] != RETURNED)
    ordered = {stage: counts[stage] for stage in (*MISSING_STAGES, *sorted(counts)) if counts.get(stage)}
    missed = sum(ordered.values())
    return {"cutoff": cutoff, "metric": metric, "missed": missed, "counts": ordered,
            "sentence": sentence(missed, ordered, cutoff)}


def sentence(missed: int, counts: Mapping[str, int], cutoff: int) -> str:
    """'of 212 missed relevant pages: not in pool 61, below top 10 120, …' (or that none was missed)."""
    if not missed:
        return f"no relevant page was missed in the top {cutoff}"
    parts = ", ".join(f"{WORDS.get(stage, stage).format(k=cutoff)} {n}" for stage, n in counts.items())
    return f"of {missed} missed relevant page(s) in the top {cutoff}: {parts}"


def stage_moves(frame_a: pd.DataFrame, frame_b: pd.DataFrame) -> dict[str, Any]:
    """Which stages moved from run A to run B, over the questions both scored: relevant pages B lost that A
    returned (by B's stage), and pages B returned that A lost (by A's stage)."""
    a = _stages_by_query(frame_a)
    b = _stages_by_query(frame_b)
    lost, won = Counter(), Counter()
    for query_id in a.keys() & b.keys():
        for source, seen_b in b[query_id].items():
            seen_a = a[query_id].get(source)
            if seen_a is None:
                continue
            if seen_a["stage"] == RETURNED and seen_b["stage"] != RETURNED:
                lost[seen_b["stage"]] += 1
            elif seen_a["stage"] != RETURNED and seen_b["stage"] == RETURNED:
                won[seen_a["stage"]] += 1
    return {"lost_by_b": dict(lost), "won_by_b": dict(won), "sentences": _move_sentences(lost, won)}


def _move_sentences(lost: Counter, won: Counter) -> list[str]:
    said = [f"B lost {n} page(s) that A returned: {_stage_word(stage)}" for stage, n in lost.most_common()]
    said += [f"B returned {n} page(s) that A lost: {_stage_word(stage)} in A" for stage, n in won.most_common()]
    return said


def _stage_word(stage: str) -> str:
    return WORDS.get(stage, stage).format(k="k")


def missed_cell(stages: Any) -> str | None:
    """A question's missed relevant pages as one table cell: 'functions/now.md: below_min_score; …'."""
    if not isinstance(stages, Mapping):
        return None
    missed = [f"{source}: {v['stage']}" for source, v in stages.items() if v.get("stage") != RETURNED]
    return "; ".join(missed) or None


def _stages_by_query(frame: pd.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    if "relevant_stages" not in frame:
        return {}
    return {str(q): s for q, s in zip(frame["query_id"], frame["relevant_stages"], strict=True) if isinstance(s, dict)}
