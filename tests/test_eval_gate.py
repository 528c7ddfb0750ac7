"""Issue 34, item 7: `python -m eval compare A B --fail-on-regression METRIC:TOLERANCE` exits 1 when B is worse
than A by more than the tolerance and significantly, saying why; otherwise the comparison passes (exit 0)."""

from __future__ import annotations

import json

import pytest

from eval.cli import main
from eval.gate import parse_tolerances
from retrieval.paths import PROJECT_ROOT


def test_a_significant_loss_beyond_the_tolerance_exits_1_saying_why(two_runs, capsys):
    traces, a, b = two_runs
    capsys.readouterr()
    assert main(["compare", a, b, "--traces", traces, "--fail-on-regression", "ndcg@10:0.01"]) == 1
    out, err = capsys.readouterr()
    assert "# Comparison" in out  # the comparison is still printed
    assert err.strip().splitlines()[-1].startswith("regression: ndcg@10: B is ")
    assert "significant (p = " in err and "tolerance 0.01" in err


def test_a_loss_within_the_tolerance_or_a_gain_passes(two_runs, capsys):
    traces, a, b = two_runs
    assert main(["compare", a, b, "--traces", traces, "--fail-on-regression", "ndcg@10:1"]) == 0
    capsys.readouterr()
    assert main(["compare", b, a, "--traces", traces, "--fail-on-regression", "ndcg@10:0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run_a"] == b


@pytest.mark.parametrize(("item", "message"), [("ndcg@10", "expects METRIC:TOLERANCE"),
                                                ("ndcg@10:-1", "expects METRIC:TOLERANCE"),
                                                (":0.1", "expects METRIC:TOLERANCE")])
def test_a_bad_tolerance_is_refused(item, message):
    with pytest.raises(ValueError, match=message):
        parse_tolerances([item])


def test_a_metric_the_comparison_lacks_is_an_error_not_a_pass(two_runs, capsys):
    traces, a, b = two_runs
    assert main(["compare", a, b, "--traces", traces, "--fail-on-regression", "recall@100:0.1"]) == 2
    assert "which the comparison does not hold" in capsys.readouterr().err


def test_reports_count_no_default_as_a_change_and_print_no_html_entities(two_runs, tmp_path, capsys):
    """Issue 34, item 9: 'settings changed: l0_filter = True' named a default; `eval compare` printed 'p &lt;'."""
    traces, a, b = two_runs
    assert main(["run", "--dataset", str(PROJECT_ROOT / "data"), "--traces", traces, "--no-progress", "--no-oracle",
                 "--no-baseline", "--no-attribution", "--set", "l0_filter=true", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["report", run_id, "--traces", traces]) == 0
    assert "settings changed: none (defaults)" in capsys.readouterr().out
    assert main(["compare", a, b, "--traces", traces]) == 0
    assert "&lt;" not in capsys.readouterr().out


def test_the_gate_stops_a_dense_weight_that_loses_and_the_comparison_names_the_setting(tmp_path, capsys):
    """The dense part's settings are settings like any other: a run that only raises l1_dense_weight (the weight-free
    hash:32 encoder, at 100 it swamps L1) is gated as any losing change is, and its diff names the weight."""
    traces, ids = str(tmp_path / "t.duckdb"), []
    for weight in ("1", "100"):
        assert main(["run", "--dataset", str(PROJECT_ROOT / "data"), "--traces", traces, "--no-progress", "--no-oracle",
                     "--no-baseline", "--no-attribution", "--metrics", "ndcg@10,mrr@10", "--json",
                     "--set", "l1_dense_model=hash:32", "--set", f"l1_dense_weight={weight}"]) == 0
        ids.append(json.loads(capsys.readouterr().out)["run_id"])
    assert main(["compare", *ids, "--traces", traces, "--fail-on-regression", "ndcg@10:0.01", "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["config_diff"] == {"l1_dense_weight": [1.0, 100.0]}
    assert err.strip().splitlines()[-1].startswith("regression: ndcg@10: B is ")
    assert main(["compare", ids[1], ids[0], "--traces", traces, "--fail-on-regression", "ndcg@10:0.01"]) == 0
