"""Many hosts (issue 31, item 7): three processes, tagged as three hosts, each write their own trace file in one
shared folder; the reading functions and a store (as eval and the app hold one) read the folder as one, each row
saying which host and process wrote it (the Traces page: tests/test_app_hosts.py)."""

from __future__ import annotations

from retrieval import TraceStore
from retrieval.traces import reader as trace_reader
from tests.trace_hosts_helpers import HOSTS, three_hosts


def test_three_hosts_files_read_as_one_say_which_host_and_process_wrote_each_row(tmp_path):
    folder = tmp_path / "shared"
    pids = three_hosts(folder)
    assert sorted(p.name for p in folder.glob("*.duckdb")) == ["alpha.duckdb", "beta.duckdb", "gamma.duckdb"]
    rows = trace_reader.query(folder, "SELECT host, pid, count(*) AS n, count(DISTINCT id) AS ids "
                                      "FROM tool_invocation GROUP BY ALL ORDER BY host")
    assert rows.values.tolist() == [[host, pids[host], n, n] for host, n in HOSTS.items()]
    files = [folder / f"{host}.duckdb" for host in HOSTS]  # a list of files reads the same
    assert trace_reader.count(files) == sum(HOSTS.values())
    runs = trace_reader.query(folder, "SELECT run_id FROM eval_run ORDER BY run_id")["run_id"].tolist()
    assert runs == sorted(f"run-{pid}" for pid in pids.values())  # every table is read as one


def test_a_store_writes_its_own_file_and_reads_every_hosts(tmp_path, monkeypatch):
    """What eval and the app hold: a TraceStore writing the host's file and reading all the folder's files."""
    from retrieval.paths import default_traces, trace_sources

    folder = tmp_path / "shared"
    three_hosts(folder)
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(folder))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_HOST", "delta")
    store = TraceStore(default_traces(), sources=trace_sources())
    assert store.path == folder / "delta.duckdb"
    from retrieval.lookup.invocation import ToolInvocation

    store.record(ToolInvocation("lookup_knowledge", "delta 0", {}, "ok", 1.0, {}, {}))
    hosts = store.query("SELECT host, count(*) AS n FROM tool_invocation GROUP BY 1 ORDER BY 1")
    assert hosts.values.tolist() == [[host, n] for host, n in sorted({**HOSTS, "delta": 1}.items())]
    store.close()
