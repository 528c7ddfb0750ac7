"""Facets (issue 34 item 6): queries keep their own fields, runs store them, and a comparison breaks every metric
down by category and by those fields with Holm-corrected p-values, flagging a group B loses while winning."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from appui.data import runs as runs_data
from eval import compare, datasets, facets, facets_report, replays, runs, storage
from eval.cli import main
from eval.datasets import load_dataset
from eval.query_fields import row_facets
from retrieval import LookupConfig, TraceStore
from tests.facet_helpers import FACETED_QUERIES

CONFIG = LookupConfig(svd_dims=16)


def test_a_jsonl_query_file_keeps_each_rows_own_scalar_fields_as_text(faceted_dataset):
    query = next(q for q in faceted_dataset.queries if q.id == "k2")
    # booleans read true/false; the list `tags` (on k1) and the fields the loader reads are not facets
    assert dict(query.facets) == {"style": "keyword", "trap": "true", "note": "second"}
    first = next(q for q in faceted_dataset.queries if q.id == "k1")
    assert "tags" not in first.facets and "relevant" not in first.facets and "_id" not in first.facets


def test_the_sample_query_file_keeps_its_kind_field():
    dataset = load_dataset("data")
    assert {q.facets.get("kind") for q in dataset.queries} >= {"title", "paraphrase"}


def test_a_beir_query_takes_its_metadata_objects_scalar_values(tmp_path):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "T", "text": "words"}) + "\n")
    rows = [{"_id": "1", "text": "a claim", "metadata": {"source": "pubmed", "year": 2020, "evidence": [1, 2],
                                                         "retracted": False}, "lang": "en"},
            {"_id": "2", "text": "another claim", "metadata": {}}]
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td1\t1\n")
    by_id = {q.id: dict(q.facets) for q in load_dataset(root).queries}
    assert by_id == {"1": {"lang": "en", "source": "pubmed", "year": "2020", "retracted": "false"}, "2": {}}


def test_a_rows_own_field_wins_over_a_metadata_value_of_the_same_name():
    assert row_facets({"_id": "x", "text": "t", "style": "goal", "metadata": {"style": "other", "n": 1.5,
                                                                              "empty": None}}) == \
        {"style": "goal", "n": "1.5"}


def test_a_run_stores_its_questions_facets_in_eval_query(faceted_dataset, store):
    run = runs.run_evaluation(faceted_dataset, CONFIG, store=store, baseline=False, oracle=False)
    stored = storage.load_per_query(store, run.run_id).set_index("query_id")["facets"]
    assert stored["g2"] == {"style": "goal", "trap": "true", "note": "sixth"}
    assert set(stored.index) == {q["_id"] for q in FACETED_QUERIES}


def test_a_replay_of_a_run_keeps_the_runs_facets(faceted_dataset, store):
    from appui.data import replay

    original = runs.run_evaluation(faceted_dataset, CONFIG, store=store, baseline=False, oracle=False)
    index = runs.open_dataset_index(faceted_dataset, CONFIG.svd_dims)
    calls = replay.recorded_calls(store, run_id=original.run_id, limit=100)
    run_id = replay.new_run_id()
    replay.replay(calls, index=index, config=CONFIG, store=store, run_id=run_id)
    replays.save_replay_run(store, run_id, calls, index=index, config=CONFIG.to_dict(), source_run=original.run_id)
    replayed = storage.load_per_query(store, run_id).set_index("query_id")["facets"]
    assert replayed["k4"] == {"style": "keyword", "trap": "true", "note": "fourth"}


def test_holm_matches_values_computed_by_hand():
    # sorted 0.005 ×4 = 0.02, 0.01 ×3 = 0.03, 0.03 ×2 = 0.06, 0.04 ×1 = 0.04 -> kept non-decreasing: 0.06
    assert facets.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert facets.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # at most 1
    assert facets.holm([0.02]) == pytest.approx([0.02]) and facets.holm([]) == []


@settings(max_examples=300, deadline=None, derandomize=True)
@given(p=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12),
       alpha=st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_holm_adjusted_p_values_reject_what_holms_step_down_procedure_rejects(p, alpha):
    """Holm (1979) as a procedure, independent of the adjusted-p formula: sort the p-values, reject the i-th
    smallest while p_(i) <= alpha / (m - i + 1), stop at the first that is not. The adjusted p-values must reject
    exactly those at level alpha."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    rejected = set()
    for rank, i in enumerate(order):
        if p[i] > alpha / (len(p) - rank):
            break
        rejected.add(i)
    adjusted = facets.holm(p)
    assert {i for i, a in enumerate(adjusted) if a <= alpha} == rejected
    assert all(a >= q - 1e-12 and a <= 1.0 for a, q in zip(adjusted, p, strict=True))


def test_b_winning_overall_but_losing_a_category_significantly_is_flagged(constructed_pair):
    comparison = compare.compare_runs(TraceStore(constructed_pair["traces"]), constructed_pair["a"],
                                      constructed_pair["b"])
    assert comparison.metrics["ndcg@10"]["delta"] > 0  # B wins overall
    table = comparison.facets.table("category", "ndcg@10")
    billing = next(r for r in table.rows if r.value == "billing")
    assert (billing.n, billing.mean_a, billing.mean_b, billing.delta) == (10, 1.0, 0.6, -0.4)
    assert billing.p_holm < 0.05 and billing.p_holm >= billing.p and billing.flagged
    alerting = next(r for r in table.rows if r.value == "alerting")
    assert alerting.delta == 0.5 and not alerting.flagged  # a significant gain is not flagged
    assert any("loses category = billing significantly" in flag for flag in comparison.facets.flags())


def test_the_holm_family_is_one_facet_on_one_metric(constructed_pair):
    comparison = compare.compare_runs(TraceStore(constructed_pair["traces"]), constructed_pair["a"],
                                      constructed_pair["b"])
    rows = comparison.facets.table("style", "ndcg@10").rows
    assert [r.p_holm for r in rows] == pytest.approx(facets.holm([r.p for r in rows]), abs=1e-6)


def test_a_field_with_a_value_per_question_is_skipped_and_said_why(constructed_pair):
    breakdown = compare.compare_runs(TraceStore(constructed_pair["traces"]), constructed_pair["a"],
                                     constructed_pair["b"]).facets
    assert breakdown.facets == ("category", "style")
    assert breakdown.skipped == {"note": "40 distinct values (more than 30): an id or free text"}


def test_a_value_with_one_question_gets_no_test():
    paired = pd.DataFrame({"ndcg@10_a": [1.0, 1.0, 1.0, 0.0], "ndcg@10_b": [0.0, 0.0, 0.0, 1.0],
                           "categories_a": [["x"], ["x"], ["x"], ["y"]], "facets_a": [None] * 4})
    breakdown = facets.facet_breakdown(paired, ["ndcg@10"], {"ndcg@10": -0.5}, lambda diff: 0.25)
    rows = {r.value: r for r in breakdown.table("category", "ndcg@10").rows}
    assert rows["y"].n == 1 and rows["y"].p is None and rows["y"].p_holm is None
    assert rows["x"].p == 0.25 and rows["x"].p_holm == 0.25  # a family of one


def test_no_category_anywhere_skips_the_category_facet():
    paired = pd.DataFrame({"m_a": [1.0, 0.0], "m_b": [0.0, 1.0], "categories_a": [[], []],
                           "facets_a": [{"style": "a"}, {"style": "b"}]})
    breakdown = facets.facet_breakdown(paired, ["m"], {"m": 0.0}, lambda diff: 1.0)
    assert breakdown.skipped["category"] == "no question has a category" and breakdown.facets == ()  # style: 1 each


def test_asking_for_a_facet_the_questions_do_not_carry_is_an_error(constructed_pair, capsys):
    code = main(["compare", constructed_pair["a"], constructed_pair["b"], "--traces",
                 str(constructed_pair["traces"]), "--facets", "colour"])
    assert code == 2
    said = capsys.readouterr().err
    assert "unknown facet 'colour'; the compared runs' questions carry: category, style, note" in said


def test_asking_for_an_id_like_field_as_a_facet_says_why_it_cannot(constructed_pair, capsys):
    code = main(["compare", constructed_pair["a"], constructed_pair["b"], "--traces",
                 str(constructed_pair["traces"]), "--facets", "note"])
    assert code == 2 and "facet 'note' cannot break the comparison down: 40 distinct values" in capsys.readouterr().err


def test_compare_json_has_the_facets(constructed_pair, capsys):
    assert main(["compare", constructed_pair["a"], constructed_pair["b"], "--traces",
                 str(constructed_pair["traces"]), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["facets"]
    assert found["facets"] == ["category", "style"] and "Holm" in found["family"]
    billing = next(r for r in found["by_facet"]["category"]["ndcg@10"] if r["value"] == "billing")
    assert billing["flagged"] is True and billing["n"] == 10 and billing["p_holm"] < 0.05
    assert len(found["flags"]) == 2  # billing by category, keyword by style


def test_compare_facets_chooses_and_no_facets_leaves_them_out(constructed_pair, capsys):
    args = ["compare", constructed_pair["a"], constructed_pair["b"], "--traces", str(constructed_pair["traces"]),
            "--json"]
    assert main([*args, "--facets", "style"]) == 0
    assert list(json.loads(capsys.readouterr().out)["facets"]["by_facet"]) == ["style"]
    assert main([*args, "--no-facets"]) == 0
    assert json.loads(capsys.readouterr().out)["facets"] is None
    assert main([*args, "--no-facets", "--facets", "style"]) == 2
    assert "not both" in capsys.readouterr().err


def test_compare_markdown_has_a_table_per_facet_and_the_flag(constructed_pair, capsys):
    assert main(["compare", constructed_pair["a"], constructed_pair["b"], "--traces",
                 str(constructed_pair["traces"])]) == 0
    text = capsys.readouterr().out
    assert "## Facets" in text and "### By category" in text and "### By style" in text
    assert "| metric | value | n | A | B | delta | p | Holm p | flag |" in text
    assert "| ndcg@10 | billing | 10 | 1 | 0.600 | -0.400 |" in text and facets_report.FLAG in text
    assert "not a facet: note (40 distinct values" in text


def test_a_significant_group_loss_is_coloured_as_the_pages_deltas(constructed_pair):
    comparison = compare.compare_runs(TraceStore(constructed_pair["traces"]), constructed_pair["a"],
                                      constructed_pair["b"])
    table = comparison.facets.table("category", "ndcg@10")
    frame = facets_report.table_frame(table).rename(columns={"delta": "Δ (B − A)"})
    frame["significance"] = facets_report.significance_column(table)
    billing = frame[frame["value"] == "billing"].iloc[0]
    assert billing["significance"].startswith("B worse, significant")
    assert "cf222e" in runs_data.colour_significant(billing)[list(frame.columns).index("Δ (B − A)")]


def test_a_query_keeps_equal_and_frozen_semantics_with_facets():
    a = datasets.Query("q", "t", {"p": 1.0}, facets={"style": "goal"})
    assert a == datasets.Query("q", "t", {"p": 1.0}, facets={"style": "goal"})
    assert a != datasets.Query("q", "t", {"p": 1.0})
    with pytest.raises(AttributeError):
        a.facets = {}  # type: ignore[misc]
