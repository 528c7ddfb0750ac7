"""How far a run's relevance grades can be trusted to say when nothing answers: `diagnostics["answerability"]`.

Every question of a run is graded by the lookup (`relevance.level`, `relevance.confidence`, recorded in its
`retrieval_details`). An unanswerable question (no relevant page in its labels) should get low or none; an
answerable one whose first page is relevant should get high. Per run:
- the share of each level among unanswerable and among answerable questions;
- `unanswerable_high`: unanswerable questions graded high (the agent would answer from a wrong page);
- `high_precision`: answerable questions graded high whose first page is relevant;
- `high_recall`: answerable questions whose first page is relevant that are graded high;
- `auroc`: the AUROC of `confidence` between answered questions (a relevant page in the top AUROC_TOP) and
  unanswerable ones: the chance a random answered one outranks a random unanswerable one (ties count half);
- the same per set of unanswerable questions (`by_set`: the dataset's own, each `--unanswerable` file).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import rankdata

LEVELS = ("high", "medium", "low", "none")
AUROC_TOP = 5
OWN_SET = "labels"  # the set name of the dataset's own unanswerable questions
AUROC_RULE = (f"answered = a relevant page in the top {AUROC_TOP}; unanswerable = no relevant page in the labels")
EXAMPLES = 10


def graded(details: Mapping[str, Any]) -> dict[str, Any]:
    """A lookup's grade as eval_query columns: `confidence` and `relevance_level` (None: not recorded)."""
    relevance = details.get("relevance") or {}
    confidence = relevance.get("confidence")
    return {"confidence": None if confidence is None else float(confidence), "relevance_level": relevance.get("level")}


def auroc(positive: np.ndarray | pd.Series, negative: np.ndarray | pd.Series) -> float | None:
    """P(a random positive scores above a random negative), ties half (Mann-Whitney U / n_pos n_neg); None
    when either side is empty."""
    pos, neg = np.asarray(positive, dtype=float), np.asarray(negative, dtype=float)
    if pos.size == 0 or neg.size == 0:
        return None
    ranks = rankdata(np.concatenate([pos, neg]))  # average ranks: ties count half
    u = ranks[:pos.size].sum() - pos.size * (pos.size + 1) / 2
    return round(float(u / (pos.size * neg.size)), 4)


def answerability_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """The run's answerability figures from its per-question rows (columns `answerable`, `confidence`,
    `relevance_level`, `first_relevant_rank`, `question_set`, `query_id`)."""
    if frame.empty or "relevance_level" not in frame:
        return {"answerable": 0, "unanswerable": 0, "skipped": "no graded questions in this run"}
    answerable = _column(frame, "answerable", True).astype(bool)
    levels = frame["relevance_level"].fillna("none").astype(str)
    confidence = pd.to_numeric(frame["confidence"], errors="coerce").fillna(0.0)
    rank = pd.to_numeric(frame["first_relevant_rank"], errors="coerce")
    first, answered = (rank == 1) & answerable, (rank <= AUROC_TOP) & answerable
    high = levels == "high"
    unanswerable = ~answerable
    sets = _column(frame, "question_set", None).fillna(OWN_SET).replace("", OWN_SET).astype(str)
    summary = {
        "answerable": int(answerable.sum()), "unanswerable": int(unanswerable.sum()),
        "levels": {"answerable": _shares(levels[answerable]), "unanswerable": _shares(levels[unanswerable])},
        "unanswerable_high": _rate(high & unanswerable, unanswerable),
        "unanswerable_abstained": _rate(levels.isin(("low", "none")) & unanswerable, unanswerable),
        "high_precision": _rate(high & first, high & answerable),
        "high_recall": _rate(high & first, first),
        "auroc": auroc(confidence[answered], confidence[unanswerable]),
        "auroc_rule": AUROC_RULE,
        "answered_in_top": int(answered.sum()),
        "unanswerable_high_ids": [str(q) for q in frame.loc[high & unanswerable, "query_id"].head(EXAMPLES)],
        "by_set": {name: {"questions": int(group.size), **_shares(levels[group.index]),
                          "auroc": auroc(confidence[answered], confidence[group.index])}
                   for name, group in sets[unanswerable].groupby(sets[unanswerable], sort=True)},
    }
    if not summary["unanswerable"]:
        summary["note"] = ("no unanswerable questions in this run, so nothing measures abstention; add some with "
                           "--unanswerable FILE or rows with \"relevant\": []")
    return summary


def summary_line(summary: Mapping[str, Any] | None) -> str:
    """The figures in one line, as the CLI's run summary and the reports say them."""
    if not summary or "levels" not in summary:
        return f"answerability: not measured ({(summary or {}).get('skipped', 'a run stored before it was')})"
    parts = [f"{summary['unanswerable']} unanswerable question(s)"]
    if summary["unanswerable"]:
        shares = summary["levels"]["unanswerable"]
        parts.append("graded " + ", ".join(f"{level} {_percent(shares.get(level))}" for level in LEVELS))
        parts.append(f"AUROC {_number(summary.get('auroc'))} (answered in the top {AUROC_TOP} vs unanswerable)")
    parts.append(f"answerable questions graded high {_percent(summary['levels']['answerable'].get('high'))}, a "
                 f"relevant page first in {_percent(summary.get('high_precision'))} of those")
    return "answerability: " + "; ".join(parts)


def _column(frame: pd.DataFrame, name: str, default: Any) -> pd.Series:
    """A column, `default` where absent or null (rows stored before it existed)."""
    if name not in frame:
        return pd.Series(default, index=frame.index, dtype=object)
    return frame[name].astype(object).where(frame[name].notna(), default)


def _shares(levels: pd.Series) -> dict[str, float | None]:
    counts = levels.value_counts()
    return {level: (round(float(counts.get(level, 0)) / levels.size, 4) if levels.size else None) for level in LEVELS}


def _rate(part: pd.Series, whole: pd.Series) -> float | None:
    return round(float(part.sum()) / float(whole.sum()), 4) if whole.sum() else None


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
