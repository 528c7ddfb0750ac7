"""`eval run/sweep --workers N`: the same runs as one process, bit for bit, with every worker's lookups in the
trace file; a killed worker leaves an incomplete run that `--resume` finishes; bad values say what to pass."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from eval import cli, runs
from eval.datasets import load_dataset
from eval.parallel.fanout import run_parallel, sweep_parallel
from eval.parallel.pool import Pool, pool_of
from eval.parallel.ticks import Ticker, TickWatcher
from retrieval import LookupConfig, TraceStore
from tests.conftest import shared_path
from tests.parallel_helpers import GRID, ROOT, loky_workers, same_run, stored_ids, write_many
from tests.test_eval_runs import METRICS

CONFIG = LookupConfig(svd_dims=8)
TWO = Pool(workers=2)


def test_sweep_with_two_workers_equals_one_worker_on_the_sample_data(store):
    dataset = load_dataset(ROOT / "data")
    serial = runs.run_sweep(dataset, GRID, store=store)
    parallel = sweep_parallel(dataset, GRID, store=store, pool=TWO)
    assert [r.overrides for r in parallel] == [r.overrides for r in serial]
    assert len({r.sweep_id for r in parallel}) == 1 and parallel[0].sweep_id != serial[0].sweep_id
    for one, two in zip(serial, parallel, strict=True):
        same_run(store, one, two)


@pytest.mark.slow
@pytest.mark.shared_data
def test_sweep_with_two_workers_equals_one_worker_on_a_scifact_slice(store):
    dataset = load_dataset(shared_path("scifact"), split="train").sample(40)
    grid = {"l0_filter": ["true", "false"], "l1_pool": ["20", "40"]}
    serial = runs.run_sweep(dataset, grid, store=store, base_config=LookupConfig(svd_dims=64))
    parallel = sweep_parallel(dataset, grid, store=store, pool=TWO, base_config=LookupConfig(svd_dims=64))
    for one, two in zip(serial, parallel, strict=True):
        same_run(store, one, two)


def test_run_with_workers_records_every_lookup_with_its_run_and_query_ids(tmp_path, store):
    dataset = load_dataset(write_many(tmp_path / "set", 10))
    result = run_parallel(dataset, CONFIG, store=store, pool=TWO, metrics=METRICS, shard_size=7)
    stored = store.query("SELECT id, query_id FROM tool_invocation WHERE run_id = ?", [result.run_id])
    assert sorted(stored["query_id"]) == sorted(q.id for q in dataset.queries)  # each once: nothing lost, no twin
    assert set(stored["id"]) == set(result.per_query["invocation_id"])
    assert not store.spool_files(), "the workers' spooled rows were all drained into the table"


def test_progress_counts_finished_lookups_across_workers(tmp_path, store):
    dataset = load_dataset(write_many(tmp_path / "set", 10))
    seen: list[tuple[int, int]] = []
    run_parallel(dataset, CONFIG, store=store, pool=TWO, metrics=METRICS, shard_size=6,
                 progress=lambda done, total: seen.append((done, total)))
    done = [done for done, _ in seen]
    assert done == sorted(set(done)) and done[-1] == 60 and {total for _, total in seen} == {60}, seen


def _tick_slowly(path: str, count: int) -> None:
    ticker = Ticker(path)
    for _ in range(count):
        ticker.tick()
        time.sleep(0.01)
    ticker.close()


def test_progress_moves_per_question_not_per_shard_with_two_processes_ticking():
    seen: list[int] = []
    watcher = TickWatcher(200, lambda done, total: seen.append(done))
    workers = [multiprocessing.get_context("spawn").Process(target=_tick_slowly, args=(str(watcher.path), 100))
               for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    watcher.stop()
    assert seen[-1] == 200 and seen == sorted(set(seen)), seen
    assert len(seen) >= 3 and any(0 < n < 200 and n % 100 for n in seen), seen  # counts between the shards
    assert not watcher.path.exists()


def test_a_run_with_workers_equals_the_serial_run_of_the_same_settings(tmp_path, store):
    dataset = load_dataset(write_many(tmp_path / "set", 3))
    serial = runs.run_evaluation(dataset, CONFIG, store=store, metrics=METRICS)
    parallel = run_parallel(dataset, CONFIG, store=store, pool=TWO, metrics=METRICS, shard_size=4)
    same_run(store, serial, parallel)
    assert runs.list_runs(store)["status"].tolist() == ["complete", "complete"]


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_bad_workers_value_is_an_error_saying_what_to_pass(value, store, capsys):
    assert cli.main(["run", "--dataset", str(ROOT / "data"), "--traces", str(store.path), f"--workers={value}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --workers must be a positive whole number or auto") and repr(value) in err


def test_workers_auto_means_the_cores_available():
    assert pool_of("auto", None) == Pool(workers=len(os.sched_getaffinity(0)))
    assert pool_of("1", None).serial and not pool_of("2", None).serial


@pytest.mark.parametrize("address", ["foo:bar", "http://127.0.0.1:8786", "tcp://127.0.0.1:99999", "tcp://"])
def test_bad_dask_address_is_an_error_naming_the_expected_shape(address, store, capsys):
    assert cli.main(["sweep", "--dataset", str(ROOT / "data"), "--traces", str(store.path), "--grid",
                     "l0_filter=true", "--dask", address]) == 2
    assert "--dask takes a Dask scheduler address such as tcp://" in capsys.readouterr().err


def test_workers_and_dask_together_is_an_error(store, capsys):
    assert cli.main(["run", "--dataset", str(ROOT / "data"), "--traces", str(store.path), "--workers", "2",
                     "--dask", "tcp://127.0.0.1:8786"]) == 2
    assert "give --workers N or --dask ADDRESS, not both" in capsys.readouterr().err


def test_the_serial_run_loads_none_of_the_fan_out(tmp_path):
    # the index is opened first: building it (no cached index yet in this test's cache) imports scikit-learn,
    # which imports joblib; what the run itself loads beyond that is what must not include the fan-out
    code = ("import sys; from eval import cli; from eval.datasets import load_dataset; from eval.runs import "
            f"open_dataset_index; open_dataset_index(load_dataset({str(ROOT / 'data')!r}), None); "
            "before = set(sys.modules); "
            f"cli.main(['run', '--dataset', {str(ROOT / 'data')!r}, '--traces', {str(tmp_path / 't.duckdb')!r}, "
            "'--no-progress', '--sample', '3']); "
            "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in ('joblib', 'dask', "
            "'distributed') or m in ('eval.parallel.fanout', 'eval.parallel.backends', 'eval.parallel.shards')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def _kill_a_worker_mid_run(root, traces) -> subprocess.CompletedProcess:
    """Start `eval run --workers 2`, SIGKILL one of its workers once lookups reach the spool; the outcome."""
    proc = subprocess.Popen([sys.executable, "-m", "eval", "run", "--dataset", str(root), "--traces", str(traces),
                             "--set", "svd_dims=8", "--no-progress", "--no-baseline", "--workers", "2"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    spool = traces.with_name(traces.name + ".pending.jsonl")
    deadline, killed = time.monotonic() + 120, None
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        workers = loky_workers(proc.pid)
        if workers and spool.exists() and spool.stat().st_size:
            killed = workers[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.01)
    out, err = proc.communicate(timeout=120)
    assert killed is not None, f"no worker was killed before the run ended: {err[-2000:]}"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.slow
def test_a_killed_worker_leaves_an_incomplete_run_that_resume_finishes_with_the_same_metrics(tmp_path):
    root, traces = write_many(tmp_path / "set", 250), tmp_path / "traces.duckdb"  # 1,500 questions
    TraceStore(traces).close()
    outcome = _kill_a_worker_mid_run(root, traces)
    assert outcome.returncode == 1 and "a worker process died (TerminatedWorkerError" in outcome.stderr
    assert "--resume RUN_ID" in outcome.stderr, outcome.stderr[-2000:]
    store = TraceStore(traces)
    (run_id,), (status,) = runs.list_runs(store)["run_id"], runs.list_runs(store)["status"]
    assert status == "incomplete" and run_id in outcome.stderr
    kept = stored_ids(store, run_id)
    assert 0 < len(kept) < 1500
    failed = store.query("SELECT diagnostics->'failed_shards' AS f FROM eval_run WHERE run_id = ?", [run_id])["f"][0]
    assert json.loads(failed), "the run names the shards that did not finish"
    assert cli.main(["run", "--dataset", str(root), "--traces", str(traces), "--set", "svd_dims=8", "--no-progress",
                     "--no-baseline", "--workers", "2", "--resume", run_id]) == 0
    resumed = runs.load_run(store, run_id)
    assert kept <= stored_ids(store, run_id) and len(stored_ids(store, run_id)) == 1500
    fresh = runs.run_evaluation(load_dataset(root), CONFIG, store=store, baseline=False)
    assert resumed.metrics == fresh.metrics and resumed.diagnostics["oracle"] == fresh.diagnostics["oracle"]
