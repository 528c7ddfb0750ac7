"""Issue 48: when a recording command exits 0, every row it recorded is visible to a plain read-only DuckDB client
opened right after, and that open never fails on a lock held by the command or a helper it left behind.

Real processes (the CLI as a user runs it, cwd the repo root) and a real trace file under tmp_path; the reader
is `duckdb.connect(path, read_only=True)`, opened the moment the command returns, with nothing in between (no
wait, no retry, no project code). bench/read_after_exit.py measures the same over 100 lookups."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data"
TIMEOUT = 180  # seconds one command may take (an index build on a loaded machine included)
LOOKUPS = 20


def _run(args: list[str], traces: Path) -> subprocess.CompletedProcess:
    """`python <args>` from the repo root, the trace file named by flag and by env var alike."""
    env = {**os.environ, "LOOKUP_KNOWLEDGE_TRACES": str(traces)}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)


def _holder(message: str) -> str:
    """The process a DuckDB lock error names (its command line while it runs), for the failure message."""
    found = re.search(r"\(PID (\d+)\)", message)
    if not found:
        return ""
    try:
        return Path(f"/proc/{found.group(1)}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return f"PID {found.group(1)}, gone"


def _plain_read(traces: Path, sql: str, params: list) -> tuple | str:
    """The first row of `sql` read through a plain read-only open, or the open's error (with the lock's holder)."""
    try:
        con = duckdb.connect(str(traces), read_only=True)
    except duckdb.Error as exc:
        holder = _holder(str(exc))
        return f"open failed: {str(exc).splitlines()[0]}" + (f" [holder: {holder}]" if holder else "")
    try:
        return con.execute(sql, params).fetchone()
    finally:
        con.close()


def _plain_reads(traces: Path, reads: dict[str, tuple[str, list]]) -> dict[str, object]:
    """Several reads through ONE plain read-only open (the first thing done after the command returned)."""
    try:
        con = duckdb.connect(str(traces), read_only=True)
    except duckdb.Error as exc:
        holder = _holder(str(exc))
        pytest.fail(f"the plain read-only open failed at exit: {exc}" + (f"\nholder: {holder}" if holder else ""))
    try:
        return {name: con.execute(sql, params).fetchone() for name, (sql, params) in reads.items()}
    finally:
        con.close()


def _run_id(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)["run_id"]


@pytest.mark.slow  # 20 CLI commands: 10-30 s
def test_twenty_cli_lookups_are_each_visible_to_a_plain_reader_at_exit(tmp_path):
    traces = tmp_path / "traces.duckdb"
    outcomes = []
    for i in range(LOOKUPS):
        query = f"rotate token {i}"
        done = _run(["-m", "retrieval", "lookup", query, "--traces", str(traces), "--kb", str(SAMPLE / "kb"),
                     "--compact"], traces)
        seen = _plain_read(traces, "SELECT count(*) FROM tool_invocation WHERE query = ?", [query])  # at once
        assert done.returncode == 0, f"lookup {i}: {done.stderr[-3000:]}"
        outcomes.append((query, seen))
    failures = [f"{q}: {seen}" for q, seen in outcomes if isinstance(seen, str)]
    invisible = [q for q, seen in outcomes if not isinstance(seen, str) and seen[0] != 1]
    assert not failures and not invisible, (
        f"of {LOOKUPS} lookups, {len(failures)} plain opens failed and {len(invisible)} rows were not visible "
        f"at exit (not visible: {invisible})\n" + "\n".join(failures))


def test_an_eval_run_leaves_every_lookup_visible_at_exit(tmp_path, sample_set):
    traces = tmp_path / "traces.duckdb"
    done = _run(["-m", "eval", "run", "--dataset", str(SAMPLE), "--traces", str(traces), "--no-baseline",
                 "--no-oracle", "--no-attribution", "--no-progress", "--json"], traces)
    run_id = _run_id(done)
    seen = _plain_reads(traces, {
        "lookups": ("SELECT count(*) FROM tool_invocation WHERE run_id = ?", [run_id]),
        "run": ("SELECT n_queries, status FROM eval_run WHERE run_id = ?", [run_id]),
        "queries": ("SELECT count(*) FROM eval_query WHERE run_id = ?", [run_id])})
    asked = len(sample_set.queries)
    assert seen["run"] == (asked, "complete"), seen
    assert seen["lookups"] == (asked,), f"{seen['lookups'][0]} of the run's {asked} lookups visible at exit"
    assert seen["queries"] == (asked,), seen


def test_an_import_run_leaves_its_rows_visible_at_exit(tmp_path, sample_set):
    """import-run writes eval_run, one eval_query row per question of the dataset and the answerable ones'
    eval_query_metric rows; it makes no lookups, so no tool_invocation row carries its run id."""
    traces = tmp_path / "traces.duckdb"
    run_file = tmp_path / "external.run"
    run_file.write_text("".join(f"{q.id} Q0 {page} {rank} {10.0 - rank} external\n" for q in sample_set.queries
                                for rank, page in enumerate(sorted(q.qrels), 1)), encoding="utf-8")
    metrics = ["ndcg@10", "recall@10"]
    done = _run(["-m", "eval", "import-run", str(run_file), "--name", "external ranker", "--dataset", str(SAMPLE),
                 "--metrics", ",".join(metrics), "--traces", str(traces), "--json"], traces)
    run_id = _run_id(done)
    seen = _plain_reads(traces, {
        "run": ("SELECT n_queries, status FROM eval_run WHERE run_id = ?", [run_id]),
        "queries": ("SELECT count(*) FROM eval_query WHERE run_id = ?", [run_id]),
        "metrics": ("SELECT count(*) FROM eval_query_metric WHERE run_id = ?", [run_id]),
        "lookups": ("SELECT count(*) FROM tool_invocation WHERE run_id = ?", [run_id])})
    asked = len(sample_set.queries)
    answerable = sum(q.answerable for q in sample_set.queries)
    assert seen["run"] == (asked, "complete"), seen
    assert seen["queries"] == (asked,), seen
    assert seen["metrics"] == (answerable * len(metrics),), seen
    assert seen["lookups"] == (0,), seen


def test_a_lookup_in_a_long_session_folds_the_many_parts_before_it_exits(tmp_path):
    """Past MAX_LIVE_PARTS the keeper folds the oldest parts, taking DuckDB's write lock; the command's helper
    folds them itself before the command exits, so the keeper has nothing to fold as the caller's reader opens."""
    from collections import deque

    from retrieval import TraceStore
    from retrieval.lookup.invocation import ToolInvocation
    from retrieval.traces.drain import drain_once
    from retrieval.traces.keeper import MAX_LIVE_PARTS
    from retrieval.traces.spool import Spool, spool_path
    from retrieval.traces.view import part_files

    traces = tmp_path / "traces.duckdb"
    TraceStore(traces, background=False).close()
    spool = Spool(spool_path(traces))
    for i in range(MAX_LIVE_PARTS + 1):  # a session's parts, one a drain (no keeper started here)
        TraceStore(traces, open_now=False, background=False).record_many(
            [ToolInvocation("lookup_knowledge", f"earlier {i}", {}, "ok", 1.0, {}, {})])
        assert drain_once(traces, spool, deque(), show_wait=5.0, turn_wait=5.0).shown
    assert len(part_files(traces)) == MAX_LIVE_PARTS + 1
    done = _run(["-m", "retrieval", "lookup", "rotate token late", "--traces", str(traces), "--kb",
                 str(SAMPLE / "kb"), "--compact"], traces)
    seen = _plain_reads(traces, {"rows": ("SELECT count(*) FROM tool_invocation", [])})  # at once
    assert done.returncode == 0, done.stderr[-3000:]
    assert seen["rows"] == (MAX_LIVE_PARTS + 2,)
    assert part_files(traces) == [], "the helper folded the session's parts before the command exited"
