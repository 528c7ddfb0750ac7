"""`python -m retrieval traces export`: every matching row, with the Traces page's filters as flags, streamed by
DuckDB into Parquet, CSV (formula-safe, in SQL) or JSON lines (JSON columns nested), in bounded memory."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

from retrieval.export import FORMULA_STARTS
from retrieval.traces import TraceFilter, export_traces
from tests.export_helpers import HOSTILE, build_traces, run_cli, summary

FILTERED = ["--interactive", "--query-contains", "NUMBER 1", "--layer", "L0+L1", "--filter-decision", "applied",
            "--since", "2026-01-01T00:10:00", "--until", "2026-01-01T05:00:00"]
FILTERED_SQL = ("run_id IS NULL AND contains(lower(query), 'number 1') AND retrieval_layer = 'L0+L1' AND "
                "filter_decision = 'applied' AND created_at >= TIMESTAMP '2026-01-01 00:10:00' AND created_at < "
                "TIMESTAMP '2026-01-01 05:00:00'")


def _expected_ids(path, where: str = "true") -> list[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return [r[0] for r in con.execute(f"SELECT id FROM tool_invocation WHERE {where} "
                                          "ORDER BY created_at DESC, id").fetchall()]


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_cli_export_holds_every_matching_row_with_the_filters_applied(tmp_path, fmt):
    traces = build_traces(tmp_path / "t.duckdb", 12_000)
    out = tmp_path / f"out.{fmt}"
    report = summary(run_cli("traces", "export", "--traces", str(traces), "--format", fmt, "--output", str(out),
                             *FILTERED, cwd=tmp_path))
    expected = _expected_ids(traces, FILTERED_SQL)
    assert 100 < len(expected) < 12_000 and report["rows"] == len(expected) and report["bytes"] == out.stat().st_size
    if fmt == "parquet":
        frame = pd.read_parquet(out)
    elif fmt == "csv":
        frame = pd.read_csv(out, keep_default_na=False)
    else:
        frame = pd.DataFrame([json.loads(line) for line in out.read_text().splitlines()])
    assert frame["id"].tolist() == expected  # the rows, newest first, as the Traces page lists them
    assert frame["query"].str.lower().str.contains("number 1").all() and (frame["retrieval_layer"] == "L0+L1").all()
    assert report["filters"].startswith("interactive lookups · since 2026-01-01 00:10 UTC · before 2026-01-01 05:00")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]  # written whole, then renamed


def test_cli_export_of_every_row_and_of_one_run(tmp_path):
    traces = build_traces(tmp_path / "t.duckdb", 3_000)
    every = summary(run_cli("traces", "export", "--traces", str(traces), "--format", "parquet", "--output",
                            str(tmp_path / "all.parquet"), "--oldest-first", cwd=tmp_path))
    assert every["rows"] == 3_000 and pd.read_parquet(tmp_path / "all.parquet")["id"].iloc[0] == "id-00000000"
    one = summary(run_cli("traces", "export", "--traces", str(traces), "--format", "csv", "--output",
                          str(tmp_path / "run.csv"), "--run", "run-1", cwd=tmp_path))
    assert one["rows"] == 100 and set(pd.read_csv(tmp_path / "run.csv")["run_id"]) == {"run-1"}


def test_jsonl_export_holds_json_columns_as_nested_objects(tmp_path):
    traces = build_traces(tmp_path / "t.duckdb", 50)
    export_traces(traces, tmp_path / "t.jsonl", "jsonl", TraceFilter(run_ids=("run-0",)))
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and all(r["run_id"] == "run-0" for r in rows)
    assert rows[0]["retrieval_details"]["filter"] == {"decision": "applied", "n": 40}  # an object, not text
    assert rows[0]["arguments"] == {"top_k": 5} and rows[0]["config"] == {"l0_filter": True}
    assert rows[0]["created_at"] == "2026-01-01 00:01:20" and rows[0]["kb_path"] is None


def test_parquet_export_keeps_types_and_json_as_json_text(tmp_path):
    traces = build_traces(tmp_path / "t.duckdb", 50)
    export_traces(traces, tmp_path / "t.parquet", "parquet")
    schema = pq.read_schema(tmp_path / "t.parquet")
    assert str(schema.field("created_at").type) == "timestamp[us]" and str(schema.field("evidence_count").type) == \
        "int32"
    assert "json" in str(schema.field("retrieval_details").type)  # Parquet's JSON logical type
    frame = pd.read_parquet(tmp_path / "t.parquet")
    assert json.loads(frame["retrieval_details"][0])["filter"]["decision"] == "applied"


def test_csv_export_guards_formula_cells_in_sql(tmp_path):
    traces = build_traces(tmp_path / "t.duckdb", 70)
    with duckdb.connect(str(traces)) as con:  # a formula start in every text column a caller writes
        con.execute("UPDATE tool_invocation SET error = chr(9) || 'tab', kb_path = '@SUM(A1)', tool_name = '+1' "
                    "WHERE id = 'id-00000001'")
    export_traces(traces, tmp_path / "t.csv", "csv")
    with (tmp_path / "t.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 70
    assert not [v for r in rows for v in r.values() if v.startswith(FORMULA_STARTS)]
    queries = {r["id"]: r for r in rows}
    assert queries["id-00000007"]["query"] == "'" + HOSTILE + "7"
    assert queries["id-00000001"]["error"] == "'\ttab" and queries["id-00000001"]["kb_path"] == "'@SUM(A1)"
    assert queries["id-00000001"]["tool_name"] == "'+1" and queries["id-00000002"]["query"] == "query number 2"
    assert json.loads(queries["id-00000002"]["retrieval_details"])["filter"]["n"] == 2  # JSON stays JSON


@pytest.mark.parametrize("args, message", [
    (["--format", "csv", "--output", "{tmp}/x.csv", "--since", "yesterday"], "--since takes an ISO date or time"),
    (["--format", "csv", "--output", "{tmp}/x.csv", "--until", "2026-13-01"], "--until takes an ISO date or time"),
    (["--format", "csv", "--output", "{tmp}/x.csv", "--since", "2026-02-01", "--until", "2026-01-01"],
     "the time range is empty"),
    (["--format", "csv", "--output", "{tmp}/t.duckdb"], "exists; pass another --output, or --overwrite"),
    (["--format", "csv", "--output", "{tmp}/no/such/x.csv"], "folder of the export's output"),
    (["--format", "csv", "--output", "{tmp}/x.csv", "--traces", "{tmp}/missing.duckdb"], "no trace file at"),
])
def test_bad_export_input_exits_2_with_one_line(tmp_path, args, message):
    traces = build_traces(tmp_path / "t.duckdb", 10)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--traces" not in argv:
        argv += ["--traces", str(traces)]
    completed = run_cli("traces", "export", *argv, cwd=tmp_path)
    assert completed.returncode == 2 and completed.stderr.startswith("error: ") and message in completed.stderr
    assert completed.stderr.count("\n") == 1 and not completed.stdout


def test_an_unknown_format_is_refused_by_name(tmp_path):
    completed = run_cli("traces", "export", "--format", "xlsx", "--output", "x", cwd=tmp_path)
    assert completed.returncode == 2 and "invalid choice: 'xlsx'" in completed.stderr
    with pytest.raises(ValueError, match="choose one of parquet, csv, jsonl"):
        export_traces(tmp_path / "t.duckdb", tmp_path / "x", "xlsx")


MEASURE = """
import sys, time
from retrieval.traces import export_traces
started = time.perf_counter()
result = export_traces(sys.argv[1], sys.argv[2], sys.argv[3])
peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))
print(result.rows, peak // 1024, round(time.perf_counter() - started, 2))
"""
MEMORY_CEILING_MB = 400  # measured about 300 (the interpreter, DuckDB, pyarrow: 134); a DataFrame export: 507


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_an_export_of_50000_rows_stays_under_a_memory_ceiling(tmp_path, fmt):
    traces = build_traces(tmp_path / "t.duckdb", 50_000)
    done = subprocess.run([sys.executable, "-c", MEASURE, str(traces), str(tmp_path / f"out.{fmt}"), fmt],
                          capture_output=True, text=True, timeout=120, check=True)
    rows, peak_mb, seconds = done.stdout.split()
    assert int(rows) == 50_000
    assert int(peak_mb) < MEMORY_CEILING_MB, f"peak RSS {peak_mb} MB exporting 50,000 rows ({seconds} s)"
    assert (tmp_path / f"out.{fmt}").stat().st_size > 10_000_000 or fmt == "parquet"


def test_rows_made_since_a_span_ago(tmp_path):
    traces = build_traces(tmp_path / "t.duckdb", 10)
    with duckdb.connect(str(traces)) as con:
        con.execute("UPDATE tool_invocation SET created_at = now()::TIMESTAMP WHERE id = 'id-00000003'")
    report = summary(run_cli("traces", "export", "--traces", str(traces), "--format", "jsonl", "--output",
                             str(tmp_path / "x.jsonl"), "--since", "90m", cwd=tmp_path))
    assert report["rows"] == 1
