"""Benchmark (not a test): the trace file and the app at a team's volume.
`python bench/trace_scale.py --rows 1000000` (default 1,000,000; `--keep FILE` reuses a built file).

Builds a trace file replicated from real rows (tests/trace_scale_helpers.py: real lookups and an evaluation run
on the sample knowledge base, copied inside DuckDB; 90% interactive rows, 10% evaluation rows over 40 runs), then
measures in one run, each step in its own process so that its peak RSS is its own:
- each page's first render through Streamlit's AppTest (Lookup, Compare settings, Traces, Export), the
  Traces page over every run, and a rerun of the Traces and Export pages over the unchanged file (cached);
- the SQL box on three statements: a GROUP BY, a JSON extraction from retrieval_details, a LIMIT over all rows;
- a full export to Parquet; a prune of the oldest week (on a copy);
- a drain of a 500-row batch into the big file against the same drain into an empty file (the ratio);
- the file's bytes per row;
- trends (30 days by day, by hour per host) and changes (the last 7 days against the 7 before), as functions and
  as the whole `python -m retrieval traces trends|changes` commands, against issue 53's bounds (2 s, 5 s);
- content gaps over a week of 25,000 mostly distinct unanswered questions, in a file of its own of the same
  number of rows (bench/content_gaps.py builds it; `--gaps-file FILE` keeps it), against the bound (30 s).
Prints one table: seconds, peak RSS (MB) and the issue's bound for each step. The steps live in
tests/trace_scale_helpers.py, shared with the suite's 50,000-row guard (tests/test_trace_scale.py).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.content_gaps import build as build_gaps_file  # noqa: E402
from bench.content_gaps import measure as measure_gaps  # noqa: E402
from tests.trace_scale_helpers import PAGES, SQL, record_seed_rows, replicate, run_step  # noqa: E402

RSS_BOUND_MB = 1536
GAPS_UNANSWERED = 25_000  # unanswered questions a week in the content-gaps step's file


def build(path: Path, rows: int) -> dict[str, float]:
    started = time.perf_counter()
    record_seed_rows(path)
    built = replicate(path, rows)
    return {"seconds": time.perf_counter() - started, "rows": built.rows, "run_rows": built.run_rows,
            "bytes_per_row": built.file_bytes / built.rows, "file_mb": built.file_bytes / 2**20}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="build the file here (or reuse it, if it exists)")
    parser.add_argument("--steps", default="render,sql,export,prune,drain,trends,gaps",
                        help="comma-separated steps to run")
    parser.add_argument("--gaps-file", type=Path, help="the content-gaps step's file: built here (or reused, if it "
                                                       "exists); default a temporary one")
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
            table.append((f"render {page}", run_step("render", path, page), "≤ 2 s"))
        table.append(("render traces, all runs", run_step("render", path, "traces", "all"), "≤ 2 s"))
        for page in ("traces", "export"):  # a rerun over the unchanged file: the pages' reads are cached
            table.append((f"rerun {page}, file unchanged", run_step("render", path, page, "rerun"), "-"))
    if "trends" in steps:  # the built file's rows span 2026-01-01 .. 2026-01-31 (trace_scale_helpers.replicate)
        table.append(("trends, 30 days by day", run_step("trends", path, "2026-01-01", "2026-01-31", "day"), "≤ 2 s"))
        table.append(("trends, 30 days by hour per host",
                      run_step("trends", path, "2026-01-01", "2026-01-31", "hour", "host"), "≤ 2 s"))
        table.append(("command: traces trends --since 30d --by day",
                      run_step("command", path, "trends", "--since", "30d", "--until", "2026-01-31"), "≤ 2 s"))
        table.append(("changes, last 7 days against the 7 before (+ HTML)",
                      run_step("changes", path, "7d", "2026-01-31"), "≤ 5 s"))
        table.append(("command: traces changes --window 7d --format html",
                      run_step("command", path, "changes", "--window", "7d", "--until", "2026-01-31", "--format",
                               "html", "--fail-on-significant"), "≤ 5 s"))
    if "gaps" in steps:  # its own file: a week of >= 20k mostly distinct unanswered questions (bench/content_gaps.py)
        gaps_path = args.gaps_file or folder / "gaps.duckdb"
        if not gaps_path.exists():
            made = build_gaps_file(gaps_path, args.rows, GAPS_UNANSWERED)
            print(f"built the content-gaps file: {made['rows']:,} rows in {made['seconds']:.0f} s", flush=True)
        found = {"seconds": float("nan"), "peak_mb": float("nan"), **measure_gaps(gaps_path)}
        table.append((f"content gaps, 7 days ({found.get('questions', 0):,} unanswered, "
                      f"{found.get('distinct', 0):,} distinct)", found, "≤ 30 s"))
    if "sql" in steps:
        for name in SQL:
            table.append((f"SQL box: {name}", run_step("sql", path, name), "≤ 2 s"))
    if "export" in steps:
        table.append(("export to Parquet", run_step("export", path, str(folder / "all.parquet")), "≤ 60 s"))
    if "prune" in steps:
        copy = folder / "prune.duckdb"
        shutil.copy(path, copy)
        table.append(("prune the oldest week (a copy)", run_step("prune", copy, "2026-01-08"), "-"))
        copy.unlink()
    if "drain" in steps:
        empty = folder / "empty.duckdb"
        small = run_step("drain", empty, "500")
        big = run_step("drain", path, "500")
        table.append(("drain 500 rows into an empty file", small, "-"))
        table.append(("drain 500 rows into the big file", big, f"≤ 1.5 × ({big['seconds'] / small['seconds']:.2f})"))
    print("\n| step | seconds | peak RSS (MB) | bound |\n| --- | ---: | ---: | --- |")
    for name, figures, bound in table:
        note = f" (failed: {figures['failed']})" if "failed" in figures else \
            (f" (errors: {figures['errors']})" if figures.get("errors") else "")
        print(f"| {name}{note} | {figures['seconds']:.2f} | {figures['peak_mb']:,.0f} | {bound} |")
    print(f"\nRSS bound for the app's process: {RSS_BOUND_MB} MB. Trace file: {path}")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
