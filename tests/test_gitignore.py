"""The .gitignore covers every file the project's writers leave in a working folder: the trace file and what
DuckDB and the trace store put beside it (log, spool, batch files, rejected lines, the live folder, the locks).

Each test runs real writers in a scratch git repository holding a copy of the project's .gitignore (the lookup
CLI, a TraceStore recording lookups, an eval run, the MCP server, the app), while a watcher notes every file
that appears, even for milliseconds. `git status --porcelain --untracked-files=all` must list nothing, both
while a writer holds the trace file and after they finish, and git must ignore every file the watcher saw.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval import TraceStore, lookup_knowledge
from retrieval.traces.spool import Spool
from retrieval.traces.store import TraceSpoolRejectedWarning
from tests import gitignore_helpers as repos
from tests.conftest import held_trace_file

QUERIES = ("rotate an API token", "download an invoice", "silence alerts", "PagerDuty escalation")


def run(repo: Path, module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` in `repo` (its working folder), with `env` added."""
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=repo, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(repos.ROOT), **(env or {})})
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def assert_git_sees_nothing(repo: Path, watcher: repos.Watcher) -> None:
    assert repos.untracked(repo) == [], "files git would list; add their patterns to .gitignore"
    assert repos.not_ignored(repo, watcher.seen) == [], "files seen for a while; add their patterns to .gitignore"


def test_the_lookup_cli_and_its_keeper_leave_nothing_git_sees(tmp_path):
    repo = repos.scratch_repo(tmp_path / "repo")
    fold_soon = {"LOOKUP_KNOWLEDGE_PACK_IDLE": "0.2"}  # the keeper folds the row into the file 0.2 s after it
    with repos.Watcher(repo) as watcher:
        run(repo, "retrieval", "lookup", QUERIES[0], "--kb", str(repos.SAMPLE), env=fold_soon)  # default
        run(repo, "retrieval", "lookup", QUERIES[1], "--kb", str(repos.SAMPLE), "--traces", "t/lookups.duckdb",
            env=fold_soon)
        repos.wait_for_keeper(repo / "traces.duckdb")
        repos.wait_for_keeper(repo / "t" / "lookups.duckdb")
    assert {"traces.duckdb", "traces.duckdb.keeper.lock", "traces.duckdb.drain.lock",
            "t/lookups.duckdb.keeper.lock"} <= watcher.seen
    assert any(name.startswith("traces.duckdb.live/") for name in watcher.seen)  # the row's part, folded since
    assert_git_sees_nothing(repo, watcher)


def test_a_lookup_while_another_process_holds_the_file_leaves_its_row_ignored(tmp_path):
    repo = repos.scratch_repo(tmp_path / "repo")
    traces = repo / "traces.duckdb"
    fold_soon = {"LOOKUP_KNOWLEDGE_PACK_IDLE": "0.2"}  # the keeper folds 0.2 s after the last row, not 5 s
    with repos.Watcher(repo) as watcher:
        run(repo, "retrieval", "lookup", QUERIES[0], "--kb", str(repos.SAMPLE), env=fold_soon)
        repos.wait_for_keeper(traces)  # (while one is at work, a lookup leaves its row to it, checking nothing)
        with held_trace_file(traces):
            done = run(repo, "retrieval", "lookup", QUERIES[1], "--kb", str(repos.SAMPLE), "--lock-timeout", "0.5",
                       env=fold_soon)
            assert "is locked by process" in done.stderr
            waiting = list(repo.glob("traces.duckdb.pending.jsonl*")) + list(repo.glob("traces.duckdb.live/*"))
            assert waiting  # the row waits beside the file (spooled, or drained into a part not shown yet)
            assert repos.untracked(repo) == []  # while DuckDB's lock is held
        repos.wait_for_keeper(traces)  # it arrives when the holder lets go
        with TraceStore(traces) as store:
            assert store.count() == 2
    assert_git_sees_nothing(repo, watcher)


def test_a_trace_stores_spool_batches_and_rejected_lines_are_ignored(tmp_path, index):
    repo = repos.scratch_repo(tmp_path / "repo")
    store = TraceStore(repo / "traces.duckdb", background=False)
    with repos.Watcher(repo) as watcher:
        for query in QUERIES * 5:
            lookup_knowledge(query, index=index, recorder=store)
        Spool(store.spool_path).rotate()  # a drainer's first step: the spool becomes a batch file
        assert [p for p in repo.iterdir() if p.name.endswith(".draining")]
        with open(store.spool_path, "ab") as spool:  # half a row, as a writer killed inside write() leaves
            spool.write(b'{"id": "torn", "tool_na')
        lookup_knowledge(QUERIES[0], index=index, recorder=store)
        assert repos.untracked(repo) == []  # rows in the spool and in a batch, the store open
        with pytest.warns(TraceSpoolRejectedWarning):
            store.close()
        assert store.rejected_path.exists()
    assert TraceStore(repo / "traces.duckdb").count() == 21
    assert_git_sees_nothing(repo, watcher)


def test_an_eval_run_leaves_nothing_git_sees(tmp_path):
    repo = repos.scratch_repo(tmp_path / "repo")
    with repos.Watcher(repo) as watcher:
        run(repo, "eval", "run", "--dataset", str(repos.ROOT / "data"), "--no-oracle")  # ./traces.duckdb
        assert "complete" in run(repo, "eval", "runs").stdout
    assert "traces.duckdb" in watcher.seen
    assert_git_sees_nothing(repo, watcher)


def test_the_mcp_server_leaves_nothing_git_sees(tmp_path):
    pytest.importorskip("mcp")
    from tests.mcp_helpers import mcp_server

    repo = repos.scratch_repo(tmp_path / "repo")
    cache = {"LOOKUP_KNOWLEDGE_CACHE": str(tmp_path / "index-cache")}  # outside the repository
    with repos.Watcher(repo) as watcher, mcp_server(repo / "mcp", env=cache) as server:
        for query in QUERIES:
            assert not server.lookup(query=query).is_error
        assert repos.untracked(repo) == []  # while the server runs, its rows spooled or being drained
    assert TraceStore(repo / "mcp" / "traces.duckdb").count() == len(QUERIES)
    assert_git_sees_nothing(repo, watcher)


def test_the_app_leaves_nothing_git_sees(tmp_path, monkeypatch):
    from tests.app_helpers import lookup, run_app

    repo = repos.scratch_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    monkeypatch.delenv("LOOKUP_KNOWLEDGE_TRACES", raising=False)  # the default: traces.duckdb here
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_KB", str(repos.SAMPLE))
    with repos.Watcher(repo) as watcher:
        app = run_app()
        for query in QUERIES[:2]:
            app = lookup(app, query)
        assert repos.untracked(repo) == []  # the app's store still open
    assert TraceStore(repo / "traces.duckdb").count() == 2
    assert_git_sees_nothing(repo, watcher)
