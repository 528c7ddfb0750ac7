"""An imported TREC run on the Compare page (issue 34, items 3 and 5): offered beside the lookup run of its
dataset and base, compared with it, and its run card warns when the order of tied scores moves a metric."""

from __future__ import annotations

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
