"""A run's answerability on the Compare page: how its relevance grades separate answered questions from
unanswerable ones (eval.abstention), and two runs' figures side by side (eval.abstention_report)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from appui.data.cells import no_none

EXTERNAL = "external"  # the `system` of an imported run's config (eval.compare.EXTERNAL)
IMPORTED = ("it was imported from a TREC run file, which holds rankings only: the system graded nothing, so "
            "there is nothing to measure")
NOT_GRADED = "it was stored before runs graded their questions"
CARD = (  # (key, label, help): the figures on a run's card, each a share or an AUROC
    ("unanswerable_high", "unanswerable graded high", "the agent would answer from a wrong page: lower is better"),
    ("unanswerable_abstained", "unanswerable abstained", "graded low or none, so the result says the knowledge "
                                                         "base does not seem to hold an answer: higher is better"),
    ("auroc", "AUROC", "of confidence, answered questions (a relevant page in the top 5) against unanswerable ones"),
    ("high_precision", "high: relevant first", "of answerable questions graded high, a relevant page first"),
    ("high_recall", "relevant first: high", "of answerable questions with a relevant page first, graded high"),
)


def run_panel(run: Any) -> None:
    """The figures as a row of metrics, the share of each level, and the unanswerable questions graded high or
    medium (most confident first)."""
    from eval import abstention_report

    summary: Mapping[str, Any] | None = run.diagnostics.get("answerability")
    st.markdown("**Answerability**: does the relevance grade say when nothing answers?")
    if not summary or "levels" not in summary:
        imported = (getattr(run, "config", None) or {}).get("system") == EXTERNAL
        st.caption(f"Not measured: {IMPORTED if imported else NOT_GRADED}.")
        return
    if not summary["unanswerable"]:
        st.caption(summary.get("note", ""))
    for column, (key, label, help_text) in zip(st.columns(len(CARD)), CARD, strict=True):
        value = summary.get(key)
        column.metric(label, "n/a" if value is None else (f"{value:.3f}" if key == "auroc" else f"{value:.1%}"),
                      help=help_text)
    st.dataframe(abstention_report.level_table(summary), hide_index=True, key="eval_answerability_levels")
    st.caption(abstention_report.EXPLAINED)
    wrong = abstention_report.false_confidence(run.unanswerable)
    if not wrong.empty:
        st.markdown(f"**{len(wrong)} unanswerable question(s) graded high or medium**")
        st.dataframe(wrong, hide_index=True, key="eval_answerability_wrong")


def comparison_panel(comparison: Any) -> None:
    """Runs A and B's answerability figures side by side (nothing when neither measured it)."""
    from eval import abstention_report

    a, b = comparison.answerability
    if not (a and "levels" in a) and not (b and "levels" in b):
        return
    st.markdown("**Answerability, A vs B** (shares and AUROC; Δ = B − A)")
    st.dataframe(no_none(abstention_report.comparison_table(a, b)), hide_index=True, key="eval_answerability_compare")
    systems = (comparison.config_diff or {}).get("system") or ["lookup", "lookup"]
    unmeasured = [(side, system) for side, system, summary in zip("AB", systems, (a, b), strict=True)
                  if not (summary and "levels" in summary)]
    for side, system in unmeasured:
        imported = str(system).startswith(f"{EXTERNAL} ")  # config_diff names an imported run "external <name>"
        st.caption(f"— : not measured for run {side}: {IMPORTED if imported else NOT_GRADED}.")
