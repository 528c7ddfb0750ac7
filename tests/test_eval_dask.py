"""`eval run/sweep --dask ADDRESS` on a real `distributed` cluster on 127.0.0.1 (a scheduler and two worker
processes): the same metrics as a serial run, tasks on both workers (the scheduler's task stream), every
lookup in the trace file through the workers' Parquet parts, and `eval collect` loading them again once."""

from __future__ import annotations

import json
import time

import pytest

from eval import cli, runs
from eval.datasets import load_dataset
from eval.parallel import backends
from eval.parallel.fanout import sweep_parallel
from eval.parallel.pool import Pool
from retrieval import LookupConfig, TraceStore
from tests.parallel_helpers import ROOT, same_run, stored_ids, write_many

pytestmark = pytest.mark.slow
CONFIG = LookupConfig(svd_dims=8)


def _dask_run(address: str, root, traces, *extra: str) -> None:
    args = ["run", "--dataset", str(root), "--traces", str(traces), "--set", "svd_dims=8", "--no-progress",
            "--dask", address, "--json", *extra]
    assert cli.main(args) == 0


def test_dask_run_gives_the_serial_metrics_on_both_workers_with_every_lookup_traced(dask_cluster, tmp_path,
                                                                                       capsys):
    cluster, client = dask_cluster
    root, traces = write_many(tmp_path / "set", 40), tmp_path / "traces.duckdb"  # 240 questions
    started = time.time()
    _dask_run(cluster.scheduler_address, root, traces)
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    store = TraceStore(traces)
    serial = runs.run_evaluation(load_dataset(root), CONFIG, store=store)
    same_run(store, serial, runs.load_run(store, run_id))
    tasks = [t for t in client.get_task_stream(start=started) if "run_shard" in str(t.get("key"))]
    assert len({t["worker"] for t in tasks}) == 2, f"tasks ran on {sorted({t['worker'] for t in tasks})}"
    per_query = runs.load_run(store, run_id).per_query
    assert stored_ids(store, run_id) == set(per_query["invocation_id"]) and len(per_query) == 240
    parts = list((tmp_path / "traces.duckdb.parts" / f"run_id={run_id}").glob("*.parquet"))
    assert len(parts) > 1


def test_collect_loads_a_dask_runs_parts_into_a_trace_file_once(dask_cluster, tmp_path, capsys):
    cluster, _ = dask_cluster
    root, traces, parts = write_many(tmp_path / "set", 5), tmp_path / "traces.duckdb", tmp_path / "shared-parts"
    _dask_run(cluster.scheduler_address, root, traces, "--parts", str(parts), "--no-oracle")
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    store = TraceStore(traces)
    expected = stored_ids(store, run_id)
    with store.connect() as con:  # as on a host where the parent could not see the parts
        con.execute("DELETE FROM tool_invocation WHERE run_id = ?", [run_id])
    assert cli.main(["collect", run_id[:16], "--traces", str(traces), "--parts", str(parts), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inserted"] == len(expected) == 30
    assert stored_ids(store, run_id) == expected
    assert cli.main(["collect", run_id, "--traces", str(traces), "--parts", str(parts), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inserted"] == 0


def test_dask_sweep_equals_the_serial_sweep(dask_cluster, store):
    cluster, _ = dask_cluster
    dataset, grid = load_dataset(ROOT / "data"), {"l0_filter": ["true", "false"]}
    serial = runs.run_sweep(dataset, grid, store=store)
    parallel = sweep_parallel(dataset, grid, store=store, pool=Pool(dask=cluster.scheduler_address))
    for one, two in zip(serial, parallel, strict=True):
        same_run(store, one, two)


def test_an_unreachable_scheduler_is_an_error_saying_how_to_start_one(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(backends, "CONNECT_TIMEOUT", 1)  # refused at once, but Dask tries until its timeout (10 s)
    assert cli.main(["run", "--dataset", str(ROOT / "data"), "--traces", str(tmp_path / "t.duckdb"),
                     "--dask", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach a Dask scheduler at tcp://127.0.0.1:9 within 1 s" in err and "dask scheduler" in err
