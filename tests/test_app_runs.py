"""Comparisons you can trust (AppTest + the plain helpers): one dataset and base per comparison, new runs
select themselves, a metrics card per run, deltas in words and colour, the per-query table's lead columns,
relevant documents marked side by side, and the sorted per-query delta chart."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from appui.data import runs as runs_data
from eval import runs
from eval.compare import significance_words
from retrieval import TraceStore
from tests.app_helpers import ok, select


def test_pickers_offer_only_runs_of_one_dataset_and_base(app, stored):
    groups = app.selectbox(key="eval_group").options
    assert len(groups) == 2 and all("base " in g for g in groups)
    at = ok(app.selectbox(key="eval_group").set_value(next(g for g in groups if "one" in g)).run())
    offered = {o.split(" · ")[0] for key in ("eval_run_a", "eval_run_b") for o in at.selectbox(key=key).options}
    assert offered == set(stored["sweep"])


def test_a_run_from_another_dataset_is_refused(app, stored):
    assert app.selectbox(key="eval_run_b").value in stored["sweep"]  # the newest group with two runs
    at = ok(app.selectbox(key="eval_group").set_value(next(
        g for g in app.selectbox(key="eval_group").options if "two" in g)).run())
    assert at.selectbox(key="eval_run_a").value == at.selectbox(key="eval_run_b").value == stored["other"]
    assert any("Only one run" in i.value for i in at.info)
    assert "eval_pairs" not in [getattr(d, "key", None) for d in at.dataframe]
    table = runs_data.run_table(TraceStore(stored["traces"]), runs.list_runs(TraceStore(stored["traces"])))
    with pytest.raises(runs_data.IncomparableRunsError, match="compare runs of one dataset and knowledge base"):
        runs_data.check_comparable(table, stored["sweep"][0], stored["other"])


def test_a_new_sweep_selects_its_runs(app, stored):
    app.text_input(key="eval_dataset").set_value(str(stored["one"]))
    at = ok(app.radio(key="eval_mode").set_value("Sweep").run())
    at.text_area(key="eval_grid").set_value("top_k=3,4")
    at = ok(at.button(key="eval_start").click().run())
    new = at.session_state["eval_last"]
    assert len(new) == 2
    assert [at.selectbox(key="eval_run_a").value, at.selectbox(key="eval_run_b").value] == [new[0], new[1]]
    assert at.selectbox(key="eval_run_view").value == new[1]


def test_each_run_shows_a_metrics_card_with_the_oracle_headroom(shown_compare_page):
    app = shown_compare_page  # read only
    labels = {m.label for m in app.metric}
    assert "ndcg@10" in labels
    assert any("oracle headroom" in str(m.proto.delta) for m in app.metric)


def test_deltas_are_coloured_and_say_significance_in_words(shown_compare_page):
    app = shown_compare_page  # read only
    deltas = next(d.value for d in app.dataframe if "significance" in d.value.columns)
    assert all(s.startswith(("B better", "B worse", "no difference")) for s in deltas["significance"])
    assert significance_words(0.003, 0.2) == "B better, significant (p = 0.003)"
    assert significance_words(0.4, -0.1) == "B worse, not significant (p = 0.4)"
    assert significance_words(1.0, 0.0) == "no difference"
    assert "1a7f37" in runs_data.colour_delta(0.1) and "cf222e" in runs_data.colour_delta(-0.1)
    assert runs_data.colour_delta(0.0) == ""


def test_per_query_table_leads_with_query_rank_delta_filters_and_true_category(app):
    pairs = app.dataframe(key="eval_pairs").value
    assert pairs.columns.tolist() == runs_data.LEAD
    assert all(" → " in r for r in pairs["rank A → B"])
    at = ok(app.multiselect(key="eval_pairs_columns").set_value(["query_id", "retrieval_layer_a"]).run())
    assert at.dataframe(key="eval_pairs").value.columns.tolist() == runs_data.LEAD + ["query_id", "retrieval_layer_a"]


def test_side_by_side_marks_relevant_documents_and_shows_top_5(app):
    at = ok(select(app, "eval_pairs", 0))
    assert at.number_input(key="eval_pair_top").value == 5
    text = "\n".join(m.value for m in at.markdown)
    assert ":green-badge[relevant]" in text
    at = ok(at.number_input(key="eval_pair_top").set_value(1).run())
    cards = [m.value for m in at.markdown if m.value.startswith("**2. ")]
    assert not cards
    assert any("more stored block(s) not shown" in c.value for c in at.caption)  # says what is stored


def test_a_pairs_drill_down_gives_each_relevant_pages_rank_and_stage_in_a_and_b(app):
    at = ok(select(app, "eval_pairs", 0))
    pages = next(d.value for d in at.dataframe if "stage A" in d.value.columns)
    assert pages.columns.tolist() == ["relevant page", "rank A", "stage A", "rank B", "stage B"]
    assert len(pages) >= 1 and set(pages["stage A"]) <= {"returned", "not_in_kb", "filtered_out", "below_min_score",
                                                         "not_in_pool", "below_top_k", "merged"}
    returned = pages[pages["stage A"] == "returned"]
    assert returned["rank A"].notna().all()


def test_per_query_deltas_chart_is_sorted(shown_compare_page):
    app = shown_compare_page  # read only
    specs = [json.loads(c.proto.spec) for c in app.get("vega_lite_chart")]
    charted = any("Δ" in json.dumps(spec, ensure_ascii=False) and "order" in json.dumps(spec) for spec in specs)
    tied = any("paired queries tie on" in c.value for c in app.caption)
    assert charted != tied  # a chart when some query moved; the sentence, not a flat line, when none did
    frame = pd.DataFrame({"query_id": ["a", "b", "c"], "query": ["x", "y", "z"], "m_delta": [0.5, -1.0, 0.0]})
    out = runs_data.sorted_deltas(frame, "m")
    assert out["query_id"].tolist() == ["b", "c", "a"] and out["order"].tolist() == [1, 2, 3]


def test_typing_the_id_of_a_run_from_another_dataset_is_refused_on_the_page(app, stored):
    before = app.selectbox(key="eval_run_b").value
    at = app.text_input(key="eval_run_other").set_value(stored["other"]).run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"Refused: run {app.selectbox(key='eval_run_a').value} is on "
        f"{next(g for g in at.selectbox(key='eval_group').options if 'one' in g)} but run {stored['other']} is on "
        f"{next(g for g in at.selectbox(key='eval_group').options if 'two' in g)}; "
        "compare runs of one dataset and knowledge base."]
    assert at.selectbox(key="eval_run_b").value == before  # B is unchanged


def test_typing_a_run_id_of_the_same_dataset_makes_it_b(app, stored):
    run_a = app.selectbox(key="eval_run_a").value
    other = next(r for r in stored["sweep"] if r != run_a)
    at = ok(app.selectbox(key="eval_run_b").set_value(run_a).run())
    at = ok(at.text_input(key="eval_run_other").set_value(other[:-2]).run())  # a unique prefix is enough
    assert at.selectbox(key="eval_run_b").value == other
    assert [s.value for s in at.success] == [f"Run B is now {other}."]


def test_typing_an_unknown_run_id_says_so():
    table = pd.DataFrame({"run_id": ["run-1", "run-2"], "group": ["g", "g"]})
    with pytest.raises(runs_data.IncomparableRunsError, match="no stored run has the id 'nope'"):
        runs_data.resolve_run(table, "nope")
    with pytest.raises(runs_data.IncomparableRunsError, match="starts 2 runs"):
        runs_data.resolve_run(table, "run-")
    assert runs_data.resolve_run(table, " run-2 ") == "run-2"


def test_the_compare_page_shows_a_runs_answerability_and_runs_with_an_unanswerable_file(app, stored, tmp_path):
    app.text_input(key="eval_dataset").set_value(str(stored["one"]))
    app.text_input(key="eval_unanswerable").set_value(str(_off_topic_file(tmp_path)))
    at = ok(app.button(key="eval_start").click().run())
    labels = {m.label for m in at.metric}
    assert {"unanswerable graded high", "AUROC", "high: relevant first"} <= labels
    frames = [d.value for d in at.dataframe]  # a plain st.dataframe's key is not surfaced by AppTest
    levels = next(f for f in frames if "unanswerable: off_topic" in f.columns)
    assert levels["level"].tolist() == ["high", "medium", "low", "none"]
    shown = next(f for f in frames if "figure" in f.columns)
    assert "AUROC of confidence, answered vs unanswerable" in shown["figure"].tolist()


def _off_topic_file(tmp_path):
    path = tmp_path / "off_topic.jsonl"
    path.write_text("".join(json.dumps({"_id": f"u{i}", "text": text}) + "\n" for i, text in
                            enumerate(("best sourdough starter ratio", "who won the 1998 world cup"))))
    return path


def test_only_significant_deltas_are_coloured_and_an_all_tied_comparison_says_so():
    """Issue 34, item 9: a non-significant gain of 0.0004 was bold green; all-tied queries drew a flat line."""
    rows = runs_data.deltas_table({
        "ndcg@10": {"mean_a": 0.5, "mean_b": 0.5004, "delta": 0.0004, "wins": 1, "ties": 9, "losses": 0,
                    "p_randomization": 0.5},
        "mrr@10": {"mean_a": 0.5, "mean_b": 0.6, "delta": 0.1, "wins": 9, "ties": 1, "losses": 0,
                   "p_randomization": 0.002}})
    styles = [runs_data.colour_significant(row) for _, row in rows.iterrows()]
    delta = list(rows.columns).index("Δ (B − A)")
    assert styles[0][delta] == "" and "1a7f37" in styles[1][delta]
    tied = pd.DataFrame({"query_id": ["q1", "q2"], "ndcg@10_delta": [0.0, 0.0]})
    assert runs_data.tied_note(tied, "ndcg@10") == ("All 2 paired queries tie on ndcg@10: no query moved, so there "
                                                    "is nothing to chart.")
    assert runs_data.tied_note(tied.assign(**{"ndcg@10_delta": [0.0, 0.1]}), "ndcg@10") is None


def test_the_stored_runs_table_and_the_headroom_table_never_read_none(shown_compare_page):
    """Issue 49, item 9: a run made outside a sweep read "None" in the stored runs' sweep_id column."""
    frames = [d.value for d in shown_compare_page.dataframe]
    stored_runs = next(f for f in frames if {"sweep_id", "overrides"} <= set(f.columns))
    headroom = next(f for f in frames if "oracle filter" in f.columns)
    assert "—" in stored_runs["sweep_id"].tolist() and not stored_runs["sweep_id"].isna().any()
    assert not headroom.isna().any().any()
    assert any("a single run, not part of a sweep" in c.value for c in shown_compare_page.caption)
