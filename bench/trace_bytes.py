"""Benchmark (not a test): what a trace row costs on disk, and what DuckDB's newer storage format saves.
`python bench/trace_bytes.py --kb DIR --queries FILE.jsonl` (default: the sample knowledge base and its questions).

Records one real lookup per distinct question under each of `--configs` settings (distinct rows, unlike
bench/trace_scale.py's replicas, which compress far better than a month of real calls), then copies the rows
into a file of DuckDB's default storage (v1.0.0, what the trace file uses: every DuckDB 1.x reads it) and
into one of storage v1.5.0 (ZSTD for long strings; only DuckDB 1.5 and later read it). Prints bytes per row
of each and the JSON path statement's time on each, measured in one run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from retrieval import LookupConfig, TraceStore, lookup_knowledge, open_index  # noqa: E402
from retrieval.paths import SAMPLE_KB  # noqa: E402

JSON_PATH = "SELECT retrieval_details->>'$.filter.decision' AS d, count(*) FROM tool_invocation GROUP BY 1"
CONFIGS = {"defaults": {}, "no filter": {"l0_filter": False}, "pool 40": {"l1_pool": 40},
           "top 10": {"top_k": 10}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=Path, default=SAMPLE_KB)
    parser.add_argument("--queries", type=Path, default=ROOT / "data" / "queries.jsonl")
    parser.add_argument("--configs", type=int, default=len(CONFIGS), help="how many of the settings to use")
    args = parser.parse_args(argv)
    import duckdb

    questions = [json.loads(line)["text"] for line in args.queries.read_text().splitlines() if line.strip()]
    index = open_index(args.kb)
    folder = Path(tempfile.mkdtemp(prefix="trace-bytes-"))
    source = folder / "recorded.duckdb"
    with TraceStore(source) as store:
        for changes in list(CONFIGS.values())[: args.configs]:
            top_k = changes.get("top_k", 5)
            config = LookupConfig(**{k: v for k, v in changes.items() if k != "top_k"})
            for text in questions:
                lookup_knowledge(text, top_k=top_k, config=config, index=index, recorder=store)
    print("| storage | rows | bytes per row | JSON path statement (s) |\n| --- | ---: | ---: | ---: |")
    for version in ("v1.0.0", "v1.5.0"):
        target = folder / f"{version}.duckdb"
        con = duckdb.connect()
        con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")
        con.execute(f"ATTACH '{target}' AS dst (STORAGE_VERSION '{version}')")
        con.execute("CREATE TABLE dst.tool_invocation AS SELECT * FROM src.tool_invocation")
        rows = con.execute("SELECT count(*) FROM dst.tool_invocation").fetchone()[0]
        con.close()
        reader = duckdb.connect(str(target), read_only=True)
        started = time.perf_counter()
        for _ in range(5):
            reader.execute(JSON_PATH).fetchall()
        seconds = (time.perf_counter() - started) / 5
        reader.close()
        print(f"| {version} | {rows:,} | {target.stat().st_size / rows:,.0f} | {seconds:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
