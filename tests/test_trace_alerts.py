"""Issue 53 items 3 and 5: alerts a scheduler can act on. A breach of `--fail-on` (or a significant change with
`--fail-on-significant`) exits 1 with one line per breach on stderr; bad input (a malformed expression, an
unknown figure, a bad alerts file) exits 2 with one line naming the accepted forms; the alerts file holds both."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from retrieval.cli import main
from retrieval.traces.alerts import Condition, check, load_config, parse_fail_on
from retrieval.traces.changes import changes
from retrieval.traces.figures import NAMES
from retrieval.traces.trends import trends
from tests.trends_helpers import UNTIL

CHANGES = ["traces", "changes", "--window", "7d", "--until", "2026-03-01"]


def _changes(path, *flags):
    return main([*CHANGES, "--traces", str(path), *flags])


def test_fail_on_abstain_share_above_5_percent_exits_1_with_one_line(abstentions_doubled):
    """As a scheduler runs it: a process, its exit status, the report on stdout and one line on stderr."""
    done = subprocess.run([sys.executable, "-m", "retrieval", *CHANGES, "--traces", str(abstentions_doubled),
                           "--fail-on", "abstain_share>0.05"], capture_output=True, text=True, timeout=120,
                          env={**os.environ})
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [done.stderr.strip()] and done.stderr.startswith("abstain_share 0.10")
    assert done.stderr.strip().endswith("> 0.05 (last 7d)") and done.stdout.startswith("What changed")


def test_fail_on_with_no_breach_exits_0(abstentions_doubled, capsys):
    assert _changes(abstentions_doubled, "--fail-on", "abstain_share>0.5,p95_ms>1000,l1_failed_share>=0.5") == 0
    assert capsys.readouterr().err == ""


def test_each_breach_is_its_own_line(abstentions_doubled, capsys):
    assert _changes(abstentions_doubled, "--fail-on", "abstain_share>0.05, p95_ms >= 1, lookups<1") == 1
    lines = capsys.readouterr().err.splitlines()
    assert [line.split()[0] for line in lines] == ["abstain_share", "p95_ms"]


def test_fail_on_significant_exits_1(abstentions_doubled, capsys):
    assert _changes(abstentions_doubled, "--fail-on-significant") == 1
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith("abstain_share changed significantly: abstentions rose from") for line in lines)
    assert all(line.endswith("(last 7d)") for line in lines)


def test_fail_on_significant_names_the_figures_it_watches(abstentions_doubled, capsys):
    assert _changes(abstentions_doubled, "--fail-on-significant", "p95_ms,l1_failed_share") == 0
    assert _changes(abstentions_doubled, "--fail-on-significant", "abstain_share") == 1
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_fail_on_significant_on_a_file_with_no_planted_change_exits_0(steady, capsys):
    assert _changes(steady, "--fail-on-significant") == 0 and capsys.readouterr().err == ""


def test_on_trends_a_condition_applies_to_the_whole_windows_figure(abstentions_doubled, capsys):
    """7.5% abstained over the two weeks (5% then 10%): a threshold of 8% is not breached by the whole window,
    though the last week's buckets are above it."""
    args = ["traces", "trends", "--traces", str(abstentions_doubled), "--since", "14d", "--until", "2026-03-01"]
    assert main([*args, "--fail-on", "abstain_share>0.08"]) == 0
    assert main([*args, "--fail-on", "abstain_share>0.07"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("abstain_share 0.07") and err.endswith("(2026-02-15 00:00 to 2026-03-01 00:00 UTC)")


@pytest.mark.parametrize("expression", ["abstain_share>>0.1", "abstain_share", "abstain_share>ten", "p95_ms=50",
                                        "abstain_share>0.1,", ""])
def test_a_bad_fail_on_expression_exits_2_with_one_line_naming_the_forms(abstentions_doubled, capsys, expression):
    assert _changes(abstentions_doubled, "--fail-on", expression) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "FIGURE OP NUMBER" in err and "> >= < <=" in err


def test_an_unknown_figure_exits_2_with_one_line_naming_the_figures(abstentions_doubled, capsys):
    for flags in (["--fail-on", "abstain_rate>0.1"], ["--fail-on-significant", "p99_ms"]):
        assert _changes(abstentions_doubled, *flags) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "unknown figure" in err and all(n in err for n in NAMES)


def test_an_alerts_file_holds_thresholds_and_significant_figures(abstentions_doubled, tmp_path, capsys):
    config = tmp_path / "alerts.toml"
    config.write_text('fail_on = ["abstain_share>0.05", "p95_ms>1000"]\nsignificant = ["abstain_share"]\n')
    assert _changes(abstentions_doubled, "--fail-on-file", str(config)) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("abstain_share 0.10") and "changed significantly" in lines[1]
    assert [c.op for c in load_config(config)] == [">", ">", "significant"]
    config.write_text("significant = true\n")
    assert load_config(config) == (Condition("*", "significant", None, "any significant change"),)


@pytest.mark.parametrize("text, says", [
    ('fail_on = "abstain_share>0.1"', "fail_on takes a list"),
    ('fail_on = ["abstain_share>"]', "FIGURE OP NUMBER"),
    ('failon = ["abstain_share>0.1"]', "unknown key(s) failon"),
    ("significant = 3", "significant takes true or a list"),
    ("fail_on = [", "not a readable TOML file"),
])
def test_a_bad_alerts_file_exits_2_with_one_line(abstentions_doubled, tmp_path, capsys, text, says):
    config = tmp_path / "alerts.toml"
    config.write_text(text)
    assert _changes(abstentions_doubled, "--fail-on-file", str(config)) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err and str(config) in err


def test_a_missing_alerts_file_exits_2(abstentions_doubled, tmp_path, capsys):
    assert _changes(abstentions_doubled, "--fail-on-file", str(tmp_path / "none.toml")) == 2
    assert "no such file" in capsys.readouterr().err


def test_check_applies_thresholds_to_trends_and_changes(abstentions_doubled):
    conditions = parse_fail_on("abstain_share>0.05,p50_ms<1")
    on_trends = check(conditions, trends(abstentions_doubled, since="7d", until=UNTIL))
    on_changes = check(conditions, changes(abstentions_doubled, window="7d", until=UNTIL))
    assert [b.condition.figure for b in on_trends] == [b.condition.figure for b in on_changes] == ["abstain_share"]
    assert on_trends[0].value == pytest.approx(on_changes[0].value)  # the same last week
