"""Issue 49 item 7: a command whose output is piped into a reader that stops early (`| head -1`) ends quietly,
with no BrokenPipeError traceback, and a lookup's trace row is recorded all the same.

Real processes: each command runs with its stdout on a pipe whose reading end is already closed (the reader left
before the command wrote, as `head` does once it has its lines), so its first write meets a closed pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb

from retrieval.console import CLOSED_PIPE_STATUS
from tests.conftest import settle_trace_file
from tests.kb_fixture import write_kb

TIMEOUT = 180


def _into_closed_pipe(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`python <args>` with stdout on a pipe nobody reads any more; stderr captured."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone: the command's first write to stdout finds the pipe closed
    try:
        return subprocess.run([sys.executable, *args], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              cwd=cwd, timeout=TIMEOUT, env={**os.environ, "OTEL_SDK_DISABLED": "true"})
    finally:
        os.close(write_end)


def _assert_quiet(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert done.returncode == CLOSED_PIPE_STATUS, (done.returncode, done.stderr)


def test_lookup_piped_into_head_prints_no_traceback(tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb")
    done = _into_closed_pipe(["-m", "retrieval", "lookup", "invoice", "--kb", str(kb), "--no-trace"], tmp_path)
    _assert_quiet(done)


def test_traced_lookup_piped_into_head_still_records_its_row(tmp_path: Path) -> None:
    kb, traces = write_kb(tmp_path / "kb"), tmp_path / "traces.duckdb"
    done = _into_closed_pipe(["-m", "retrieval", "lookup", "invoice", "--kb", str(kb), "--traces", str(traces)],
                             tmp_path)
    _assert_quiet(done)
    settle_trace_file(traces)
    with duckdb.connect(str(traces), read_only=True) as con:
        rows = con.execute("SELECT query, status FROM tool_invocation").fetchall()
    assert rows == [("invoice", "ok")]


def test_explain_piped_into_head_prints_no_traceback(tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb")
    done = _into_closed_pipe(["-m", "retrieval", "explain", "invoice", "--source", "billing/invoices.md",
                              "--kb", str(kb)], tmp_path)
    _assert_quiet(done)


def test_console_script_piped_into_head_prints_no_traceback(tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb")
    done = _into_closed_pipe(["-c", "import sys; from retrieval.cli import main; sys.exit(main())",
                              "tool-definition", "--kb", str(kb)], tmp_path)
    _assert_quiet(done)


def test_eval_report_trec_piped_into_head_prints_no_traceback(evaluated_traces: tuple[Path, str],
                                                              tmp_path: Path) -> None:
    traces, run_id = evaluated_traces
    done = _into_closed_pipe(["-m", "eval", "report", run_id, "--format", "trec", "--traces", str(traces)], tmp_path)
    _assert_quiet(done)


def test_eval_runs_piped_into_head_prints_no_traceback(evaluated_traces: tuple[Path, str], tmp_path: Path) -> None:
    traces, _ = evaluated_traces
    done = _into_closed_pipe(["-m", "eval", "runs", "--traces", str(traces)], tmp_path)
    _assert_quiet(done)
