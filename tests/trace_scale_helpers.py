"""A large trace file replicated from real rows, for the scale benchmark (bench/trace_scale.py) and the suite's
scale guard.

Real lookups on the sample knowledge base are recorded first (interactive calls, and evaluation runs'), then
copied inside DuckDB with fresh ids, times spread over `days` and, for evaluation rows, one of `runs` run ids,
until the file holds `rows` rows with the asked share of evaluation rows. Nothing big passes through Python, and
rows are written in blocks, so building a million rows keeps memory flat.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.datasets import load_dataset
from eval.runs import run_evaluation
from retrieval import LookupConfig, TraceStore, lookup_knowledge, open_index
from retrieval.paths import SAMPLE_KB
from retrieval.traces import db as trace_db
from retrieval.traces.schema import TABLE

ROOT = Path(__file__).resolve().parents[1]
SEED = "replicate_seed"


@dataclass(frozen=True)
class Replicated:
    """What was built: rows in `tool_invocation`, how many belong to runs, the file's size in bytes."""

    rows: int
    run_rows: int
    runs: int
    file_bytes: int


def record_seed_rows(path: Path, *, interactive: int = 60) -> None:
    """Real rows to copy: `interactive` lookups of the sample questions, and one evaluation run of them."""
    store = TraceStore(path)
    index = open_index(SAMPLE_KB)
    dataset = load_dataset(ROOT / "data")
    questions = [q.text for q in dataset.queries]
    for n in range(interactive):
        lookup_knowledge(questions[n % len(questions)], index=index, recorder=store)
    run_evaluation(dataset, LookupConfig(), store=store, baseline=False, oracle=False)
    store.flush()


def replicate(path: Path, rows: int, *, run_share: float = 0.1, runs: int = 40, days: int = 30,
              block: int = 100_000) -> Replicated:
    """Grow the trace file at `path`, holding real recorded rows (some of a run), to `rows` rows: `run_share` of
    them evaluation rows spread over `runs` run ids, the rest interactive, over `days` days from 2026-01-01."""
    if rows < 1 or not 0 <= run_share <= 1 or runs < 1 or block < 1:
        raise ValueError(f"rows, runs and block must be positive and run_share in [0, 1], got rows={rows}, "
                         f"run_share={run_share}, runs={runs}, block={block}")
    con = trace_db.connect(Path(path), timeout=30.0)
    try:
        con.execute(f"CREATE TEMP TABLE {SEED} AS SELECT *, run_id IS NOT NULL AS seed_run, row_number() OVER "
                    f"(PARTITION BY run_id IS NOT NULL ORDER BY id) - 1 AS seed_n FROM {TABLE}")
        seeds = dict(con.execute(f"SELECT seed_run, count(*) FROM {SEED} GROUP BY 1").fetchall())
        if not seeds.get(False) or (run_share > 0 and not seeds.get(True)):
            raise ValueError(f"{path} needs recorded interactive rows and, for run_share > 0, rows of a run")
        columns = [r[0] for r in con.execute(f"SELECT column_name FROM (DESCRIBE {TABLE})").fetchall()]
        con.execute(f"DELETE FROM {TABLE}")
        in_runs = round(rows * run_share)
        for seed_run, total in ((False, rows - in_runs), (True, in_runs)):
            for start in range(0, total, block):
                select = ", ".join(_expression(name, seed_run, runs, days, total) for name in columns)
                end = start + min(block, total - start)
                con.execute(f"INSERT INTO {TABLE} SELECT {select} FROM range({start}, {end}) g(i) JOIN {SEED} s "
                            f"ON s.seed_run = {str(seed_run).lower()} AND s.seed_n = g.i % {seeds.get(seed_run, 1)}")
        con.execute("CHECKPOINT")
        total, in_runs = con.execute(f"SELECT count(*), count(run_id) FROM {TABLE}").fetchone()
    finally:
        con.close()
    return Replicated(int(total), int(in_runs), runs if in_runs else 0, Path(path).stat().st_size)


def _expression(name: str, seed_run: bool, runs: int, days: int, total: int) -> str:
    """A column of a copied row: new id; a time that grows with the row's position over `days` (rows are
    stored in the order drains wrote them, oldest first); a run's rows get one of `runs` run ids."""
    if name == "id":
        return "uuid()::VARCHAR AS id"
    if name == "created_at":
        step = days * 86_400 * 10**6 // max(total, 1)  # microseconds between two rows
        return f"TIMESTAMP '2026-01-01' + to_microseconds((g.i * {step})::BIGINT) AS created_at"
    if seed_run and name == "run_id":
        return f"'run-' || lpad((g.i % {runs})::VARCHAR, 4, '0') AS run_id"
    if seed_run and name == "query_id":
        return f"coalesce(s.query_id, 'q') || '-' || (g.i // {runs})::VARCHAR AS query_id"
    return f"s.{name}"


# ---- steps measured at scale, each run in its own process (`run_step`) so its peak RSS is its own ----

SQL = {"group_by": "SELECT retrieval_layer, l1_status, count(*) AS calls, round(avg(latency_ms), 1) AS avg_ms "
                   "FROM tool_invocation GROUP BY ALL ORDER BY calls DESC",
       "json_extract": "SELECT retrieval_details->>'$.filter.decision' AS decision, count(*) AS calls "
                       "FROM tool_invocation GROUP BY 1 ORDER BY 2 DESC",
       "limit": "SELECT id, created_at, query, latency_ms FROM tool_invocation LIMIT 100"}
PAGES = {"lookup": "appui/pages/lookup.py", "compare": "appui/pages/compare.py",
         "traces": "appui/pages/traces.py", "export": "appui/pages/export.py", "trends": "appui/pages/trends.py"}


def _peak_mb() -> float:
    """This process's peak RSS (VmHWM), which exec resets; getrusage's ru_maxrss keeps the parent's peak at fork."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _timed(work) -> dict[str, Any]:
    started = time.perf_counter()
    work()
    return {"seconds": time.perf_counter() - started, "peak_mb": _peak_mb()}


def render(path: Path, page: str, mode: str = "") -> dict[str, Any]:
    """A page's first render in a fresh AppTest session on the trace file at `path` (the Lookup page: a rerun,
    since its first run opens the index), with the errors it showed; `mode` "all": then the Run filter set to
    every run (both timed); "rerun": the page's second run over the unchanged file (only that timed)."""
    from streamlit.testing.v1 import AppTest

    os.environ["LOOKUP_KNOWLEDGE_TRACES"] = str(path)
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
    if mode == "rerun":
        app = app.switch_page(PAGES[page]).run()
    started = time.perf_counter()
    app = app.switch_page(PAGES[page]).run() if page != "lookup" and mode != "rerun" else app.run()
    if mode == "all":
        app = app.selectbox(key="tr_run").set_value("(all)").run()
    errors = [e.value for e in app.exception] + [e.value for e in app.error]
    return {"seconds": time.perf_counter() - started, "peak_mb": _peak_mb(), "errors": errors[:3]}


def sql_box(path: Path, name: str) -> dict[str, Any]:
    """One of `SQL`'s statements in the app's SQL box, on the file in place (no time limit: its real time)."""
    from appui.data import sql_sandbox

    return _timed(lambda: sql_sandbox.run(path, SQL[name], timeout_s=3600))


def export_parquet(path: Path, out: Path) -> dict[str, Any]:
    """Every row to Parquet, as `python -m retrieval traces export --format parquet` does it."""
    from retrieval.traces import export

    return _timed(lambda: export.export_traces(path, out, "parquet"))


def drain(path: Path, batch: int) -> dict[str, Any]:
    """`batch` lookups recorded into the file's spool, then the drain that moves them into the table, timed."""
    from retrieval import TraceStore, lookup_knowledge, open_index
    from retrieval.paths import SAMPLE_KB

    index = open_index(SAMPLE_KB)
    store = TraceStore(path)
    for _ in range(batch):
        lookup_knowledge("rotate an API token", index=index, recorder=store)
    return _timed(store.flush)


def prune_before(path: Path, day: str) -> dict[str, Any]:
    """`python -m retrieval traces prune --before DAY` (interactive rows only), without compacting."""
    from datetime import datetime

    from retrieval.traces.prune import prune

    return _timed(lambda: prune(path, datetime.fromisoformat(day)))


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def trends_step(path: Path, since: str, until: str, by: str, per: str = "") -> dict[str, Any]:
    """`retrieval.traces.trends.trends` over [since, until) (the function, timed after its imports): seconds, the
    process's peak RSS and its rise over the call, the buckets and lookups it returned."""
    from retrieval.traces.trends import trends

    before, found = _rss_mb(), {}
    figures = _timed(lambda: found.setdefault("r", trends(path, since=since, until=until, by=by, per=per or None)))
    return {**figures, "rss_rise_mb": _peak_mb() - before, "buckets": len(found["r"].rows),
            "lookups": found["r"].total["lookups"]}


def changes_step(path: Path, window: str, until: str) -> dict[str, Any]:
    """`retrieval.traces.changes.changes` (the function, timed after its imports), and its HTML report made."""
    from retrieval.traces.changes import changes

    before, found = _rss_mb(), {}
    figures = _timed(lambda: found.setdefault("r", changes(path, window=window, until=until)).to_html())
    return {**figures, "rss_rise_mb": _peak_mb() - before, "tested": found["r"].tested(),
            "significant": len(found["r"].significant())}


def command(path: Path, *args: str) -> dict[str, Any]:
    """`python -m retrieval traces ARGS --traces PATH` as a user runs it: the whole process, timed, its peak RSS
    (ru_maxrss of the child, its own process), its exit status."""
    import resource

    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "retrieval", "traces", *args, "--traces", str(path)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "exit": done.returncode, "errors": [done.stderr.strip()] if done.returncode not in (0, 1) else []}


STEPS = {"render": lambda path, *a: render(path, *a),
         "trends": lambda path, *a: trends_step(path, *a),
         "changes": lambda path, window, until: changes_step(path, window, until),
         "command": lambda path, *a: command(path, *a),
         "sql": lambda path, name: sql_box(path, name),
         "export": lambda path, out: export_parquet(path, Path(out)),
         "drain": lambda path, batch: drain(path, int(batch)),
         "prune": lambda path, day: prune_before(path, day)}


def run_step(step: str, path: Path, *args: str, timeout: float = 1800) -> dict[str, Any]:
    """`step` in a child process (its figures as a dict; `failed` holds the error's last line if it failed)."""
    done = subprocess.run([sys.executable, "-m", "tests.trace_scale_helpers", step, str(path), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        return {"seconds": float("nan"), "peak_mb": float("nan"),
                "failed": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    print(json.dumps(STEPS[sys.argv[1]](Path(sys.argv[2]), *sys.argv[3:])))
