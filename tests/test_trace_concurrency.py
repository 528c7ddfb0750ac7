"""Recording under load: the cost of record(), several writer processes on one file, a SIGKILLed
writer, and readers (the Traces page's queries) while writers run.

Writers are forked from the test process, so they share its imported modules and index: the tests
measure the store, not Python's start-up.
"""

from __future__ import annotations

import os
import signal
import statistics
import threading
import time
from pathlib import Path

from retrieval import TraceStore, lookup_knowledge
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces import db as trace_db
from tests.trace_helpers import FORK, LOOKUPS, WRITERS


def test_four_processes_times_500_recorded_lookups_lose_nothing(four_writers):
    assert four_writers["exitcodes"] == [0] * WRITERS
    stored = TraceStore(four_writers["path"]).query("SELECT query_id, count(*) AS n FROM tool_invocation GROUP BY 1")
    assert set(stored["query_id"]) == {f"w{n}-{i}" for n in range(WRITERS) for i in range(LOOKUPS)}
    assert (stored["n"] == 1).all()


def test_readers_keep_working_while_four_writers_run(four_writers):
    outcomes, counts = four_writers["outcomes"], four_writers["counts"]
    rate = sum(outcomes) / len(outcomes)
    print(f"reader success rate {rate:.1%} over {len(outcomes)} reads while {WRITERS} writers ran")
    assert len(outcomes) >= 5, "the reader loop must overlap the writers"
    assert rate >= 0.8, f"reader success rate {rate:.1%} over {len(outcomes)} reads"
    assert counts == sorted(counts) and counts[-1] > counts[0], "readers must see rows arrive as writers run"


def test_record_cost_is_at_most_one_millisecond_amortised(tmp_path, index):
    template = []
    lookup_knowledge("PagerDuty escalation routing", index=index, recorder=template.append)
    store = TraceStore(tmp_path / "cost.duckdb")
    costs = []
    for i in range(500):
        invocation = ToolInvocation(template[0].tool_name, f"q{i}", template[0].arguments, "ok", 3.0,
                                    template[0].config, template[0].retrieval_details)
        started = time.perf_counter()
        store.record(invocation)
        costs.append((time.perf_counter() - started) * 1000)
    amortised = sum(costs) / len(costs)
    print(f"record(): amortised {amortised:.3f} ms, p50 {statistics.median(costs):.3f} ms over 500 records")
    assert amortised <= 1.0
    assert store.count() == 500


def _acknowledging_writer(path: str, acks) -> None:
    """Records until killed; sends each id once record() has returned (acknowledged)."""
    store = TraceStore(path, lock_timeout=60)
    for i in range(1_000_000):
        invocation = ToolInvocation("lookup_knowledge", f"q{i}", {}, "ok", 1.0, {}, {"pad": "x" * 200})
        store.record(invocation)
        acks.send(invocation.id)


def test_sigkill_of_a_writer_loses_nothing_it_acknowledged(tmp_path):
    path = str(tmp_path / "killed.duckdb")
    TraceStore(path).close()
    receive, send = FORK.Pipe(duplex=False)
    proc = FORK.Process(target=_acknowledging_writer, args=(path, send))
    proc.start()
    acknowledged = set()
    deadline = time.monotonic() + 30
    while len(acknowledged) < 3000 and time.monotonic() < deadline:  # long enough for drains mid-way
        acknowledged.add(receive.recv())
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(10)
    while receive.poll():
        acknowledged.add(receive.recv())
    assert proc.exitcode == -signal.SIGKILL and len(acknowledged) >= 1000
    stored = set(TraceStore(path).query("SELECT id FROM tool_invocation")["id"])
    assert acknowledged <= stored, f"{len(acknowledged - stored)} acknowledged row(s) lost"
    assert not list(Path(tmp_path).glob("*.draining"))


def test_threads_of_one_process_opening_and_closing_the_file_at_once_all_get_connections(tmp_path):
    """DuckDB 1.5 raises 'Unique file handle conflict' to a connect that races another thread's close of
    the file's last connection (the app's script thread against its background drain): it is retried."""
    path = tmp_path / "race.duckdb"
    trace_db.connect(path, timeout=5).close()
    failures: list[BaseException] = []

    def open_and_close() -> None:
        for _ in range(400):
            try:
                con = trace_db.connect(path, timeout=5)
                con.execute("SELECT 1").fetchone()
                con.close()
            except Exception as exc:  # noqa: BLE001 - collected, asserted below
                failures.append(exc)

    threads = [threading.Thread(target=open_and_close) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, {f"{type(e).__name__}: {e}" for e in failures}
