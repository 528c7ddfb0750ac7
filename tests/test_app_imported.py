"""An imported TREC run on the Compare page (issue 34, items 3 and 5): offered beside the lookup run of its
dataset and base, compared with it, and its run card warns when the order of tied scores moves a metric."""

from __future__ import annotations

import pandas as pd

from appui.data import runs as runs_data
from tests.app_helpers import ok, page_text


def test_an_imported_run_is_compared_with_a_lookup_run_on_the_compare_page(imported_app, imported_runs):
    lookup, imported = imported_runs["lookup"].run_id, imported_runs["imported"].run_id
    assert imported_app.selectbox(key="eval_run_b").value == imported  # the newest run of the group
    at = ok(imported_app.selectbox(key="eval_run_a").set_value(lookup).run())
    text = page_text(at)
    assert '{"system": "flat ranker"}' in text  # its label names the system, not settings
    deltas = next(d.value for d in at.dataframe if "significance" in d.value.columns)
    assert set(deltas["metric"]) == {"mrr@10", "recall@10"}


def test_the_run_card_warns_when_tied_scores_move_a_metric(imported_app, imported_runs):
    assert "mrr@10" in imported_runs["imported"].diagnostics["ties"]["flagged"]
    warnings = [w.value for w in imported_app.warning]
    assert any(w.startswith("Ties: mrr@10 ") and w.endswith("FLAGGED") for w in warnings), warnings


def test_an_imported_runs_card_says_it_has_no_grades_because_it_was_imported(imported_app, imported_runs):
    """Issue 49, item 9: the card said "this run was stored before runs graded their questions"."""
    assert imported_app.selectbox(key="eval_run_view").value == imported_runs["imported"].run_id
    text = page_text(imported_app)
    assert "Not measured: it was imported from a TREC run file, which holds rankings only" in text
    assert "stored before runs graded" not in text


def test_the_answerability_comparison_shows_a_dash_where_the_imported_run_measured_nothing(imported_app):
    """Issue 49, item 9: run B's cells and the deltas read "None"."""
    table = next(d.value for d in imported_app.dataframe if d.value.columns.tolist() == ["figure", "A", "B", "delta"])
    assert set(table["B"]) == {"—"} and set(table["delta"]) == {"—"} and not table.isna().any().any()
    assert "— : not measured for run B: it was imported from a TREC run file" in page_text(imported_app)



def test_a_relevant_pages_rank_in_the_imported_run_reads_a_dash_not_none():
    """Issue 49, item 9: an opened question's relevant pages read "None" where a run did not return a page (its
    rank) or recorded no stages (an imported run)."""
    row = pd.Series({"relevant_stages_a": {"api/tokens.md": {"stage": "returned", "rank": 1},
                                           "api/rate-limits.md": {"stage": "below_min_score", "rank": None}},
                     "relevant_stages_b": None})
    pages = runs_data.relevant_pages(row)
    assert not pages.isna().any().any()
    assert pages.set_index("relevant page").to_dict("index") == {
        "api/rate-limits.md": {"rank A": "—", "stage A": "below_min_score", "rank B": "—", "stage B": "—"},
        "api/tokens.md": {"rank A": "1", "stage A": "returned", "rank B": "—", "stage B": "—"}}
