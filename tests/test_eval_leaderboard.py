"""Issue 34, item 8, "many runs at once": every complete run of one dataset side by side (eval.leaderboard), the
settings that differ, every metric, sortable, a metric's trend, and `python -m eval runs --dataset X
--leaderboard` (text and --json; bad input exits 2)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from eval import datasets, runs
from eval.cli import main
from eval.leaderboard import CREATED, LEAD, leaderboard
from eval.storage import delete_run, list_runs
from retrieval import LookupConfig, TraceStore
from tests.eval_helpers import write_dataset


def _board(ranked, dataset="set", **kwargs):
    return leaderboard(TraceStore(ranked["traces"]), dataset, **kwargs)


def test_runs_differing_in_one_setting_have_only_that_setting_as_a_column(ranked):
    board = _board(ranked)
    assert board.settings == ("l1_enabled",)
    others = set(board.rows.columns) - set(LEAD) - set(board.metrics) - {"n_queries", board.baseline_column}
    assert others == {"l1_enabled"}
    assert set(board.rows["run_id"]) == {*ranked["sweep"], ranked["later"]}  # the incomplete run is left out
    by_run = board.rows.set_index("run_id")
    assert dict(zip(board.rows["run_id"], board.rows["l1_enabled"].tolist(), strict=True)) == {
        ranked["sweep"][0]: True, ranked["sweep"][1]: False, ranked["later"]: False}
    assert by_run.loc[ranked["later"], "label"] == "l1_enabled=false"
    assert set(by_run.loc[ranked["sweep"], "sweep_id"].dropna()) and pd.isna(by_run.loc[ranked["later"], "sweep_id"])


def test_the_leaderboard_is_sorted_by_the_first_metric_best_first_and_ties_newest_first(ranked):
    board = _board(ranked)
    assert board.primary_metric == board.sort == "ndcg@10" == board.metrics[0]
    values = board.rows["ndcg@10"].tolist()
    assert values == sorted(values, reverse=True) and values[0] > values[-1]
    assert board.rows["run_id"].iloc[0] == ranked["sweep"][0]  # L1 on is best on this set
    # the two runs with L1 off score alike: the later one first
    assert board.rows["run_id"].tolist()[1:] == [ranked["later"], ranked["sweep"][1]]


def test_sorting_by_another_metric_or_by_creation(ranked):
    by_p = _board(ranked, sort="p@10")
    assert by_p.rows["p@10"].is_monotonic_decreasing and by_p.sort == "p@10"
    newest = _board(ranked, sort=CREATED)
    assert newest.rows["run_id"].tolist() == [ranked["later"], ranked["sweep"][1], ranked["sweep"][0]]
    assert newest.rows["created_at"].is_monotonic_decreasing


def test_metrics_are_the_runs_means_and_the_baselines_primary_metric(ranked):
    store = TraceStore(ranked["traces"])
    board = leaderboard(store, "set")
    listed = list_runs(store).set_index("run_id")
    for _, row in board.rows.iterrows():
        for metric in board.metrics:
            assert row[metric] == pytest.approx(listed.loc[row["run_id"], metric])
    baseline = json.loads(store.query("SELECT baseline FROM eval_run WHERE run_id = ?",
                                      [ranked["later"]])["baseline"].iloc[0])
    assert board.rows.set_index("run_id").loc[ranked["later"], "bm25:ndcg@10"] == pytest.approx(baseline["ndcg@10"])


def test_an_unknown_dataset_is_an_error_listing_the_datasets_of_the_file(ranked):
    with pytest.raises(ValueError, match="no runs of dataset 'nope' in .*; its datasets are set, stopped, twin"):
        _board(ranked, "nope")


def test_an_unknown_sort_metric_or_split_says_what_there_is(ranked):
    with pytest.raises(ValueError, match=r"cannot sort by 'ndcg@99': .* have the metrics ndcg@10, .*'created'"):
        _board(ranked, sort="ndcg@99")
    with pytest.raises(ValueError, match="dataset 'set' has no runs of split 'train'; its splits are all"):
        _board(ranked, split="train")
    assert len(_board(ranked, split="all").rows) == 3


def test_a_dataset_whose_runs_all_stopped_says_so(ranked):
    with pytest.raises(ValueError, match="dataset 'stopped' has 1 run.* but none is complete"):
        _board(ranked, "stopped")


def test_runs_on_another_knowledge_base_are_flagged(ranked):
    board = _board(ranked, "twin")
    assert set(board.rows["run_id"]) == set(ranked["twins"])
    bases = board.rows["base"].tolist()
    assert len(set(bases)) == 2 and all(isinstance(b, str) and len(b) == 12 for b in bases)
    assert board.settings == ()
    assert [n.split(" (")[0] for n in board.notes] == [
        "warning: the runs of dataset twin were made on 2 different knowledge bases"]
    assert "metric differences may come from the pages, not the settings" in board.notes[0]
    assert not _board(ranked).notes  # one base: no warning


def test_a_dataset_with_one_run_is_a_leaderboard_of_one(ranked_store, ranked):
    delete_run(ranked_store, ranked["twins"][1])
    board = leaderboard(ranked_store, "twin")
    assert board.rows["run_id"].tolist() == [ranked["twins"][0]] and board.settings == () and not board.notes
    assert board.header().startswith("leaderboard of dataset twin: 1 complete run(s), by ndcg@10, best first; "
                                     "settings that differ: none")
    assert len(board.trend_lines()) == 2


def test_a_setting_an_old_run_did_not_record_reads_as_its_default(ranked_store, ranked):
    """A run stored before a setting existed (its config lacks the field) and an `svd_dims` of the default index
    written out (256) are no differences."""
    run_id = ranked["sweep"][0]
    config = json.loads(ranked_store.query("SELECT config FROM eval_run WHERE run_id = ?", [run_id])["config"][0])
    del config["filter_widen_ratio"]
    config["svd_dims"] = 256
    with ranked_store.connect() as con:
        con.execute("UPDATE eval_run SET config = ? WHERE run_id = ?", [json.dumps(config), run_id])
    assert leaderboard(ranked_store, "set").settings == ("l1_enabled",)


def test_the_trend_is_the_metric_over_time_oldest_first(ranked):
    board = _board(ranked)
    trend = board.trend("mrr@10")
    assert trend["run_id"].tolist() == [*ranked["sweep"], ranked["later"]]
    assert trend["created_at"].is_monotonic_increasing and list(trend.columns) == ["run_id", "created_at", "label",
                                                                                 "mrr@10"]
    lines = board.trend_lines("ndcg@10")
    first = board.trend()["ndcg@10"]
    assert lines[0] == (f"trend of ndcg@10 over 3 run(s): first {first.iloc[0]:.4f} ({ranked['sweep'][0]}), last "
                        f"{first.iloc[-1]:.4f} ({ranked['later']}), best {first.max():.4f} ({ranked['sweep'][0]})")
    assert len(lines) == 4 and lines[2].split()[-2].startswith("-")  # the second run lost ndcg@10
    with pytest.raises(ValueError, match="no metric 'ndcg@99' in the leaderboard of set"):
        board.trend("ndcg@99")


def _cli(ranked, capsys, *args):
    code = main(["runs", *args, "--traces", str(ranked["traces"])])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_leaderboard_prints_a_header_an_aligned_table_and_the_trend(ranked, capsys):
    code, out, err = _cli(ranked, capsys, "--dataset", "set", "--leaderboard")
    lines = out.splitlines()
    assert code == 0 and not err
    assert lines[0] == ("leaderboard of dataset set: 3 complete run(s), by ndcg@10, best first; settings that "
                        "differ: l1_enabled")
    assert lines[2].split()[:6] == ["run_id", "created_at", "sweep_id", "label", "base", "l1_enabled"]
    table = lines[3:6]
    assert [row.split()[0] for row in table] == _board(ranked).rows["run_id"].tolist()
    assert len({len(row) for row in lines[2:6]}) == 1  # aligned
    assert lines[7].startswith("trend of ndcg@10 over 3 run(s): first ")


def test_cli_leaderboard_json_is_the_rows_as_records(ranked, capsys):
    code, out, _ = _cli(ranked, capsys, "--dataset", "set", "--leaderboard", "--sort", "created", "--json")
    records = json.loads(out)
    assert code == 0 and [r["run_id"] for r in records] == [ranked["later"], *reversed(ranked["sweep"])]
    assert records[0]["l1_enabled"] is False and records[0]["label"] == "l1_enabled=false"
    assert isinstance(records[0]["ndcg@10"], float) and records[0]["created_at"].startswith("20")


def test_cli_leaderboard_warns_on_stderr_about_another_knowledge_base(ranked, capsys):
    code, out, err = _cli(ranked, capsys, "--dataset", "twin", "--leaderboard", "--json")
    assert code == 0 and len(json.loads(out)) == 2
    assert err.startswith("warning: the runs of dataset twin were made on 2 different knowledge bases")


@pytest.mark.parametrize(("args", "message"), [
    (["--leaderboard"], "error: --leaderboard needs --dataset NAME"),
    (["--dataset", "nope", "--leaderboard"], "error: no runs of dataset 'nope'"),
    (["--dataset", "set", "--leaderboard", "--sort", "speed"], "error: cannot sort by 'speed'"),
    (["--dataset", "set", "--sort", "ndcg@10"], "error: --sort only applies with --leaderboard"),
    (["--split", "all"], "error: --split needs --dataset NAME"),
])
def test_cli_leaderboard_bad_input_is_one_error_line_and_exit_2(ranked, capsys, args, message):
    code, out, err = _cli(ranked, capsys, *args)
    assert code == 2 and not out and err.startswith(message) and err.count("\n") == 1


def test_cli_runs_with_a_dataset_lists_only_its_runs(ranked, capsys):
    code, out, _ = _cli(ranked, capsys, "--dataset", "set", "--json")
    listed = json.loads(out)
    assert code == 0 and {r["dataset"] for r in listed} == {"set"}
    assert {r["run_id"] for r in listed} == {*ranked["sweep"], ranked["later"], "run-stopped-set"}
    code, out, _ = _cli(ranked, capsys, "--dataset", "set", "--incomplete", "--json")
    assert [r["run_id"] for r in json.loads(out)] == ["run-stopped-set"]


def test_a_sweep_over_the_dense_weight_has_the_model_and_the_weight_as_columns(tmp_path):
    store = TraceStore(tmp_path / "traces.duckdb")
    dataset = datasets.load_dataset(write_dataset(tmp_path / "set"))
    plain = runs.run_evaluation(dataset, LookupConfig(), store=store, baseline=False, oracle=False)
    swept = runs.run_sweep(dataset, {"l1_dense_weight": ["0", "2.5"]}, store=store, baseline=False, oracle=False,
                           base_overrides={"l1_dense_model": "hash:32"})
    board = leaderboard(store, "set", sort=CREATED)
    assert board.settings == ("l1_dense_model", "l1_dense_weight")
    rows = board.rows.set_index("run_id")
    assert pd.isna(rows.loc[plain.run_id, "l1_dense_model"])  # unset (— in the text, null in --json)
    assert [rows.loc[r.run_id, "l1_dense_model"] for r in swept] == ["hash:32", "hash:32"]
    assert rows["l1_dense_weight"].to_dict() == {plain.run_id: 1.0, swept[0].run_id: 0.0, swept[1].run_id: 2.5}
    assert rows.loc[plain.run_id, "label"] == "defaults"
    assert [rows.loc[r.run_id, "label"] for r in swept] == ["l1_dense_model=hash:32, l1_dense_weight=0.0",
                                                            "l1_dense_model=hash:32, l1_dense_weight=2.5"]
    assert rows.loc[swept[0].run_id, "sweep_id"] == rows.loc[swept[1].run_id, "sweep_id"] == swept[0].sweep_id
