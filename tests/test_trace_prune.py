"""`python -m retrieval traces prune`: old interactive lookups go, evaluation runs stay unless asked (and then go
whole, eval rows with their lookups), a dry run changes nothing, bad cuts exit 2, and --compact shrinks the file."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

import duckdb
import pytest

from retrieval import TraceStore
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces.prune import prune
from tests.export_helpers import START, add_run, build_traces, counts, folded, run_cli, summary

NOW = datetime.now(timezone.utc).replace(tzinfo=None)


def _file(tmp_path):
    """600 rows made in January 2026 (every 10th of run-0); rows id-500… moved to a day ago; run-0 stored then,
    with 3 of its lookups; a replay's recorded run, stored a day ago, that scores two old interactive lookups."""
    path = build_traces(tmp_path / "t.duckdb", 600)
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE tool_invocation SET created_at = ? WHERE id >= 'id-00000500'", [NOW - timedelta(days=1)])
    add_run(path, "run-0", START, ["id-00000000", "id-00000010", "id-00000020"])
    add_run(path, "recorded-1", NOW - timedelta(days=1), ["id-00000001", "id-00000003"])
    return path


def _ids(path, where: str) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {r[0] for r in con.execute(f"SELECT id FROM tool_invocation WHERE {where}").fetchall()}


def test_prune_older_than_removes_only_older_interactive_rows_and_keeps_runs(tmp_path):
    path = _file(tmp_path)
    old_interactive = _ids(path, "run_id IS NULL AND created_at < TIMESTAMP '2026-02-01'") - {"id-00000001",
                                                                                           "id-00000003"}
    before = counts(path)
    report = summary(run_cli("traces", "prune", "--traces", str(path), "--older-than", "2d", cwd=tmp_path))
    assert report["removed"] == {"tool_invocation": len(old_interactive) == 448 and 448, "eval_query_metric": 0,
                                 "eval_query": 0, "eval_run": 0}
    assert report["dry_run"] is False and report["runs_removed"] == [] and report["size_before"] > 0
    assert not (_ids(path, "true") & old_interactive)
    assert {"id-00000001", "id-00000003"} <= _ids(path, "true")  # a kept run's query rows point at them
    assert _ids(path, "run_id = 'run-0'") == {f"id-{i:08d}" for i in range(0, 600, 10)}  # every run lookup kept
    assert len(_ids(path, "created_at > TIMESTAMP '2026-02-01'")) == 100  # the recent rows
    assert counts(path) == {**before, "tool_invocation": before["tool_invocation"] - 448}


def test_prune_include_runs_removes_old_runs_whole_and_keeps_newer_ones(tmp_path):
    path = _file(tmp_path)
    report = summary(run_cli("traces", "prune", "--traces", str(path), "--before", "2026-02-01", "--include-runs",
                             cwd=tmp_path))
    assert report["runs_removed"] == ["run-0"] and report["cut"] == "2026-02-01 00:00:00"
    assert report["removed"] == {"tool_invocation": 448 + 60, "eval_query_metric": 3, "eval_query": 3, "eval_run": 1}
    assert not _ids(path, "run_id = 'run-0'")  # its lookups, the day-old ones too: a run is never cut in half
    left = counts(path)
    assert left == {"tool_invocation": 600 - 448 - 60, "eval_run": 1, "eval_query": 2, "eval_query_metric": 2}
    with duckdb.connect(str(path), read_only=True) as con:  # no query row of a kept run lost its lookup
        assert con.execute("SELECT count(*) FROM eval_query q LEFT JOIN tool_invocation t ON t.id = q.invocation_id "
                           "WHERE t.id IS NULL").fetchone()[0] == 0


def test_lookups_of_runs_the_file_no_longer_holds_go_with_include_runs(tmp_path):
    path = build_traces(tmp_path / "t.duckdb", 3000)  # run-0 … run-2 have lookups but no eval_run row
    kept = summary(run_cli("traces", "prune", "--traces", str(path), "--before", "2027-01-01", cwd=tmp_path))
    assert kept["removed"]["tool_invocation"] == 2700 and len(_ids(path, "true")) == 300
    gone = summary(run_cli("traces", "prune", "--traces", str(path), "--before", "2027-01-01", "--include-runs",
                           cwd=tmp_path))
    assert gone["removed"]["tool_invocation"] == 300 and gone["runs_removed"] == [] and not _ids(path, "true")


def test_a_dry_run_counts_and_changes_nothing(tmp_path):
    path = folded(_file(tmp_path))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    dry = summary(run_cli("traces", "prune", "--traces", str(path), "--older-than", "2d", "--include-runs",
                          "--dry-run", cwd=tmp_path))
    assert dry["dry_run"] is True and dry["removed"]["tool_invocation"] == 508 and dry["runs_removed"] == ["run-0"]
    assert dry["size_after"] == dry["size_before"] == path.stat().st_size
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    real = summary(run_cli("traces", "prune", "--traces", str(path), "--older-than", "2d", "--include-runs",
                           cwd=tmp_path))
    assert real["removed"] == dry["removed"]


@pytest.mark.parametrize("args, message", [
    (["--older-than", "30x"], "error: --older-than takes a span back from now: a number and m, h, d or w"),
    (["--older-than", "0d"], "error: --older-than takes a span longer than 0, got '0d'"),
    (["--older-than=-3d"], "error: --older-than takes a span back from now"),
    (["--before", "last tuesday"], "error: --before takes an ISO date or time"),
    (["--before", "2026-11-01", "--dry-run", "--compact"], "error: --dry-run changes nothing, so it cannot --compact"),
    (["--older-than", "30d", "--before", "2026-11-01"], "argument --before: not allowed with argument --older-than"),
    ([], "one of the arguments --older-than --before is required"),
])
def test_bad_cuts_exit_2_with_a_clear_message(tmp_path, args, message):
    path = build_traces(tmp_path / "t.duckdb", 10)
    completed = run_cli("traces", "prune", "--traces", str(path), *args, cwd=tmp_path)
    assert completed.returncode == 2 and message in completed.stderr and not completed.stdout
    assert counts(path)["tool_invocation"] == 10


def test_a_missing_trace_file_is_an_error_not_a_new_file(tmp_path):
    completed = run_cli("traces", "prune", "--traces", str(tmp_path / "none.duckdb"), "--older-than", "1d",
                        cwd=tmp_path)
    assert completed.returncode == 2 and completed.stderr.startswith("error: no trace file at")
    assert not (tmp_path / "none.duckdb").exists()


def test_only_compact_shrinks_the_file_and_it_keeps_every_row_left(tmp_path):
    path = folded(build_traces(tmp_path / "t.duckdb", 20_000, run_every=0))
    with TraceStore(path) as store:  # a row outside the file alone (a live part, then the log): folded in, not lost
        store.record_many([ToolInvocation("lookup_knowledge", "late row", {}, "ok", 1.0, {}, {}, id="late",
                                          created_at=datetime(2027, 1, 1, tzinfo=timezone.utc))])
    plain = summary(run_cli("traces", "prune", "--traces", str(path), "--before", "2026-01-01T06:00", cwd=tmp_path))
    assert plain["removed"]["tool_invocation"] == 10_800 and plain["compacted"] is False
    assert plain["size_after"] >= plain["size_before"] * 0.9  # a DELETE frees blocks, not bytes
    compacted = prune(path, datetime(2026, 1, 1, 9), compact_file=True)
    assert compacted.removed["tool_invocation"] == 5_400 and compacted.compacted
    assert compacted.size_after < compacted.size_before * 0.5
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("t.duckdb")) == \
        ["t.duckdb", "t.duckdb.drain.lock", "t.duckdb.keeper.lock"]  # no log with the new file, no .compact, no part
    assert counts(path)["tool_invocation"] == 20_000 - 10_800 - 5_400 + 1 and "late" in _ids(path, "true")
    assert TraceStore(path).count() == 3_801  # the store opens the new file
