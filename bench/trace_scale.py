"""Benchmark (not a test): the trace file and the app at a team's volume.
`python bench/trace_scale.py --rows 1000000` (default 1,000,000; `--keep FILE` reuses a built file).

Builds a trace file replicated from real rows (tests/trace_scale_helpers.py: real lookups and an evaluation run
on the sample knowledge base, copied inside DuckDB; 90% interactive rows, 10% evaluation rows over 40 runs), then
measures in one run, each step in its own process so that its peak RSS is its own:
- each page's first render through Streamlit's AppTest (Lookup, Compare settings, Traces, Export), and the
  Traces page over every run;
- the SQL box on three statements: a GROUP BY, a JSON extraction from retrieval_details, a LIMIT over all rows;
- a full export to Parquet; a prune of the oldest week (on a copy);
- a drain of a 500-row batch into the big file against the same drain into an empty file (the ratio);
- the file's bytes per row.
Prints one table: seconds, peak RSS (MB) and the issue's bound for each step.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BOUNDS = {"render": 2.0, "sql": 2.0, "export_parquet": 60.0}
RSS_BOUND_MB = 1536
SQL = {"group_by": "SELECT retrieval_layer, l1_status, count(*) AS calls, round(avg(latency_ms), 1) AS avg_ms "
                   "FROM tool_invocation GROUP BY ALL ORDER BY calls DESC",
       "json_extract": "SELECT retrieval_details->>'$.filter.decision' AS decision, count(*) AS calls "
                       "FROM tool_invocation GROUP BY 1 ORDER BY 2 DESC",
       "limit": "SELECT id, created_at, query, latency_ms FROM tool_invocation LIMIT 100"}
PAGES = {"lookup": "appui/pages/lookup.py", "compare": "appui/pages/compare.py",
         "traces": "appui/pages/traces.py", "export": "appui/pages/export.py"}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(work: Callable[[], object]) -> dict[str, float]:
    started = time.perf_counter()
    work()
    return {"seconds": time.perf_counter() - started, "peak_mb": _peak_mb()}


def _render(path: Path, page: str, all_runs: bool = False) -> dict[str, float]:
    """A page's first render, in a fresh AppTest session on the trace file at `path`."""
    from streamlit.testing.v1 import AppTest

    os.environ["LOOKUP_KNOWLEDGE_TRACES"] = str(path)
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()  # the Lookup page, index opened
    started = time.perf_counter()
    if page != "lookup":
        app = app.switch_page(PAGES[page]).run()
    if all_runs:
        app = app.selectbox(key="tr_run").set_value("(all)").run()
    seconds = time.perf_counter() - started
    if page == "lookup":  # the first run includes opening the index: time a rerun of the page instead
        started = time.perf_counter()
        app.run()
        seconds = time.perf_counter() - started
    errors = [e.value for e in app.exception] + [e.value for e in app.error]
    return {"seconds": seconds, "peak_mb": _peak_mb(), "errors": len(errors), "first_error": str(errors[:1])[:200]}


def _sql(path: Path, name: str) -> dict[str, float]:
    from appui.data import sql_sandbox

    run_in_place = getattr(sql_sandbox, "run_on_file", None)
    if run_in_place is None:  # the copy-based box (before issue 31): snapshot + run
        from retrieval import TraceStore

        return _timed(lambda: sql_sandbox.run(sql_sandbox.snapshot(TraceStore(path).query), SQL[name],
                                              max_rows=10_000, timeout_s=600))
    return _timed(lambda: run_in_place(path, SQL[name]))


def _export(path: Path, out: Path) -> dict[str, float]:
    from retrieval.traces import export

    return _timed(lambda: export.export_traces(path, out, "parquet"))


def _drain(path: Path, batch: int) -> dict[str, float]:
    """Record `batch` lookups into the file's spool, then time the drain that moves them into the table."""
    from retrieval import TraceStore, lookup_knowledge, open_index
    from retrieval.paths import SAMPLE_KB

    index = open_index(SAMPLE_KB)
    store = TraceStore(path)
    for _ in range(batch):
        lookup_knowledge("rotate an API token", index=index, recorder=store)
    return _timed(store.flush)


def child(argv: list[str]) -> None:
    """One step in this process; prints its figures as JSON."""
    step, path = argv[0], Path(argv[1])
    if step == "render":
        figures = _render(path, argv[2], all_runs=len(argv) > 3)
    elif step == "sql":
        figures = _sql(path, argv[2])
    elif step == "export":
        figures = _export(path, Path(argv[2]))
    elif step == "drain":
        figures = _drain(path, int(argv[2]))
    elif step == "prune":
        from retrieval.traces import prune

        figures = _timed(lambda: prune.prune_traces(path, before="2026-01-08"))
    else:
        raise SystemExit(f"unknown step {step}")
    print(json.dumps(figures))


def _run(*args: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        return {"seconds": float("nan"), "peak_mb": float("nan"), "failed": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def build(path: Path, rows: int) -> dict[str, float]:
    from tests.trace_scale_helpers import record_seed_rows, replicate

    started = time.perf_counter()
    record_seed_rows(path)
    built = replicate(path, rows)
    return {"seconds": time.perf_counter() - started, "rows": built.rows, "run_rows": built.run_rows,
            "bytes_per_row": built.file_bytes / built.rows, "file_mb": built.file_bytes / 2**20}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="build the file here (or reuse it, if it exists)")
    parser.add_argument("--steps", default="render,sql,export,prune,drain", help="comma-separated steps to run")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="trace-scale-"))
    path = args.keep or folder / "traces.duckdb"
    table: list[tuple[str, dict[str, float], str]] = []
    if not path.exists():
        made = build(path, args.rows)
        print(f"built {made['rows']:,} rows ({made['run_rows']:,} of runs) in {made['seconds']:.0f} s: "
              f"{made['file_mb']:,.0f} MB, {made['bytes_per_row']:,.0f} bytes per row", flush=True)
    steps = set(args.steps.split(","))
    if "render" in steps:
        for page in PAGES:
            table.append((f"render {page}", _run("render", str(path), page), "≤ 2 s"))
        table.append(("render traces, all runs", _run("render", str(path), "traces", "all"), "≤ 2 s"))
    if "sql" in steps:
        for name in SQL:
            table.append((f"SQL box: {name}", _run("sql", str(path), name), "≤ 2 s"))
    if "export" in steps:
        table.append(("export to Parquet", _run("export", str(path), str(folder / "all.parquet")), "≤ 60 s"))
    if "prune" in steps:
        copy = folder / "prune.duckdb"
        shutil.copy(path, copy)
        table.append(("prune the oldest week (a copy)", _run("prune", str(copy)), "-"))
        copy.unlink()
    if "drain" in steps:
        empty = folder / "empty.duckdb"
        small = _run("drain", str(empty), "500")
        big = _run("drain", str(path), "500")
        table.append(("drain 500 rows into an empty file", small, "-"))
        table.append(("drain 500 rows into the big file", big, f"≤ 1.5 × ({big['seconds'] / small['seconds']:.2f})"))
    print("\n| step | seconds | peak RSS (MB) | bound |\n| --- | ---: | ---: | --- |")
    for name, figures, bound in table:
        note = f" (failed: {figures['failed']})" if "failed" in figures else \
            (f" ({figures['errors']} errors: {figures['first_error']})" if figures.get("errors") else "")
        print(f"| {name}{note} | {figures['seconds']:.2f} | {figures['peak_mb']:,.0f} | {bound} |")
    print(f"\nRSS bound for the app's process: {RSS_BOUND_MB} MB. Trace file: {path}")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        sys.exit(main())
