"""Replay under B and the grouped configuration with B's differences named before a run (AppTest + helpers)."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from appui.data import replay
from appui.widgets import state
from eval import replays
from retrieval import LookupConfig, TraceStore
from tests.app_helpers import APP, judge_card, lookup, ok, page_text
from tests.replay_helpers import by_hand, recorded_rankings, shown


def _compare() -> AppTest:
    at = ok(AppTest.from_file(APP, default_timeout=60).run())
    return ok(at.switch_page("appui/pages/compare.py").run())


def test_replay_20_interactive_lookups_under_b_shows_what_changed(env_with_lookups):
    at = _compare()
    at = ok(at.toggle(key="cmpb_l0_filter").set_value(False).run())
    at = ok(at.button(key="rp_start").click().run())
    frame = at.dataframe(key="rp_table").value
    assert len(frame) == 20
    assert frame["filter"].str.contains("applied → disabled").any()  # L0's filter is off under B
    assert {"query", "changed", "labels only", "filter", "layer", "primary", "gained", "lost"} <= set(frame.columns)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["calls"] == "20" and int(metrics["filter changed"]) >= 1
    assert int(metrics["results changed"]) == int(frame["changed"].sum())
    assert int(metrics["labels only changed"]) == int((~frame["changed"] & frame["filter"].str.contains("→")
                                                       | ~frame["changed"] & frame["layer"].str.contains("→")).sum())
    row = frame.index[frame["filter"].str.contains("→")][0]
    at.session_state["rp_table"] = {"selection": {"rows": [int(row)], "columns": [], "cells": []}}
    at = ok(at.run())
    assert {"Recorded", "Replayed under B"} <= {s.value for s in at.subheader}


def test_replay_is_saved_as_a_run(env_with_lookups):
    at = ok(_compare().button(key="rp_start").click().run())
    run_id = at.session_state["rp_result"]["run_id"]
    assert run_id.startswith(replay.PREFIX)
    rows = TraceStore(env_with_lookups["traces"]).query("SELECT query_id FROM tool_invocation WHERE run_id = ?",
                                                        [run_id])
    originals = TraceStore(env_with_lookups["traces"]).query("SELECT id FROM tool_invocation WHERE run_id IS NULL")
    assert len(rows) == 20 and set(rows["query_id"]) == set(originals["id"])


def test_saved_replay_is_an_eval_run_selected_in_the_run_pickers(env_with_lookups):
    at = _compare()
    at = ok(at.toggle(key="cmpb_l0_filter").set_value(False).run())
    at = ok(at.button(key="rp_start").click().run())
    recorded, replayed = at.session_state["rp_result"]["compare"]
    assert replayed == at.session_state["rp_result"]["run_id"] and recorded.startswith(replays.RECORDED_PREFIX)
    assert at.selectbox(key="eval_run_a").value == recorded and at.selectbox(key="eval_run_b").value == replayed
    assert at.selectbox(key="eval_run_view").value == replayed
    deltas = next(d.value for d in at.dataframe if "significance" in d.value.columns)
    assert not deltas.empty and "ndcg@10" in set(deltas["metric"])
    assert any(f"compares it with `{recorded}`" in s.value for s in at.success)
    assert any(c.value.startswith("No query of this replay is labelled") for c in at.caption)
    stored = TraceStore(env_with_lookups["traces"]).query("SELECT run_id, status FROM eval_run")
    assert set(stored["run_id"]) == {recorded, replayed} and set(stored["status"]) == {"complete"}


def test_a_replay_runs_query_opens_the_recorded_call_beside_its_replay(env_with_lookups):
    at = ok(_compare().toggle(key="cmpb_l0_filter").set_value(False).run())
    at = ok(at.button(key="rp_start").click().run())
    recorded, replayed = at.session_state["rp_result"]["compare"]
    at.session_state["eval_pairs"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at = ok(at.run())
    assert {f"Run A: {recorded}", f"Run B: {replayed}"} <= {s.value for s in at.subheader}
    assert not [w.value for w in at.warning if w.value.startswith("No stored lookup")]


def test_replay_of_a_run_replays_that_runs_calls(env_with_lookups):
    at = ok(_compare().button(key="rp_start").click().run())
    first = at.session_state["rp_result"]["run_id"]
    at = ok(at.radio(key="rp_source").set_value("A run's lookups").run())
    at = ok(at.selectbox(key="rp_run").set_value(first).run())
    at = ok(at.number_input(key="rp_limit").set_value(5).run())
    at = ok(at.toggle(key="rp_save").set_value(False).run())
    at = ok(at.button(key="rp_start").click().run())
    assert len(at.dataframe(key="rp_table").value) == 5 and at.session_state["rp_result"]["run_id"] is None
    at = ok(at.toggle(key="rp_only_changed").set_value(True).run())
    assert len(at.dataframe(key="rp_table").value) == 0  # same configuration: nothing changed


def test_replay_diff_names_gained_and_lost_blocks():
    a = {"filter": {"decision": "applied"}, "retrieval_layer": "L0+L1", "evidence_sources": ["x.md", "y.md"]}
    b = {"filter": {"decision": "disabled"}, "retrieval_layer": "L1", "evidence_sources": ["z.md", "x.md"]}
    row = replay.diff("id", "q", a, b, None).to_row()
    assert row["filter"] == "applied → disabled" and row["layer"] == "L0+L1 → L1"
    assert row["primary"] == "x.md → z.md" and row["gained"] == "z.md" and row["lost"] == "y.md" and row["changed"]
    assert not row["labels only"]


def test_a_label_only_change_is_not_counted_as_a_result_change():
    """`skipped_ambiguous → disabled` with the same blocks changed a label, not the results."""
    a = {"filter": {"decision": "skipped_ambiguous"}, "retrieval_layer": "L0+L1", "evidence_sources": ["x.md"]}
    b = {"filter": {"decision": "disabled"}, "retrieval_layer": "L0+L1", "evidence_sources": ["x.md"]}
    row = replay.diff("id", "q", a, b, None).to_row()
    assert row["filter"] == "skipped_ambiguous → disabled" and not row["changed"] and row["labels only"]
    with pytest.raises(ValueError, match="at least one call"):
        replay.recorded_calls(None, limit=0)  # type: ignore[arg-type]


def test_configuration_is_grouped_and_b_differences_are_highlighted(env_with_lookups):
    titles = [title for title, _ in state.grouped_fields()]
    assert titles[:4] == ["L0 and filter", "L1", "Models (dense part, reranker)", "Evidence ordering"]
    grouped = {f.name for _, group in state.grouped_fields() for f in group}
    assert grouped == set(LookupConfig().to_dict())
    at = _compare()
    assert any(c.value.startswith("B equals A") for c in at.caption)
    at = ok(at.number_input(key="cmpb_top_k").set_value(3).run())
    assert any("B differs from A" in w.value and "`top_k` 5 → **3**" in w.value for w in at.warning)
    assert at.number_input(key="cmpb_top_k").label.startswith(":orange[**top k**]")


def test_a_replay_of_mixed_recorded_settings_saved_then_judged_shows_its_settings_and_current_metrics(
        env_with_mixed_lookups):
    """Recorded calls with L0's filter on once and off twice, replayed with it off and saved: both runs name
    their settings truthfully, and judging blocks on the Lookup page afterwards scores them."""
    mixed = '{"l0_filter": "mixed: false ×2, true ×1"}'
    at = ok(_compare().toggle(key="cmpb_l0_filter").set_value(False).run())
    at = ok(at.button(key="rp_start").click().run())
    recorded, replayed = at.selectbox(key="eval_run_a").value, at.selectbox(key="eval_run_b").value
    assert f"{recorded} · {mixed}" in at.selectbox(key="eval_run_a").options
    assert f'{replayed} · {{"l0_filter": false}}' in at.selectbox(key="eval_run_b").options
    assert "Settings: `l0_filter` mixed: false ×2, true ×1 → False" in [c.value for c in at.caption]
    assert _card(at, replayed) == dict.fromkeys(CARD_METRICS, "0.000")
    assert any(c.value.startswith("No query of this replay is labelled") for c in at.caption)

    relevant = {"download invoices": "billing/invoices.md", "rotate an API token": "security/tokens.md"}
    at = ok(at.switch_page("appui/pages/lookup.py").run())
    for query, page in relevant.items():
        at = judge_card(lookup(at, query), page, 1)
    store = TraceStore(env_with_mixed_lookups["traces"])
    rankings = {recorded: recorded_rankings(store, ids=env_with_mixed_lookups["ids"]),
                replayed: recorded_rankings(store, run_id=replayed)}
    at = ok(at.switch_page("appui/pages/compare.py").run())
    for run_id in (replayed, recorded):
        expected = by_hand(rankings[run_id], relevant)
        assert expected["mrr@10"] > 0
        assert _card(at, run_id) == {m: shown(expected[m]) for m in CARD_METRICS}
    assert mixed in page_text(at)  # the recorded run's card names its mixed settings
    assert not any(c.value.startswith("No query of this replay is labelled") for c in at.caption)
    listed = next(d.value for d in at.dataframe if "lookups" in d.value.columns).set_index("run_id")
    deltas = next(d.value for d in at.dataframe if "significance" in d.value.columns).set_index("metric")
    for run_id, side in ((recorded, "A"), (replayed, "B")):
        expected = by_hand(rankings[run_id], relevant)
        assert listed.loc[run_id, "mrr@10"] == pytest.approx(expected["mrr@10"], abs=1e-4)
        assert deltas.loc["mrr@10", side] == pytest.approx(expected["mrr@10"], abs=1e-4)

    at = ok(at.switch_page("appui/pages/lookup.py").run())  # one mark changed: that query no longer counts
    at = judge_card(lookup(at, "download invoices"), "billing/invoices.md", 0)
    del relevant["download invoices"]
    at = ok(at.switch_page("appui/pages/compare.py").run())
    assert _card(at, replayed) == {m: shown(by_hand(rankings[replayed], relevant)[m]) for m in CARD_METRICS}


CARD_METRICS = ("mrr@10", "hit@10", "recall@10", "ndcg@10")


def _card(at: AppTest, run_id: str) -> dict[str, str]:
    """The metrics card of `run_id` as shown (picked in the Run box above it): value per metric."""
    at = ok(at.selectbox(key="eval_run_view").set_value(run_id).run())
    shown_values = {m.label: m.value for m in at.metric}
    return {m: shown_values[m] for m in CARD_METRICS}


def test_calls_recorded_on_another_knowledge_base_are_left_out_and_the_result_says_so():
    """Issue 34, item 9: two sample-base questions replayed on the Hugo docs counted as 'primary changed 2', and
    the warning vanished on the rerun. Now they are left out by default, and the result says so."""
    calls = pd.DataFrame({"id": ["a", "b", "c"], "kb_fingerprint": ["here", "elsewhere", None]})
    kept, note = replay.on_this_base(calls, "here")
    assert kept["id"].tolist() == ["a", "c"] and note.startswith("1 of 3 calls were recorded on another knowledge base "
                                                                 "and were left out")
    every, said = replay.on_this_base(calls, "here", include_others=True)
    assert len(every) == 3 and "were replayed on this one" in said
    assert replay.on_this_base(calls[calls["id"] != "b"], "here")[1] is None


def test_the_include_other_bases_toggle_replays_as_before_when_every_call_is_of_this_base(env_with_lookups):
    at = _compare()
    at = ok(at.toggle(key="rp_other_bases").set_value(True).run())
    at = ok(at.button(key="rp_start").click().run())
    assert len(at.dataframe(key="rp_table").value) == 20
    assert not any("another knowledge base" in w.value for w in at.warning)
