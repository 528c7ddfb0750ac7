"""Benchmark (not a test): what recording costs a lookup. `python bench/trace_store_bench.py [--rounds N]`.

On the sample knowledge base, each query is looked up without a recorder and with a `TraceStore`,
alternately, so both sides see the same machine load; figures are ratios from this one run:
- lookup p50/p95 with and without the recorder;
- `record()` p50/p95 and amortised (the `timings_ms.record` of each lookup), and amortised with the
  final flush (every row in the table) counted in;
- the previous design's cost for comparison: a synchronous connect-insert-close per call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from retrieval import TraceStore, lookup_knowledge, open_index
from retrieval.paths import SAMPLE_KB, SAMPLE_QUERIES


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="passes over the sample queries (default 5)")
    parser.add_argument("--sync-calls", type=int, default=20, help="calls timed for the synchronous design")
    args = parser.parse_args(argv)
    index = open_index(SAMPLE_KB)
    queries = [json.loads(line)["text"] for line in SAMPLE_QUERIES.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as folder:
        store = TraceStore(Path(folder) / "bench.duckdb")
        for query in queries[:10]:  # warm-up: caches, imports, the first DuckDB insert
            lookup_knowledge(query, index=index, recorder=store)
        store.flush()
        plain, traced, record = [], [], []
        for round_ in range(args.rounds):
            for position, query in enumerate(queries):
                for recorded in ((False, True) if (round_ + position) % 2 else (True, False)):  # either goes first
                    started = time.perf_counter()
                    result = lookup_knowledge(query, index=index, recorder=store if recorded else None)
                    (traced if recorded else plain).append((time.perf_counter() - started) * 1000)
                    if recorded:
                        record.append(result.retrieval_details["timings_ms"]["record"])
        started = time.perf_counter()
        store.flush()
        flush_ms = (time.perf_counter() - started) * 1000
        sync = []
        for query in queries[:args.sync_calls]:
            started = time.perf_counter()
            lookup_knowledge(query, index=index, recorder=store)
            store.flush()
            sync.append((time.perf_counter() - started) * 1000)
        rows = store.count()
        store.close()
    n = len(record)
    print(f"trace store bench: {n} lookups with and {len(plain)} without a recorder, alternately; "
          f"{rows} rows stored")
    print(f"  lookup without recorder   p50 {statistics.median(plain):7.3f} ms   p95 {_pct(plain, 0.95):7.3f} ms")
    print(f"  lookup with TraceStore    p50 {statistics.median(traced):7.3f} ms   p95 {_pct(traced, 0.95):7.3f} ms"
          f"   ratio p50 {statistics.median(traced) / statistics.median(plain):.2f}x")
    print(f"  record()                  p50 {statistics.median(record):7.3f} ms   p95 {_pct(record, 0.95):7.3f} ms"
          f"   amortised {sum(record) / n:.3f} ms ({sum(record) / sum(plain):.1%} of lookup time)")
    print(f"  with the final flush      amortised {(sum(record) + flush_ms) / n:.3f} ms per call "
          f"(flush of the last rows {flush_ms:.1f} ms)")
    print(f"  synchronous write per call (previous design) p50 {statistics.median(sync):7.3f} ms per lookup, "
          f"{statistics.median(sync) / statistics.median(traced):.1f}x the spooled lookup")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
