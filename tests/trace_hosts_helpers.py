"""Three processes, tagged as three hosts, each writing its own trace file in one shared folder (issue 31, item 7):
what tests/test_trace_hosts.py and tests/test_app_hosts.py read together."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def three_hosts(folder: Path) -> dict[str, int]:
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
