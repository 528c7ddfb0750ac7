"""Many hosts (issue 31, item 7): three processes, tagged as three hosts, each write their own trace file in one
shared folder; the reading functions, eval's store and the app read the folder as one, each row saying which
host and process wrote it, and the Traces page filters by host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

from retrieval import TraceStore
from retrieval.traces import reader as trace_reader
from tests.app_helpers import APP, ok

ROOT = Path(__file__).resolve().parents[1]
HOSTS = {"alpha": 3, "beta": 5, "gamma": 2}  # host tag: rows it records

RECORD = """
import os, sys
from retrieval import TraceStore
from retrieval.lookup.invocation import ToolInvocation
from retrieval.paths import default_traces
count = int(sys.argv[1])
with TraceStore(default_traces()) as store:
    store.record_many([ToolInvocation("lookup_knowledge", f"{os.environ['LOOKUP_KNOWLEDGE_HOST']} {i}", {}, "ok",
                                      1.0, {}, {"retrieval_layer": "L0"}) for i in range(count)])
    with store.connect() as con:
        con.execute("INSERT INTO eval_run (run_id, created_at, dataset, status) VALUES (?, now()::TIMESTAMP, "
                    "'set', 'complete')", [f"run-{os.getpid()}"])
print(os.getpid(), default_traces())
"""


def _three_hosts(folder: Path) -> dict[str, int]:
    """Each host's process writes its rows (and one eval run) into the folder $LOOKUP_KNOWLEDGE_TRACES names;
    returns each host's process id."""
    folder.mkdir(parents=True, exist_ok=True)
    pids = {}
    for host, count in HOSTS.items():
        env = {**os.environ, "LOOKUP_KNOWLEDGE_TRACES": str(folder), "LOOKUP_KNOWLEDGE_HOST": host}
        done = subprocess.run([sys.executable, "-c", RECORD, str(count)], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        pid, written = done.stdout.split()
        assert Path(written) == folder / f"{host}.duckdb"  # a writer in a shared folder writes its host's file
        pids[host] = int(pid)
    return pids


def test_three_hosts_files_read_as_one_say_which_host_and_process_wrote_each_row(tmp_path):
    folder = tmp_path / "shared"
    pids = _three_hosts(folder)
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
    _three_hosts(folder)
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(folder))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_HOST", "delta")
    store = TraceStore(default_traces(), sources=trace_sources())
    assert store.path == folder / "delta.duckdb"
    from retrieval.lookup.invocation import ToolInvocation

    store.record(ToolInvocation("lookup_knowledge", "delta 0", {}, "ok", 1.0, {}, {}))
    hosts = store.query("SELECT host, count(*) AS n FROM tool_invocation GROUP BY 1 ORDER BY 1")
    assert hosts.values.tolist() == [[host, n] for host, n in sorted({**HOSTS, "delta": 1}.items())]
    store.close()


def test_the_traces_page_reads_every_hosts_file_and_filters_by_host(tmp_path, monkeypatch):
    folder = tmp_path / "shared"
    _three_hosts(folder)
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(folder))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_HOST", "analyst")  # the app writes its own file there
    at = ok(AppTest.from_file(APP, default_timeout=60).run())
    at = ok(at.switch_page("appui/pages/traces.py").run())
    at = ok(at.selectbox(key="tr_run").set_value("(all)").run())
    assert any(f"**{sum(HOSTS.values())} trace(s)** match" in m.value for m in at.markdown)
    assert set(at.multiselect(key="tr_host").options) == set(HOSTS)
    at = ok(at.multiselect(key="tr_host").set_value(["beta"]).run())
    assert any(f"**{HOSTS['beta']} trace(s)** match" in m.value for m in at.markdown)
    shown = at.dataframe(key="tr_table").value
    assert set(shown["host"]) == {"beta"} and shown["pid"].nunique() == 1
    assert json.dumps(sorted(shown["query"])) == json.dumps([f"beta {i}" for i in range(HOSTS["beta"])])
