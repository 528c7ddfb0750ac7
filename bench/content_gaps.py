"""Benchmark (not a test): content gaps over a week of a large team's unanswered questions.
`python bench/content_gaps.py` (defaults: 1,000,000 rows, 25,000 unanswered questions a week; `--keep FILE` reuses a
built file).

Builds a trace file (tests/gaps_helpers.py): one real lookup on the sample knowledge base, copied inside DuckDB as
`--unanswered` unanswered production questions in each of the last two weeks (60 made-up missing features asked
in five phrasings with random slots, heavy-tailed sizes, half with a unique suffix, and a tenth one-off questions:
most texts distinct), then answered rows up to `--rows` over 30 days (their `retrieval_details` only the
relevance: content gaps never read that column). Then runs `content_gaps(..., window="7d")` in
a child process (its peak RSS its own; the index opened first, not timed) and prints its time and peak RSS against
the issue's bounds: ≤ 30 s for a week of ≥ 20k unanswered questions, the app under 1.5 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.gaps_helpers import add_answered, scale_rows, write_trace_file  # noqa: E402

SECONDS_BOUND = 30.0
RSS_BOUND_MB = 1536


def build(path: Path, rows: int, unanswered: int) -> dict[str, float]:
    started = time.perf_counter()
    planned = scale_rows(unanswered, answered=10)
    write_trace_file(path, planned, slim=True)
    total = add_answered(path, max(rows - len(planned), 0))
    return {"seconds": time.perf_counter() - started, "rows": total, "mb": path.stat().st_size / 2**20}


def measure(path: Path) -> dict:
    """content_gaps in a child process: its figures, or `failed` with the error's last line."""
    done = subprocess.run([sys.executable, "-m", "tests.gaps_helpers", str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=1800, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        return {"failed": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the file (default 1,000,000)")
    parser.add_argument("--unanswered", type=int, default=25_000, help="unanswered questions a week (default 25,000)")
    parser.add_argument("--keep", type=Path, help="build the file here (or reuse it, if it exists)")
    args = parser.parse_args(argv)
    folder = None if args.keep else Path(tempfile.mkdtemp(prefix="content-gaps-"))
    path = args.keep or folder / "traces.duckdb"
    try:
        if not path.exists():
            made = build(path, args.rows, args.unanswered)
            print(f"built {made['rows']:,} rows in {made['seconds']:.0f} s ({made['mb']:,.0f} MB)", flush=True)
        result = measure(path)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    if "failed" in result:
        print(f"content gaps failed: {result['failed']}")
        return 1
    ok = result["seconds"] <= SECONDS_BOUND and result["peak_mb"] <= RSS_BOUND_MB
    print(f"{'step':<28} {'seconds':>8} {'peak MB':>8}  bound")
    print(f"{'content gaps, 7 days':<28} {result['seconds']:>8.2f} {result['peak_mb']:>8.0f}  "
          f"≤ {SECONDS_BOUND:g} s, ≤ {RSS_BOUND_MB} MB  {'ok' if ok else 'OVER'}")
    print(f"{result['questions']:,} unanswered questions ({result['distinct']:,} distinct) in {result['topics']} "
          f"topics, {result['unclustered']:,} in no topic")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
