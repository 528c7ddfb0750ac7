"""Benchmark (not a test): the Traces page's SQL box on a large trace file, in place. `python bench/sql_box_bench.py`

    python bench/sql_box_bench.py --rows 1000000 --file /tmp/t1m.duckdb  # build once (8 GB, minutes), then reuse
    python bench/sql_box_bench.py --file /tmp/t1m.duckdb --app             # and through the app's Traces page
    python bench/sql_box_bench.py --rows 20000 --baseline /tmp/old         # and the old design (a copy per run)
                                                         # (mkdir /tmp/old; git archive <commit> | tar -x -C /tmp/old)

The file: the sample knowledge base's queries looked up and recorded (real rows, about 8 kB of
retrieval_details each), then repeated by DuckDB up to --rows, each copy with its own id, time and a row
number at the head of its details. Each statement then runs --repeat times in a fresh process through
`appui.data.sql_sandbox.run` (with --timeout, not the page's 5 s, so slow ones are timed to the end), and the
process reports each run's seconds, rows shown, and its peak memory (VmHWM) so far. With --app a fresh process
runs the app (AppTest), opens the Traces page (its table and charts included) and runs each statement in the
SQL box: its VmHWM is the app process's peak. Absolute times drift on a shared machine: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STATEMENTS = (
    ("GROUP BY columns (the page's default)", "SELECT retrieval_layer, l1_status, count(*) AS calls, "
     "round(avg(latency_ms), 1) AS avg_ms FROM tool_invocation GROUP BY ALL ORDER BY calls DESC"),
    ("GROUP BY a JSON path of retrieval_details", "SELECT retrieval_details->>'$.filter.decision' AS d, count(*) "
     "FROM tool_invocation GROUP BY d"),
    ("LIMIT over all rows", "SELECT * FROM tool_invocation LIMIT 100"),
    ("every row, first page", "SELECT * FROM tool_invocation"),
)
PEAK = "next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')) / 1024"
CHILD = f"""
import json, sys, time
import duckdb
from appui.data import sql_sandbox as sql_box
from retrieval import TraceStore, TraceStoreError
path, mode, statements, repeat, timeout = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), \\
    float(sys.argv[5])
if mode == 'old':  # the design before issue 31: every run copies every table (snapshot), then runs on the copy
    store = TraceStore(path, lock_timeout=60)
    run = lambda sql: sql_box.run(sql_box.snapshot(store.query), sql, timeout_s=timeout)
else:
    run = lambda sql: sql_box.run(path, sql, timeout_s=timeout)
out = {{'start_mb': {PEAK}, 'runs': []}}
for sql in statements:
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            shown, error = len(run(sql).frame), None
        except (duckdb.Error, sql_box.SqlRefused, TraceStoreError, MemoryError) as exc:
            shown, error = None, f'{{type(exc).__name__}}: {{str(exc).splitlines()[0][:150]}}'
        out['runs'].append({{'sql': sql, 'seconds': time.perf_counter() - started, 'shown': shown, 'error': error,
                            'peak_mb': {PEAK}}})
print(json.dumps(out))
"""
APP_CHILD = f"""
import json, os, sys, time
from streamlit.testing.v1 import AppTest
statements = json.loads(sys.argv[1])
started = time.perf_counter()
at = AppTest.from_file(os.path.join({str(ROOT)!r}, 'app.py'), default_timeout=600).run()
at = at.switch_page('appui/pages/traces.py').run()
out = {{'page_seconds': time.perf_counter() - started, 'page_peak_mb': {PEAK}, 'runs': []}}
for sql in statements:
    at.text_area(key='sql_text').set_value(sql)
    started = time.perf_counter()
    at = at.button(key='sql_run').click().run()
    out['runs'].append({{'sql': sql, 'seconds': time.perf_counter() - started, 'peak_mb': {PEAK},
                        'messages': [e.value[:150] for e in [*at.error, *at.warning, *at.exception]],
                        'shown': len(at.dataframe[-1].value) if not at.error else None}})
print(json.dumps(out))
"""


def build(path: Path, rows: int) -> None:
    """Real recorded lookups of the sample base, repeated by DuckDB up to `rows` (see the module's docstring)."""
    import duckdb

    from retrieval import TraceStore, lookup_knowledge, open_index
    from retrieval.paths import SAMPLE_KB, SAMPLE_QUERIES
    from retrieval.traces import COLUMNS

    store, index = TraceStore(path), open_index(SAMPLE_KB)
    for line in SAMPLE_QUERIES.read_text().splitlines():
        if line.strip():
            lookup_knowledge(json.loads(line)["text"], index=index, recorder=store)
    store.close()
    varied = {"id": "uuid()::VARCHAR", "created_at": "created_at - to_milliseconds(copy.range)",
              "retrieval_details": "('{\"row\":' || copy.range || ',' || substr(retrieval_details::VARCHAR, 2))::JSON"}
    columns = ", ".join(COLUMNS)
    with duckdb.connect(str(path), config={"memory_limit": "2GB"}) as con:  # the insert took 5.9 GB without
        seeds = con.execute("SELECT count(*) FROM tool_invocation").fetchone()[0]
        con.execute("CREATE TEMP TABLE seed AS SELECT * FROM tool_invocation")
        con.execute(f"INSERT INTO tool_invocation ({columns}) SELECT {', '.join(varied.get(c, c) for c in COLUMNS)} "
                    f"FROM seed, range({-(-(rows - seeds) // seeds)}) AS copy LIMIT {rows - seeds}")
        con.execute("CHECKPOINT")


def measure(path: Path, mode: str, repeat: int, timeout: float, code: Path = ROOT) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), mode, json.dumps([s for _, s in STATEMENTS]),
                           str(repeat), str(timeout)], capture_output=True, text=True, env=env, cwd=code, check=False)
    if done.returncode:
        return {"failed": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])  # after anything DuckDB printed


def measure_app(path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LOOKUP_KNOWLEDGE_TRACES": str(path)}
    with tempfile.TemporaryDirectory() as cache:
        env.setdefault("LOOKUP_KNOWLEDGE_CACHE", cache)
        done = subprocess.run([sys.executable, "-c", APP_CHILD, json.dumps([s for _, s in STATEMENTS])],
                              capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode:
        return {"failed": done.stderr.strip()[-500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(title: str, measured: dict) -> None:
    print(f"\n{title}")
    if "failed" in measured:
        print(f"  failed: {measured['failed']}")
        return
    if "page_seconds" in measured:
        print(f"  app + Traces page: {measured['page_seconds']:.1f} s, peak {measured['page_peak_mb']:,.0f} MB")
    else:
        print(f"  process start (imports): peak {measured['start_mb']:,.0f} MB")
    names = {sql: name for name, sql in STATEMENTS}
    for run in measured["runs"]:
        outcome = run.get("error") or "; ".join(run.get("messages") or []) or f"{run['shown']:,} rows shown"
        print(f"  {names[run['sql']]:<44} {run['seconds']:6.2f} s  peak {run['peak_mb']:6,.0f} MB  {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows of a file to build (default 100,000)")
    parser.add_argument("--file", type=Path, help="the trace file: reused if it exists, else built there")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each statement (default 3)")
    parser.add_argument("--timeout", type=float, default=120.0, help="the SQL box's time limit here (default 120 s)")
    parser.add_argument("--app", action="store_true", help="also through the app's Traces page (AppTest)")
    parser.add_argument("--baseline", type=Path, help="a checkout of the old design to run the same statements with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = args.file or Path(folder) / "bench.duckdb"
        if not path.exists():
            started = time.perf_counter()
            build(path, args.rows)
            print(f"built {path} in {time.perf_counter() - started:.0f} s")
        import duckdb

        with duckdb.connect(str(path), read_only=True) as con:
            rows, details = con.execute("SELECT count(*), avg(length(retrieval_details::VARCHAR)) "
                                        "FROM tool_invocation").fetchone()
        print(f"{path}: {rows:,} rows, {details:,.0f} characters of retrieval_details a row on average, "
              f"{path.stat().st_size / 1e9:.2f} GB; duckdb {duckdb.__version__}, {os.cpu_count()} CPUs")
        report("SQL box, in place (this checkout)", measure(path, "new", args.repeat, args.timeout))
        if args.baseline:
            report(f"SQL box, old design ({args.baseline})", measure(path, "old", 1, args.timeout, args.baseline))
        if args.app:
            report("the app process: Traces page, then each statement in the SQL box (5 s limit)", measure_app(path))


if __name__ == "__main__":
    main()
