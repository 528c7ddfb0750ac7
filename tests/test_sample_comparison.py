"""The first comparison the README, the docs and the app suggest on the sample (eval.defaults.SAMPLE_GRID, the L0
filter on and off) moves results there: the filter is in force on some questions, helps on some and hurts on
others, as data/README.md says; and every place that suggests a sweep of the sample suggests this one."""

from __future__ import annotations

import json
import re
from pathlib import Path

from eval import cli
from eval.defaults import SAMPLE_GRID
from tests.app_helpers import ok, run_app

ROOT = Path(__file__).resolve().parents[1]
SUGGESTING = ("README.md", "docs/evaluation.md", "docs/cli.md", "docs/parallel.md")
SAMPLE_SWEEP = re.compile(r"python -m eval sweep --dataset data (.*)")


def _cli(args: list[str], capsys) -> str:
    code = cli.main([str(a) for a in args])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    return out


def _documented(row: str) -> set[str]:
    """The question ids data/README.md's filter table names in its `helps` or `hurts` row."""
    line = next(v for v in (ROOT / "data" / "README.md").read_text(encoding="utf-8").splitlines()
                if v.startswith(f"| {row} |"))
    return set(re.findall(r"`(q\d+)`", line.split("|")[2]))


def test_the_suggested_sample_comparison_moves_results(tmp_path, capsys):
    traces = tmp_path / "traces.duckdb"
    runs = json.loads(_cli(["sweep", "--dataset", ROOT / "data", "--grid", SAMPLE_GRID, "--traces", traces,
                            "--no-progress", "--json"], capsys))
    assert [r["overrides"] for r in runs] == [{"l0_filter": True}, {"l0_filter": False}]
    on, off = runs
    assert on["diagnostics"]["filter_decisions"]["applied"] >= 10  # the filter is in force on the sample
    assert "applied" not in off["diagnostics"]["filter_decisions"]
    assert on["metrics"] != off["metrics"]  # the two runs' means differ

    compared = json.loads(_cli(["compare", on["run_id"], off["run_id"], "--traces", traces, "--json",
                                "--limit", "100", "--no-facets"], capsys))
    ndcg = compared["metrics"]["ndcg@10"]
    assert ndcg["wins"] >= 1 and ndcg["losses"] >= 1 and ndcg["ties"] < ndcg["n"]
    # B is the filter off: a loss of B is a question the filter helps, a win of B one it hurts
    helped = {q["query_id"] for q in compared["losses"] if q["ndcg@10_delta"] < 0}
    assert helped and all(q["filter_decision_a"] == "applied" for q in compared["losses"] if q["query_id"] in helped)
    swapped = json.loads(_cli(["compare", off["run_id"], on["run_id"], "--traces", traces, "--json",
                               "--limit", "100", "--no-facets"], capsys))
    hurt = {q["query_id"] for q in swapped["losses"] if q["ndcg@10_delta"] < 0}
    assert hurt and all(q["filter_decision_b"] == "applied" for q in swapped["losses"] if q["query_id"] in hurt)
    assert len(helped) == ndcg["losses"] and len(hurt) == ndcg["wins"]
    # the questions data/README.md names as the ones the filter helps and hurts are the ones it does
    assert (helped, hurt) == (_documented("helps"), _documented("hurts"))


def test_the_docs_suggest_the_moving_grid_first():
    for name in SUGGESTING:
        lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        first = next((m.group(1) for m in map(SAMPLE_SWEEP.search, lines) if m), None)
        assert first is not None and SAMPLE_GRID in re.findall(r"--grid (\S+)", first), (name, first)
    app_page = " ".join((ROOT / "docs" / "app.md").read_text(encoding="utf-8").split())
    assert f"a sweep over a grid (`{SAMPLE_GRID}`" in app_page


def test_the_apps_sweep_box_starts_with_the_suggested_grid(env):
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at = ok(at.radio(key="eval_mode").set_value("Sweep").run())
    assert at.text_area(key="eval_grid").value == SAMPLE_GRID
