"""The processes of tests/test_trace_concurrency.py: writers forked from the test process (so they share its
imported modules and index) that record lookups into one trace file as fast as they can for SECONDS, and a
plain DuckDB client in a process of its own that opens the file read-only every 100 ms, as issue 31 measured."""

from __future__ import annotations

import json
import multiprocessing
import time
import warnings
from pathlib import Path

from retrieval import TraceStore, lookup_knowledge

FORK = multiprocessing.get_context("fork")
WRITERS, SECONDS = 4, 13.0
WARM_UP = 3.0  # seconds the writers record before the plain client starts: their first drain makes the live
# view, the one moment the write lock is taken (about 20 ms, more on a saturated machine; docs/traces.md)
QUERIES = ("PagerDuty escalation", "silence alerts", "download invoices", "rotate an API token", "retention")
READER_LOCK_TIMEOUT = 3.0  # as the app's Traces page (appui.widgets.state.LOCK_TIMEOUT)
PLAIN_EVERY = 0.1  # seconds between the plain client's tries

PLAIN_CLIENT = r"""
import json, re, sys, time
import duckdb
path, until, every = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
ok, failed, errors = 0, 0, []
while time.time() < until:
    started = time.monotonic()
    try:
        con = duckdb.connect(path, read_only=True)
        try:
            con.execute("SELECT count(*) FROM tool_invocation").fetchone()
        finally:
            con.close()
        ok += 1
    except duckdb.Error as exc:
        failed += 1
        first = str(exc).splitlines()[0]
        holder = re.search(r"\(PID (\d+)\)", first)
        try:  # who held the file: a writer (the test's command line), a keeper, a helper
            with open(f"/proc/{holder.group(1)}/cmdline", "rb") as cmdline:
                who = cmdline.read().replace(b"\0", b" ").decode(errors="replace")[:160]
        except (AttributeError, OSError):
            who = "?"
        pid = holder.group(1) if holder else "?"
        errors.append(f"at {time.time() - until:+.2f} s from the end, held by {pid} [{who}]: {first[:160]}")
    time.sleep(max(0.0, every - (time.monotonic() - started)))
print(json.dumps({"ok": ok, "failed": failed, "errors": errors[:5]}))
"""


def record_lookups(path: str, name: str, index, start: float, seconds: float, report: str) -> None:
    """A writer process: recorded lookups from `start` for `seconds`, then a clean close (flush); writes how
    many it recorded and every warning it saw to `report` (JSON)."""
    while time.time() < start:
        time.sleep(0.001)
    began = time.time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recorded = 0
        with TraceStore(path, lock_timeout=60) as store:
            while time.time() < start + seconds:
                lookup_knowledge(QUERIES[recorded % len(QUERIES)], index=index, recorder=store,
                                 query_id=f"{name}-{recorded}")
                recorded += 1
    Path(report).write_text(json.dumps({"recorded": recorded, "late": round(began - start, 3),
                                        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}))
