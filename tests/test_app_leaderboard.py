"""The Compare page's Leaderboard tab (issue 34, item 8): one dataset's runs side by side, run B's dataset by
default, the differing settings as columns, a split to narrow to, and a metric's line over time."""

from __future__ import annotations

import json

import pandas as pd
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from appui.panels.leaderboard import ALL_SPLITS
from tests.app_helpers import APP, ok
from tests.kb_fixture import write_kb


def _board(at):
    """The `lb_table` dataframe (a plain st.dataframe's key is not surfaced by AppTest: found by its columns)."""
    return next(d.value for d in at.dataframe if {"run_id", "label", "base", "n_queries"} <= set(d.value.columns))


def _trend_chart(at) -> tuple[dict, pd.DataFrame]:
    """The leaderboard's line chart: its Vega-Lite spec and the rows it draws."""
    chart = next(c.proto for c in at.get("vega_lite_chart")
                 if '"line"' in c.proto.spec and "created_at" in c.proto.spec)
    return json.loads(chart.spec), convert_arrow_bytes_to_pandas_df(chart.datasets[0].data.data)


def test_the_leaderboard_shows_run_bs_dataset_with_the_differing_setting_as_a_column(app, stored):
    b = app.selectbox(key="eval_run_b").value
    assert b in stored["sweep"]
    assert app.selectbox(key="lb_dataset").value == "one" and app.selectbox(key="lb_dataset").options == ["two", "one"]
    board = _board(app)
    assert set(board["run_id"]) == set(stored["sweep"])
    assert "l0_filter" in board.columns and sorted(board["l0_filter"].tolist()) == [False, True]
    assert board["ndcg@10"].is_monotonic_decreasing
    assert any("settings that differ: `l0_filter`" in m.value for m in app.markdown)


def test_picking_another_dataset_and_a_split_narrows_the_leaderboard(app, stored):
    at = ok(app.selectbox(key="lb_dataset").set_value("two").run())
    board = _board(at)
    assert board["run_id"].tolist() == [stored["other"]] and "l0_filter" not in board.columns
    assert at.selectbox(key="lb_split").options == [ALL_SPLITS, "all"]
    at = ok(at.selectbox(key="lb_split").set_value("all").run())
    assert _board(at)["run_id"].tolist() == [stored["other"]]
    assert any("(split `all`)" in m.value for m in at.markdown)


def test_the_chart_draws_the_picked_metric_over_time_with_each_runs_id_in_the_tooltip(app, stored):
    assert app.selectbox(key="lb_metric").value == "ndcg@10"
    at = ok(app.selectbox(key="lb_metric").set_value("recall@10").run())
    spec, drawn = _trend_chart(at)
    assert spec["encoding"]["y"]["title"] == "recall@10"
    assert [t["field"] for t in spec["encoding"]["tooltip"]][:2] == ["run_id", "label"]
    assert drawn["run_id"].tolist() == stored["sweep"]  # oldest first
    assert drawn["created_at"].is_monotonic_increasing and drawn["value"].between(0, 1).all()
    assert any(c.value.startswith("Trend of recall@10 over 2 run(s): first ") for c in at.caption)


def test_runs_of_another_knowledge_base_are_flagged_on_the_page(ranked_store, tmp_path, monkeypatch):
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_KB", str(write_kb(tmp_path / "kb")))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(ranked_store.path))
    ranked_store.close()
    at = ok(AppTest.from_file(APP, default_timeout=60).run())
    at = ok(at.switch_page("appui/pages/compare.py").run())
    at = ok(at.selectbox(key="lb_dataset").set_value("twin").run())
    assert len(set(_board(at)["base"])) == 2
    assert [w.value.split(" (")[0] for w in at.warning if "knowledge bases" in w.value] == [
        "The runs of dataset twin were made on 2 different knowledge bases"]


def test_the_metric_columns_come_first_beside_the_runs_label(app, stored):
    """Issue 49, item 10: the metrics started off-screen, after the ids, the date, the sweep and the base."""
    board = _board(app)
    figures = [c for c in board.columns if "@" in c]  # every metric, and the BM25 baseline's
    assert "ndcg@10" in figures and board.columns.tolist()[:len(figures) + 1] == ["label", *figures]
    assert board.columns.tolist().index("run_id") > board.columns.tolist().index("n_queries")


def test_a_single_runs_sweep_id_reads_a_dash_not_none(app, stored):
    """Issue 49, item 9: a run made outside a sweep read "None" in the sweep_id column."""
    at = ok(app.selectbox(key="lb_dataset").set_value("two").run())
    board = _board(at)
    assert board["sweep_id"].tolist() == ["—"]
    assert not board.drop(columns=[c for c in board.columns if "@" in c]).isna().any().any()
