"""The writer processes of tests/test_trace_concurrency.py: forked from the test process, so they share its
imported modules and index, and each records LOOKUPS lookups into one trace file."""

from __future__ import annotations

import multiprocessing
import time

from retrieval import TraceStore, lookup_knowledge

FORK = multiprocessing.get_context("fork")
WRITERS, LOOKUPS = 4, 500
QUERIES = ("PagerDuty escalation", "silence alerts", "download invoices", "rotate an API token", "retention")
READER_LOCK_TIMEOUT = 3.0  # as the app's Traces page (appui.widgets.state.LOCK_TIMEOUT)


def record_lookups(path: str, name: str, index, start: float) -> None:
    """A writer process: LOOKUPS recorded lookups, then a clean close (flush)."""
    while time.time() < start:
        time.sleep(0.001)
    with TraceStore(path, lock_timeout=60) as store:
        for i in range(LOOKUPS):
            lookup_knowledge(QUERIES[i % len(QUERIES)], index=index, recorder=store, query_id=f"{name}-{i}")
