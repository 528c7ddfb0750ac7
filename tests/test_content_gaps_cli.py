"""`python -m retrieval traces gaps`: the report as Markdown or JSON, bad input refused on one line with exit 2, a
window with nothing unanswered said and exit 0. Real processes on real trace files (tests/gaps_helpers.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.paths import SAMPLE_KB
from tests.gaps_helpers import UNTIL

ROOT = Path(__file__).resolve().parents[1]


def _gaps(*flags: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LOOKUP_KNOWLEDGE_TRACES"}
    return subprocess.run([sys.executable, "-m", "retrieval", "traces", "gaps", "--kb", str(SAMPLE_KB), *flags],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_gaps_json_lists_the_planted_topic_first(planted_traces, planted_gaps):
    done = _gaps("--traces", str(planted_traces), "--window", "7d", "--until", UNTIL.isoformat(), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data == json.loads(json.dumps(planted_gaps.to_dict()))
    assert "anomaly detection" in data["topics"][0]["terms"] and data["topics"][0]["trend"] == "new this window"


def test_gaps_markdown_with_max_topics(planted_traces):
    done = _gaps("--traces", str(planted_traces), "--window", "1w", "--until", UNTIL.isoformat(), "--max-topics", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("## Content gaps\n") and "| 1 | anomaly detection" in done.stdout
    assert "| 2 |" not in done.stdout and "not shown" in done.stdout


@pytest.mark.parametrize(("flags", "message"), [
    (("--window", "7x"), "error: --window takes a span back from now: a number and m, h, d or w"),
    (("--window", "0d"), "error: --window takes a span longer than 0"),
    (("--window", "7d", "--until", "last tuesday"), "error: --until takes an ISO date or time"),
    (("--window", "7d", "--max-topics", "0"), "error: --max-topics takes a whole number of at least 1"),
])
def test_gaps_bad_input_exits_2_with_one_line(planted_traces, flags, message):
    done = _gaps("--traces", str(planted_traces), *flags)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr


def test_gaps_on_a_missing_trace_file_exits_2(tmp_path):
    done = _gaps("--traces", str(tmp_path / "none.duckdb"), "--window", "7d")
    assert done.returncode == 2 and done.stderr.startswith("error: no trace file at ")
    assert not (tmp_path / "none.duckdb").exists()


def test_gaps_with_nothing_unanswered_says_so_and_exits_0(quiet_traces):
    done = _gaps("--traces", str(quiet_traces), "--window", "7d", "--until", UNTIL.isoformat())
    assert done.returncode == 0, done.stderr
    assert "no unanswered questions: all " in done.stdout and "| 1 |" not in done.stdout


def test_gaps_with_no_production_rows_in_the_window_says_so_and_exits_0(quiet_traces):
    done = _gaps("--traces", str(quiet_traces), "--window", "7d", "--until", "2031-01-01", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["empty_reason"] == "no production lookups in the window" and data["topics"] == []


def test_changes_with_gaps_puts_the_planted_topic_in_the_changes_report(planted_traces):
    env = {k: v for k, v in os.environ.items() if k != "LOOKUP_KNOWLEDGE_TRACES"}
    done = subprocess.run([sys.executable, "-m", "retrieval", "traces", "changes", "--traces", str(planted_traces),
                           "--window", "7d", "--until", UNTIL.isoformat(), "--gaps", "--kb", str(SAMPLE_KB),
                           "--format", "markdown"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    figures, _, gaps = done.stdout.partition("## Content gaps")
    assert "abstentions" in figures and "| 1 | anomaly detection" in gaps
