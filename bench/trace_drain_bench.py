"""Benchmark (not a test): what it costs to put traces in the table. `python bench/trace_drain_bench.py`.

All figures come from this one run, with the compared cases interleaved so both see the same machine load:
- the CLI: `python -m retrieval lookup` with `--traces` (its row handed to the keeper, in the table within
  about a second of its exit) against `--no-trace`, alternating, as the ratio of the medians (bound: 1.15);
  back to back (a session: the keeper at work), or with `--cli-gap 4` (each traced run starts its helper);
- a warm drain of 500 spooled rows (real lookup rows of the sample knowledge base, padded to the size of a
  Hugo-docs row, ~11 kB): `flush()` in a process that has drained before (bound: 0.6 s);
- the same 500 rows drained by a fresh process (`python -c "TraceStore(path).flush()"`);
- `record()` amortised over many lookups, drains included (bound: 1 ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from retrieval import ToolInvocation, TraceStore, lookup_knowledge, open_index  # noqa: E402
from retrieval.paths import SAMPLE_KB, SAMPLE_QUERIES  # noqa: E402

ROW_BYTES = 11_000  # a Hugo-docs lookup's spool line


def _queries() -> list[str]:
    return [json.loads(line)["text"] for line in SAMPLE_QUERIES.read_text().splitlines() if line.strip()]


def _cli(folder: Path, query: str, traced: bool) -> float:
    args = [sys.executable, "-m", "retrieval", "lookup", query, "--kb", str(SAMPLE_KB), "--compact"]
    args += ["--traces", str(folder / "cli.duckdb")] if traced else ["--no-trace"]
    started = time.perf_counter()
    subprocess.run(args, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - started


def _rows(index, queries: list[str], count: int) -> list[ToolInvocation]:
    rows = []
    while len(rows) < count:
        for query in queries:
            captured: list[ToolInvocation] = []
            lookup_knowledge(query, index=index, recorder=captured.append)
            row = captured[0]
            pad = max(0, ROW_BYTES - len(json.dumps(row.retrieval_details, default=str)))
            rows.append(ToolInvocation(row.tool_name, row.query, row.arguments, row.status, row.latency_ms,
                                       row.config, {**row.retrieval_details, "pad": "x" * pad}))
            if len(rows) == count:
                break
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli-runs", type=int, default=12, help="CLI runs per side (default 12)")
    parser.add_argument("--cli-gap", type=float, default=0.0,
                        help="seconds to wait before each CLI run: 4 or more lets the last run's keeper fold and "
                             "exit, so each traced run starts its own helper (default 0: a session of lookups)")
    parser.add_argument("--drains", type=int, default=5, help="500-row drains per case (default 5)")
    parser.add_argument("--lookups", type=int, default=600, help="recorded lookups for record()'s cost")
    args = parser.parse_args(argv)
    queries = _queries()
    index = open_index(SAMPLE_KB)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        _cli(folder, queries[0], True)  # warm the index cache and the file
        traced, plain = [], []
        for i in range(args.cli_runs):
            query = queries[i % len(queries)]
            pair = [(True, traced), (False, plain)]
            for flag, into in (pair if i % 2 == 0 else pair[::-1]):
                time.sleep(args.cli_gap)
                into.append(_cli(folder, query, flag))
        t, p = statistics.median(traced), statistics.median(plain)
        paired = statistics.median(a / b for a, b in zip(traced, plain, strict=True))
        print(f"CLI lookup, median of {args.cli_runs}: traced {t:.3f} s, --no-trace {p:.3f} s, ratio {t / p:.3f} "
              f"(median of the {args.cli_runs} back-to-back pairs' ratios: {paired:.3f}; extra "
              f"{1000 * (t - p):.0f} ms)")

        rows = _rows(index, queries, 500)
        size = len(b"".join(__import__("retrieval.traces.rows", fromlist=["encode"]).encode(r) for r in rows)) / 500
        store = TraceStore(folder / "warm.duckdb")
        store.record_many(rows[:10])
        store.flush()  # this process has drained once: DuckDB loaded, the file migrated
        warm, fresh = [], []
        for round_ in range(args.drains):
            batch = [ToolInvocation(r.tool_name, r.query, r.arguments, r.status, r.latency_ms, r.config,
                                    r.retrieval_details) for r in rows]
            store.record_many(batch)
            started = time.perf_counter()
            store.flush()
            warm.append(time.perf_counter() - started)
            other = TraceStore(folder / f"fresh-{round_}.duckdb")
            other.record_many(batch)
            other._spool.close()
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import sys; from retrieval import TraceStore; "
                            "TraceStore(sys.argv[1]).flush()", str(other.path)], cwd=ROOT, check=True,
                           capture_output=True)
            fresh.append(time.perf_counter() - started)
        print(f"drain of 500 rows ({size / 1000:.1f} kB each), median of {args.drains}: warm "
              f"{statistics.median(warm):.3f} s, fresh process {statistics.median(fresh):.3f} s "
              f"(start-up included)")
        store.close()

        recorder = TraceStore(folder / "record.duckdb")
        spent = []
        started = time.perf_counter()
        for i in range(args.lookups):
            result = lookup_knowledge(queries[i % len(queries)], index=index, recorder=recorder)
            spent.append(result.retrieval_details["timings_ms"]["record"])
        flush_started = time.perf_counter()
        recorder.close()
        flushed = (time.perf_counter() - flush_started) * 1000
        wall = time.perf_counter() - started
        print(f"record(): p50 {statistics.median(spent):.3f} ms, mean {statistics.fmean(spent):.3f} ms; amortised "
              f"with the final drain {(sum(spent) + flushed) / args.lookups:.3f} ms over {args.lookups} lookups "
              f"({wall:.1f} s, background drains running)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
