"""Trace files for the SQL box's tests: many rows inserted by DuckDB itself into a file whose schema TraceStore
made, a process that holds a trace file read-write, and a process's peak memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb

from retrieval import TraceStore

DECISIONS = ("applied", "none", "ambiguous")  # row i has DECISIONS[i % 3]
HOLDER = ("import duckdb, sys\n"
          "con = duckdb.connect(sys.argv[1])\n"
          "con.execute('BEGIN; INSERT INTO tool_invocation (id, created_at, tool_name, query, status) "
          "VALUES (\\'held\\', now(), \\'t\\', \\'q\\', \\'ok\\'); ROLLBACK')\n"
          "print('held', flush=True)\n"
          "sys.stdin.readline()\n")


def fill(path: Path, rows: int, *, padding_chars: int = 0) -> Path:
    """A trace file at `path` with `rows` calls; row i's retrieval_details holds the filter decision
    DECISIONS[i % 3] and `padding_chars` characters of text unique to the row (a large details object)."""
    TraceStore(path).close()
    decisions = "[" + ", ".join(f"'{d}'" for d in DECISIONS) + "]"
    with duckdb.connect(str(path)) as con:
        con.execute(f"""
            INSERT INTO tool_invocation (id, created_at, tool_name, query, status, latency_ms, retrieval_layer,
                                         filter_decision, l1_status, config, retrieval_details)
            SELECT 'call-' || range, TIMESTAMP '2025-01-01' + to_milliseconds(range), 'lookup_knowledge',
                   'query ' || range, 'ok', range % 97, ['L0', 'L0+L1'][1 + range % 2], {decisions}[1 + range % 3],
                   'ok', '{{}}',
                   json_object('filter', json_object('decision', {decisions}[1 + range % 3]),
                               'padding', left(repeat(md5(range::VARCHAR), {padding_chars // 32 + 1}),
                                               {padding_chars}))
            FROM range({int(rows)})""")
        con.execute("CHECKPOINT")
    return path


def hold(path: Path) -> subprocess.Popen:
    """Another process holding `path` read-write (DuckDB's file lock) until a line is written to its stdin."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    if proc.stdout.readline().strip() != "held":
        proc.kill()
        raise RuntimeError(f"the holder process could not open {path}")
    return proc


def release(proc: subprocess.Popen) -> None:
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(30)


# In a fresh process: the SQL box's first run (imports, DuckDB's start-up), then the peak memory (VmHWM) the
# process gains while it runs each statement in turn; prints the rows and the growth after each, as JSON
PEAK = """
import json, sys
from appui.data import sql_sandbox as sql_box

def peak_kb():
    with open('/proc/self/status') as status:
        return next(int(line.split()[1]) for line in status if line.startswith('VmHWM:'))

path, statements = sys.argv[1], json.loads(sys.argv[2])
sql_box.run(path, 'SELECT count(*) FROM tool_invocation')
before, out = peak_kb(), []
for sql in statements:
    rows = sql_box.run(path, sql).frame.values.tolist()
    out.append({'rows': rows, 'growth_mb': (peak_kb() - before) / 1024})
print(json.dumps(out, default=str))
"""


def peak_growth(path: Path, statements: list[str]) -> list[dict]:
    """Each statement's rows (the first page) and the process's peak-memory growth in MB up to it, from a fresh
    Python process running the SQL box on `path`."""
    done = subprocess.run([sys.executable, "-c", PEAK, str(path), json.dumps(statements)], capture_output=True,
                          text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise AssertionError(f"the measuring process failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)
