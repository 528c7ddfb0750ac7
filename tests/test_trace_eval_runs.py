"""Evaluation runs that stop: stored as `started` before their lookups, `incomplete` after a crash or a
SIGKILL (with every acknowledged lookup kept), then resumed or deleted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from eval import cli, runs
from eval.storage import IncompleteRunError
from retrieval import LookupConfig, TraceStore
from tests.eval_helpers import QUERIES, write_dataset
from tests.test_eval_runs import METRICS

ROOT = Path(__file__).resolve().parents[1]
CONFIG = LookupConfig(svd_dims=8)


class Stop(Exception):
    """Raised from the progress callback: the run stops part-way, as on Ctrl-C."""


def _stopped_run(dataset, store, after: int) -> str:
    def progress(done: int, total: int) -> None:
        if done == after:
            raise Stop

    with pytest.raises(Stop):
        runs.run_evaluation(dataset, CONFIG, store=store, metrics=METRICS, progress=progress, batch_size=2)
    (run_id,) = runs.list_runs(store)["run_id"]
    return run_id


def test_a_run_is_recorded_as_started_before_its_lookups(eval_dataset, store):
    seen = []

    def progress(done: int, total: int) -> None:
        if done == 1:
            seen.append(runs.list_runs(store)[["run_id", "status"]].to_dict(orient="records"))

    result = runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=METRICS, progress=progress)
    assert seen == [[{"run_id": result.run_id, "status": "running"}]]
    assert runs.list_runs(store)["status"].tolist() == ["complete"]


def test_a_run_that_raises_is_marked_incomplete_and_keeps_its_spooled_lookups(eval_dataset, store):
    run_id = _stopped_run(eval_dataset, store, after=3)
    listed = runs.list_runs(store)
    assert listed["status"].tolist() == ["incomplete"] and listed["lookups"].tolist() == [2]  # one batch of 2
    with pytest.raises(IncompleteRunError, match=f"run {run_id} is incomplete.*--resume {run_id}.*--delete"):
        runs.load_run(store, run_id)


def test_an_incomplete_run_can_be_resumed_reusing_its_recorded_lookups(eval_dataset, store):
    run_id = _stopped_run(eval_dataset, store, after=5)
    kept = set(store.query("SELECT id FROM tool_invocation WHERE run_id = ?", [run_id])["id"])
    result = runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=METRICS, resume=run_id[:12])
    stored = store.query("SELECT id, query_id FROM tool_invocation WHERE run_id = ?", [run_id])
    assert result.run_id == run_id and runs.list_runs(store)["status"].tolist() == ["complete"]
    assert len(kept) == 4 and kept <= set(stored["id"])
    assert sorted(stored["query_id"]) == sorted(q["_id"] for q in QUERIES if "relevant" in q)  # q7 is unanswerable
    every = pd.concat([result.per_query, result.unanswerable])
    assert len(every) == len(stored) and set(every["invocation_id"]) == set(stored["id"])
    fresh = runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=METRICS)
    assert result.metrics == fresh.metrics


def test_resume_refuses_other_settings_and_complete_runs(eval_dataset, store):
    run_id = _stopped_run(eval_dataset, store, after=3)
    with pytest.raises(ValueError, match=f"run {run_id} was started .* other settings \\(l0_filter\\)"):
        runs.run_evaluation(eval_dataset, LookupConfig(svd_dims=8, l0_filter=False), store=store, metrics=METRICS,
                                 resume=run_id)
    runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=METRICS, resume=run_id)
    with pytest.raises(ValueError, match="is complete; only an incomplete run can be resumed"):
        runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=METRICS, resume=run_id)


def test_an_incomplete_run_can_be_deleted_from_the_cli(eval_dataset, store, capsys):
    run_id = _stopped_run(eval_dataset, store, after=3)
    traces = str(store.path)
    assert cli.main(["runs", "--incomplete", "--traces", traces, "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [run_id]
    assert cli.main(["runs", "--delete", run_id, "--traces", traces]) == 0
    assert "deleted 1 run, 2 recorded lookup(s)" in capsys.readouterr().out
    assert store.query("SELECT count(*) AS n FROM tool_invocation WHERE run_id = ?", [run_id])["n"][0] == 0
    assert cli.main(["runs", "--delete", run_id, "--traces", traces]) == 2
    assert "unknown run id" in capsys.readouterr().err


def _spooled_ids(traces: Path) -> dict[str, str]:
    """id -> run_id of every complete line in the spool and its batch files (acknowledged rows)."""
    found = {}
    for path in traces.parent.glob(traces.name + ".pending.jsonl*"):
        if "rejected" in path.name:
            continue
        try:
            content = path.read_bytes()
        except FileNotFoundError:
            continue  # a batch file drained and removed between the listing and the read
        for line in content.split(b"\n"):
            try:
                row = json.loads(line)
            except ValueError:
                continue  # the line being written, or a file renamed away
            found[row["id"]] = row["run_id"]
    return found


def test_eval_run_is_incomplete_after_sigkill_and_keeps_every_acknowledged_row(tmp_path):
    root = write_dataset(tmp_path / "set")
    many = [{**q, "_id": f"{q['_id']}-{n}"} for n in range(90) for q in QUERIES if q.get("relevant")]  # 540 queries
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in many) + "\n")
    traces = tmp_path / "traces.duckdb"
    TraceStore(traces).close()
    proc = subprocess.Popen([sys.executable, "-m", "eval", "run", "--dataset", str(root), "--traces", str(traces),
                             "--set", "svd_dims=8", "--no-progress", "--no-baseline", "--no-oracle"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    acknowledged: dict[str, str] = {}
    deadline = time.monotonic() + 90
    while len(acknowledged) < 200 and proc.poll() is None and time.monotonic() < deadline:
        acknowledged.update(_spooled_ids(traces))  # the first batch of 200 lookups, once spooled
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
    assert len(acknowledged) >= 200 and len(set(acknowledged.values())) == 1
    run_id = next(iter(acknowledged.values()))
    store = TraceStore(traces)
    deadline = time.monotonic() + 10  # its spooled rows: the keeper a read starts drains them (reads never do)
    while (listed := runs.list_runs(store).set_index("run_id")).loc[run_id, "lookups"] < len(acknowledged):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert listed.loc[run_id, "status"] == "incomplete" and listed.loc[run_id, "lookups"] >= 200
    stored = set(store.query("SELECT id FROM tool_invocation WHERE run_id = ?", [run_id])["id"])
    assert set(acknowledged) <= stored, f"{len(set(acknowledged) - stored)} acknowledged lookup(s) lost"
    assert len(stored) < len(many), "the run was killed before its end"
