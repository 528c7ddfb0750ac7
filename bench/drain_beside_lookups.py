"""Benchmark (not a test): what background drains cost the lookups beside them, at 100k chunks.
`python bench/drain_beside_lookups.py [--chunks 100000] [--rounds 3]`.

On the real-text corpus of bench/run.py, each query is looked up three ways in turn (the order rotating
query by query): with no recorder, with a TraceStore whose background drains run (DuckDB inserting beside
the lookups), and with a TraceStore whose background drains are held off until the end (the rows wait in
the spool). The two traced arms differ only in the drains, so their ratio is the drains' cost, measured
in one run; the traced / plain ratio is what recording adds (mostly `record()`, 0.2-0.4 ms).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realtext import build_corpus, queries_from

from retrieval import TraceStore, lookup_knowledge, open_index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the queries (default 3)")
    parser.add_argument("--corpus-dir", type=Path, default=Path(tempfile.gettempdir()) / "lookup-knowledge-bench")
    args = parser.parse_args(argv)
    corpus = build_corpus(args.chunks, args.corpus_dir)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        index = open_index(corpus.root, cache_dir=folder / "cache")
        queries = [query for _, query in queries_from(corpus, args.queries)]
        draining, held = TraceStore(folder / "draining.duckdb"), TraceStore(folder / "held.duckdb")
        held.drain_in_background = lambda: None  # type: ignore[method-assign]
        for query in queries[:10]:  # warm-up: caches, the first DuckDB insert
            lookup_knowledge(query, index=index, recorder=draining)
            lookup_knowledge(query, index=index, recorder=held)
        draining.flush()
        held.flush()
        arms = [("no recorder", None), ("TraceStore, drains running", draining), ("TraceStore, drains held off", held)]
        times: dict[str, list[float]] = {name: [] for name, _ in arms}
        for round_ in range(args.rounds):
            for position, query in enumerate(queries):
                turn = (position + round_) % len(arms)
                for name, recorder in arms[turn:] + arms[:turn]:
                    started = time.perf_counter()
                    lookup_knowledge(query, index=index, recorder=recorder)
                    times[name].append((time.perf_counter() - started) * 1000)
        stored = draining.count()
        draining.close()
        held.close()
    print(f"{args.chunks:,} chunks, {len(queries)} queries x {args.rounds} rounds per arm, interleaved; "
          f"{stored} rows drained beside the lookups")
    for name, values in times.items():
        ordered = sorted(values)
        print(f"  {name:30s} p50 {statistics.median(values):6.2f} ms   mean {statistics.fmean(values):6.2f} ms   "
              f"p95 {ordered[int(0.95 * (len(ordered) - 1))]:6.2f} ms")
    p50 = {name: statistics.median(values) for name, values in times.items()}
    print(f"  drains running / held off (p50)   {p50[arms[1][0]] / p50[arms[2][0]]:.3f}")
    print(f"  traced (drains running) / plain   {p50[arms[1][0]] / p50[arms[0][0]]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
