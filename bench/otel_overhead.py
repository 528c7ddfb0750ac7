"""Benchmark (not a test): what OpenTelemetry export costs a lookup at 100k chunks, against a live local receiver.
`python bench/otel_overhead.py [--chunks 100000] [--rounds 3] [--endpoint URL]`.

On the real-text corpus of bench/run.py, each query is looked up two ways in turn (the order alternating query
by query): recorded in a TraceStore only, and recorded in a TraceStore and exported as OpenTelemetry spans over
OTLP/HTTP (the pipeline `--otlp-endpoint` builds: background span making, batch export). The receiver is
`python -m retrieval.otel.receiver` in its own process (a real OTLP/HTTP endpoint that decodes every request),
or `--endpoint` (Phoenix, a collector). Both arms in one run, so the ratio of their p50s is the export's cost;
the bound is 1.2.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realtext import build_corpus, queries_from

from retrieval import TraceStore, combine_recorders, lookup_knowledge, open_index
from retrieval.otel import settings_from_env, start_tracing

BOUND = 1.2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the queries (default 3)")
    parser.add_argument("--endpoint", default=None, help="an OTLP/HTTP endpoint already running (default: start "
                                                         "python -m retrieval.otel.receiver on a free port)")
    parser.add_argument("--corpus-dir", type=Path, default=Path(tempfile.gettempdir()) / "lookup-knowledge-bench")
    args = parser.parse_args(argv)
    corpus = build_corpus(args.chunks, args.corpus_dir)
    receiver = None if args.endpoint else _start_receiver()
    endpoint = args.endpoint or receiver[1]
    try:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            index = open_index(corpus.root, cache_dir=folder / "cache")
            queries = [query for _, query in queries_from(corpus, args.queries)]
            store = TraceStore(folder / "t.duckdb")
            tracing = start_tracing(settings_from_env({}, endpoint))
            exported = combine_recorders(store, tracing.recorder)
            arms = [("TraceStore only", store), ("TraceStore + OTLP export", exported)]
            for query in queries[:10]:  # warm-up: caches, the first insert, the first export
                for _, recorder in arms:
                    lookup_knowledge(query, index=index, recorder=recorder)
            times: dict[str, list[float]] = {name: [] for name, _ in arms}
            for round_ in range(args.rounds):
                for position, query in enumerate(queries):
                    for name, recorder in arms if (position + round_) % 2 == 0 else arms[::-1]:
                        started = time.perf_counter()
                        lookup_knowledge(query, index=index, recorder=recorder)
                        times[name].append((time.perf_counter() - started) * 1000)
            sent = tracing.shutdown(30.0)
            store.close()
    finally:
        received = _stop_receiver(receiver[0]) if receiver else None
    print(f"{corpus.chunks:,} chunks, {len(queries)} queries x {args.rounds} rounds per arm, interleaved; "
          f"export to {endpoint}: {tracing.exporter.exported} spans sent, {tracing.exporter.lost} lost"
          + (f"; the receiver decoded {received['spans']} spans in {received['requests']} requests" if received
             else "") + ("" if sent else " (the export did not finish)"))
    for name, values in times.items():
        ordered = sorted(values)
        print(f"  {name:26s} p50 {statistics.median(values):7.2f} ms   mean {statistics.fmean(values):7.2f} ms   "
              f"p95 {ordered[int(0.95 * (len(ordered) - 1))]:7.2f} ms")
    p50 = [statistics.median(times[name]) for name, _ in arms]
    ratio = p50[1] / p50[0]
    print(f"  p50 with export / without   {ratio:.3f}  (bound {BOUND}: {'met' if ratio <= BOUND else 'NOT met'})")
    return 0 if ratio <= BOUND else 1


def _start_receiver() -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "retrieval.otel.receiver", "--port", str(port), "--quiet"],
                               stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    process.stdout.readline()  # "receiving OTLP/HTTP at …": it listens
    return process, f"http://127.0.0.1:{port}"


def _stop_receiver(process: subprocess.Popen) -> dict[str, int]:
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    return json.loads(out.strip().splitlines()[-1])


if __name__ == "__main__":
    raise SystemExit(main())
