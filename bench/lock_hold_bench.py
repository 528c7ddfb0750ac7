"""Benchmark (not a test): the least time DuckDB's write lock must be held to put rows into the trace file itself,
the figure that rules out keeping every row inside the file while 4 writers record at full speed (issue 31).

    python bench/lock_hold_bench.py                    # 12 rounds of 500 lookup rows (~11 kB each)

The rows are prepared outside any lock, as well as they can be: parsed and checked once into an in-memory
DuckDB table of tool_invocation's exact types. Each round then times only what must hold the file's lock:
ATTACH the file read-write, INSERT the staged rows, COMMIT (DuckDB writes them to its log and syncs it),
DETACH (which folds the log into the file: it must be folded now and then anyway, since every connection
replays it when it opens); then a CHECKPOINT, which finds nothing left. Prints the medians per round and
per MB, and the share of time the lock would be held at the given rate of rows (default: issue 31's 10,176
rows in 20 s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from retrieval import TraceStore, lookup_knowledge, open_index  # noqa: E402
from retrieval.paths import SAMPLE_KB  # noqa: E402
from retrieval.traces import pack  # noqa: E402

QUERIES = ("PagerDuty escalation", "silence alerts", "download invoices", "rotate an API token", "retention")


def main(argv: list[str] | None = None) -> int:
    import duckdb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--rows", type=int, default=500, help="rows per round")
    parser.add_argument("--rate", type=float, default=10_176 / 20, help="rows a second to price the lock share at")
    args = parser.parse_args(argv)
    index = open_index(SAMPLE_KB)
    rows = []
    while len(rows) < args.rows:
        lookup_knowledge(QUERIES[len(rows) % len(QUERIES)], index=index, recorder=rows.append)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        path, source = folder / "t.duckdb", folder / "source.duckdb"
        TraceStore(path).close()
        with TraceStore(source) as store:  # the rows as the trace store stores them: its types, its JSON text
            store.record_many(rows)
        pack(source, timeout=10)
        megabytes = _spooled_mb(rows)
        staged = duckdb.connect(":memory:")
        staged.execute(f"ATTACH '{source}' AS source (READ_ONLY)")
        staged.execute("CREATE TABLE staged AS SELECT * FROM source.tool_invocation")  # outside any lock
        staged.execute("DETACH source")
        held, folded = [], []
        for _ in range(args.rounds):
            started = time.perf_counter()
            staged.execute(f"ATTACH '{path}' AS t")
            staged.execute("BEGIN TRANSACTION")
            staged.execute("INSERT INTO t.tool_invocation BY NAME SELECT * FROM staged")
            staged.execute("COMMIT")
            staged.execute("DETACH t")
            held.append(time.perf_counter() - started)
            con = duckdb.connect(str(path))
            started = time.perf_counter()
            con.execute("CHECKPOINT")
            folded.append(time.perf_counter() - started)
            con.close()
        insert, checkpoint = statistics.median(held), statistics.median(folded)
        per_mb = (insert + checkpoint) / megabytes
        share = per_mb * megabytes / args.rows * args.rate
        print(json.dumps({"rows_per_round": args.rows, "mb_per_round": round(megabytes, 2),
                          "attach_insert_commit_detach_ms": round(1000 * insert, 1),
                          "checkpoint_ms": round(1000 * checkpoint, 1), "lock_ms_per_mb": round(1000 * per_mb, 1),
                          "rate_rows_per_s": round(args.rate, 1), "least_write_lock_share": round(share, 3)},
                         indent=2))
    return 0


def _spooled_mb(rows: list) -> float:
    """The rows' size as spool lines (what a drain reads), in MB."""
    with tempfile.TemporaryDirectory() as name:
        store = TraceStore(Path(name) / "size.duckdb", background=False)
        store.record_many(rows)
        size = store.spool_path.stat().st_size
        store.detach()
    return size / 1e6


if __name__ == "__main__":
    raise SystemExit(main())
