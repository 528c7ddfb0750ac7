"""Benchmark (not a test): exports of a large trace file. `python bench/export_bench.py --rows 1000000`.

Makes a trace file of `--rows` rows in SQL (or takes `--traces FILE`): about 1 kB of JSON a row, every 10th
row a run's; then, each in its own process, timed by GNU time (`/usr/bin/time`: seconds, peak RSS):
- `python -m retrieval traces export` of every row to Parquet, CSV and JSONL: seconds, peak RSS, bytes;
- the app (Streamlit's AppTest on the sample knowledge base): the Export page's first render, then the
  page's download of the default rows (interactive lookups) as Parquet, as a click runs it, and a Markdown
  report; seconds and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from retrieval import TraceStore  # noqa: E402

APP = """
import json, os, sys, time
from streamlit.testing.v1 import AppTest
from appui.data import trace_export
from appui.data import traces as data
from retrieval import TraceStore
out = {}
started = time.perf_counter()
at = AppTest.from_file(sys.argv[1], default_timeout=600).run()
out["app_start_s"] = round(time.perf_counter() - started, 2)
started = time.perf_counter()
at = at.switch_page("appui/pages/export.py").run()
out["export_page_first_render_s"] = round(time.perf_counter() - started, 2)
assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
out["page_says"] = [m.value for m in at.markdown if "trace(s)" in m.value]
store = TraceStore(os.environ["LOOKUP_KNOWLEDGE_TRACES"], background=False)
started = time.perf_counter()
if sys.argv[2] == "download":
    out["download_bytes"] = len(trace_export.download_bytes(store, data.TraceFilters(), "Parquet"))
else:
    out["report_bytes"] = len(trace_export.report_bytes(store, data.TraceFilters(), "Markdown"))
out[sys.argv[2] + "_s"] = round(time.perf_counter() - started, 2)
print(json.dumps(out))
"""


def build(path: Path, rows: int) -> None:
    """`rows` rows of about 1 kB of JSON each, two seconds apart, every 10th of a run, every 7th query a formula."""
    TraceStore(path, background=False).detach()
    with duckdb.connect(str(path)) as con:
        con.execute(f"""INSERT INTO tool_invocation (id, created_at, tool_name, query, arguments, status, latency_ms,
            retrieval_layer, filter_decision, l1_status, run_id, config, retrieval_details)
          SELECT 'id-' || lpad(i::VARCHAR, 8, '0'), TIMESTAMP '2026-01-01' + to_seconds(i * 2), 'lookup_knowledge',
            CASE WHEN i % 7 = 0 THEN '=cmd|' || i ELSE 'query number ' || i END, '{{"top_k": 5}}'::JSON, 'ok',
            (i % 97)::DOUBLE, CASE WHEN i % 3 = 0 THEN 'L0' ELSE 'L0+L1' END,
            CASE WHEN i % 2 = 0 THEN 'applied' ELSE 'none' END, 'ok',
            CASE WHEN i % 10 = 0 THEN 'run-' || (i // 1000) ELSE NULL END, '{{"l0_filter": true}}'::JSON,
            json_object('retrieval_layer', 'L0', 'evidence', [
              json_object('source', 'a/' || i || '.md', 'content_preview', repeat(md5(i::VARCHAR) || ' lorem ', 12)),
              json_object('source', 'b/' || (i % 977) || '.md', 'content_preview',
                          repeat(md5((i + 1)::VARCHAR) || ' ipsum ', 12))])
          FROM range({int(rows)}) t(i)""")


def measured(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """Seconds, peak RSS (MB, GNU time's %M) and stdout of one child process."""
    done = subprocess.run(["/usr/bin/time", "-f", "%e %M", *argv], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")
    seconds, peak_kb = done.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(peak_kb) // 1024, done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the file made (default 200,000)")
    parser.add_argument("--traces", default=None, help="measure this trace file instead of making one")
    parser.add_argument("--formats", default="parquet,csv,jsonl", help="CLI export formats to time")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="export-bench-") as folder:
        traces = Path(args.traces) if args.traces else Path(folder) / "bench.duckdb"
        report: dict[str, object] = {}
        if not args.traces:
            started = time.perf_counter()
            build(traces, args.rows)
            report["build_s"] = round(time.perf_counter() - started, 1)
        report["file_mb"] = round(traces.stat().st_size / 1e6, 1)
        for fmt in filter(None, args.formats.split(",")):
            out = Path(folder) / f"out.{fmt}"
            seconds, peak, _ = measured([sys.executable, "-m", "retrieval", "traces", "export", "--traces",
                                         str(traces), "--format", fmt, "--output", str(out), "--overwrite"])
            report[f"cli_{fmt}"] = {"seconds": round(seconds, 1), "peak_rss_mb": peak,
                                    "output_mb": round(out.stat().st_size / 1e6, 1)}
            out.unlink()
        env = {"LOOKUP_KNOWLEDGE_TRACES": str(traces), "LOOKUP_KNOWLEDGE_KB": str(ROOT / "data" / "kb")}
        for step in ("download", "report"):
            seconds, peak, out = measured([sys.executable, "-c", APP, str(ROOT / "app.py"), step], env)
            report[f"app_{step}"] = {**json.loads(out.strip().splitlines()[-1]), "process_s": round(seconds, 1),
                                     "peak_rss_mb": peak}
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
