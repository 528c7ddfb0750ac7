"""The answerability figures (eval.abstention) as report sections and tables: a run's, and two runs side by side.

Shared by the reports (eval.reports), the CLI and the app's Compare page, so they say the same figures in the
same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from retrieval.export import Section

from .abstention import AUROC_RULE, LEVELS, summary_line

FIGURES = (  # (key, words): the figures two runs are compared on, each a share or an AUROC in [0, 1]
    ("unanswerable_high", "unanswerable graded high (lower is better)"),
    ("unanswerable_abstained", "unanswerable graded low or none (higher is better)"),
    ("auroc", "AUROC of confidence, answered vs unanswerable"),
    ("high_precision", "graded high: a relevant page first"),
    ("high_recall", "relevant page first: graded high"),
)
EXPLAINED = ("A question with no relevant page in its labels is unanswerable: the lookup should grade it low or "
             "none (the result then abstains: the knowledge base does not seem to hold an answer). "
             f"AUROC: {AUROC_RULE}.")
FALSE_CONFIDENCE_ROWS = 20


def level_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """One row per level: its share among answerable and among unanswerable questions, and per set of the latter."""
    levels = summary.get("levels") or {}
    sets = summary.get("by_set") or {}
    rows = []
    for level in LEVELS:
        row = {"level": level, "answerable": (levels.get("answerable") or {}).get(level),
               "unanswerable": (levels.get("unanswerable") or {}).get(level)}
        row.update({f"unanswerable: {name}": figures.get(level) for name, figures in sets.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def false_confidence(unanswerable: pd.DataFrame | None) -> pd.DataFrame:
    """The unanswerable questions the lookup did not abstain on (graded high or medium), most confident first."""
    columns = ["query_id", "query", "question_set", "relevance_level", "confidence", "first_source"]
    if unanswerable is None or unanswerable.empty or "relevance_level" not in unanswerable:
        return pd.DataFrame(columns=columns)
    kept = unanswerable[unanswerable["relevance_level"].isin(("high", "medium"))].copy()
    kept["first_source"] = kept["top_sources"].map(lambda s: s[0] if isinstance(s, list) and s else None)
    return kept.sort_values(["confidence", "query_id"], ascending=[False, True]).reindex(columns=columns)


def run_sections(summary: Mapping[str, Any] | None, unanswerable: pd.DataFrame | None) -> list[Section]:
    """A run report's answerability sections: the figures, the level shares, and the false confidences."""
    if not summary or "levels" not in summary:
        return [Section("Answerability", (summary_line(summary),))]
    lines = (summary_line(summary), EXPLAINED, *([summary["note"]] if summary.get("note") else ()))
    sections = [Section("Answerability: knowing when nothing answers", lines, table=level_table(summary))]
    wrong = false_confidence(unanswerable)
    if not wrong.empty:
        sections.append(Section("Unanswerable questions graded high or medium",
                                table=wrong.head(FALSE_CONFIDENCE_ROWS)))
    return sections


def comparison_table(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> pd.DataFrame:
    """The answerability figures of runs A and B side by side, with B − A (None where a run did not measure it)."""
    rows = []
    for key, words in (("unanswerable", "unanswerable questions"), *FIGURES):
        value_a, value_b = (a or {}).get(key), (b or {}).get(key)
        delta = None if value_a is None or value_b is None or key == "unanswerable" else round(value_b - value_a, 4)
        rows.append({"figure": words, "A": value_a, "B": value_b, "delta": delta})
    return pd.DataFrame(rows, columns=["figure", "A", "B", "delta"])


def comparison_sections(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[Section]:
    """A comparison report's answerability section (none when neither run measured it)."""
    if not (a and "levels" in a) and not (b and "levels" in b):
        return []
    return [Section("Answerability A vs B", (EXPLAINED,), table=comparison_table(a, b))]
