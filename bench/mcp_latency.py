"""Benchmark (not a test): a warm MCP server's call latency at the client, beside the CLI's per-call cost.

`python bench/mcp_latency.py [--calls 50] [--cli-runs 3] [--kb DIR]`

Starts `python -m retrieval mcp` over stdio with the SDK's client, warms it up, then times `--calls` calls of
`lookup_knowledge` (the sample's labelled queries in turn) from request to parsed result: p50 and p90, once
recording traces to a scratch DuckDB file and once with `--no-trace`. Then it spawns
`python -m retrieval lookup` `--cli-runs` times, which is what an agent without a warm server pays per call,
and times `TraceStore.record` in-process, the part of a traced call that the trace store owns.
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

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # time this tree's TraceStore, as the spawned servers (cwd ROOT) run it
TARGET_MS = 20.0
WARM_UP_CALLS = 5


def _queries() -> list[str]:
    lines = (ROOT / "data" / "queries.jsonl").read_text().splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()]


async def _server_latencies(flags: list[str], calls: int, queries: list[str]) -> tuple[float, list[float]]:
    """Seconds from spawn to an initialised session, and each timed call's latency in ms."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "retrieval", "mcp", *flags], cwd=str(ROOT))
    started = time.perf_counter()
    async with stdio_client(params, errlog=subprocess.DEVNULL) as streams, ClientSession(
            *streams, client_info=types.Implementation(name="bench-mcp-latency", version="1")) as session:
        await session.initialize()
        ready = time.perf_counter() - started
        for query in queries[:WARM_UP_CALLS]:
            await session.call_tool("lookup_knowledge", {"query": query})
        latencies = []
        for i in range(calls):
            begun = time.perf_counter()
            result = await session.call_tool("lookup_knowledge", {"query": queries[i % len(queries)]})
            latencies.append((time.perf_counter() - begun) * 1000)
            if result.is_error:
                raise RuntimeError(f"call failed: {result.content}")
    return ready, latencies


def _cli_seconds(kb: list[str], traces: Path, query: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "retrieval", "lookup", query, *kb, "--traces", str(traces), "--compact"],
                   cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - started


def _record_ms(traces: Path, rows: int = 20) -> float:
    """Median cost of `TraceStore.record` per row in this process: the traced server pays it on every call."""
    from retrieval import ToolInvocation, TraceStore

    store, times = TraceStore(traces), []
    for i in range(rows):
        invocation = ToolInvocation("lookup_knowledge", f"bench {i}", {"query": f"bench {i}"}, "ok", 1.0, {}, {})
        started = time.perf_counter()
        store.record(invocation)
        times.append((time.perf_counter() - started) * 1000)
    for name in ("flush", "close"):  # a buffered store (if any) is drained before the scratch folder goes
        getattr(store, name, lambda: None)()
    return statistics.median(times)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="timed calls per server (default 50)")
    parser.add_argument("--cli-runs", type=int, default=3, help="CLI processes spawned (default 3)")
    parser.add_argument("--kb", default=None, help="knowledge base (default: the sample in data/kb)")
    args = parser.parse_args()
    kb, queries = (["--kb", args.kb] if args.kb else []), _queries()
    with tempfile.TemporaryDirectory() as scratch:
        traces = Path(scratch) / "traces.duckdb"
        runs = {"traced": [*kb, "--traces", str(traces)], "--no-trace": [*kb, "--no-trace"]}
        results = {name: anyio.run(_server_latencies, flags, args.calls, queries) for name, flags in runs.items()}
        cli = [_cli_seconds(kb, traces, queries[i % len(queries)]) * 1000 for i in range(args.cli_runs)]
        record_ms = _record_ms(Path(scratch) / "record.duckdb")
    cli_ms = statistics.median(cli)
    print(f"MCP server over stdio, {args.calls} calls on {args.kb or 'the sample (data/kb)'} after "
          f"{WARM_UP_CALLS} warm-up calls:")
    for name, (ready, latencies) in results.items():
        p50 = statistics.median(latencies)
        print(f"  {name:>10}: p50 {p50:6.1f} ms, p90 {_percentile(latencies, 0.9):6.1f} ms "
              f"(target <= {TARGET_MS:.0f} ms: {'met' if p50 <= TARGET_MS else 'NOT met'}); "
              f"spawn to ready {ready:.1f} s")
    print(f"TraceStore.record in this process: median {record_ms:.1f} ms per row (the traced server pays it per call)")
    traced_p50 = statistics.median(results["traced"][1])
    print(f"CLI `python -m retrieval lookup`, one process per call: median {cli_ms:,.0f} ms over {args.cli_runs} "
          f"runs = {cli_ms / traced_p50:,.0f}x the warm server's traced p50")


if __name__ == "__main__":
    main()
