"""Runs and sweeps fanned out over worker processes or a Dask cluster (`--workers N`, `--dask ADDRESS`).

The parent plans every run as the serial path does (eval.lifecycle), opens each index once (so the on-disk
cache holds it before any worker asks), stores the runs as `started`, and cuts each run's questions into
shards (eval.parallel.shards). The pool (eval.parallel.backends) runs the shards; the parent computes the BM25 baseline
meanwhile, counts finished questions for the progress bar (each one through eval.parallel.ticks from local workers,
shard by shard from Dask), drains the workers' spooled lookups into the trace file every FLUSH_EVERY
seconds, and once a run's last shard is back merges its rows in
question order (lookup, then baseline, then oracle metric rows: the serial order, so the means are the same
floats) and stores it as `complete`. A Dask run's lookups come back as Parquet parts (eval.parallel.collect).
The run records the parent's library versions; each shard brings back its worker's, and versions a worker
ran with that are not the parent's are stored in the run's diagnostics (eval.versions).

If a worker dies, every run with shards outstanding is stored as `incomplete`, naming those shards, and
ShardsFailed says how to resume; the lookups the workers had spooled stay recorded and are reused.
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from retrieval import KnowledgeIndex, LookupConfig, TraceStore, TraceStoreError
from retrieval.index import default_cache_dir
from retrieval.lookup import prepare_models
from retrieval.traces import TraceStoreWriteWarning

from .. import metrics as metric_lib
from .. import oracle as oracle_lib
from ..baseline import BM25Baseline
from ..datasets import Dataset
from ..defaults import DEFAULT_METRICS
from ..failures import ShardsFailed, WorkerDied
from ..lifecycle import PlannedRun, finish_run, plan_run
from ..runs import Progress, RunResult, expand_grid, load_run, open_dataset_index
from ..scoring import baseline_rows, query_categories
from ..storage import mark_shards_failed, start_run
from ..versions import worker_mismatch
from .backends import Runner, open_runner
from .collect import collect_parts, parts_dir_of
from .pool import Pool
from .shards import IndexSource, Shard, ShardItem, ShardResult, TraceSink
from .ticks import TickWatcher

SHARDS_PER_WORKER = 4  # shards per worker and run: small enough to even out, large enough to cost little
MAX_SHARD = 100  # questions
FLUSH_EVERY = 5.0  # seconds between drains of the workers' spooled lookups into the trace file (each opens it)


@dataclass(frozen=True, eq=False)
class _Job:
    """One run of a fan-out: its plan, its dataset and index (the parent's), and its shards."""

    planned: PlannedRun
    dataset: Dataset
    index: KnowledgeIndex
    shards: tuple[Shard, ...]


def run_parallel(dataset: Dataset, config: LookupConfig | None = None, *, store: TraceStore, pool: Pool,
                 metrics: Sequence[str] = DEFAULT_METRICS, progress: Progress | None = None, top_k: int | None = None,
                 overrides: Mapping[str, Any] | None = None, baseline: bool = True, oracle: bool = True,
                 resume: str | None = None, parts_dir: str | Path | None = None,
                 shard_size: int | None = None, attribute: bool = True) -> RunResult:
    """`eval.runs.run_evaluation` on `pool`: the same run, metrics and stored rows, its lookups in workers."""
    planned = plan_run(dataset, config, store=store, metrics=metrics, top_k=top_k, overrides=overrides,
                       resume=resume)
    (result,) = _fan_out([(planned, dataset)], store=store, pool=pool, progress=progress, baseline=baseline,
                         oracle=oracle, parts_dir=parts_dir, shard_size=shard_size, attribute=attribute)
    return result


def sweep_parallel(dataset: Dataset, grid: Mapping[str, Sequence[Any]], *, store: TraceStore, pool: Pool,
                   base_config: LookupConfig | None = None, base_overrides: Mapping[str, Any] | None = None,
                   metrics: Sequence[str] = DEFAULT_METRICS, progress: Progress | None = None, baseline: bool = True,
                   oracle: bool = True, parts_dir: str | Path | None = None,
                   shard_size: int | None = None, attribute: bool = True) -> list[RunResult]:
    """`eval.runs.run_sweep` on `pool`: every combination's shards in one fan-out, one baseline for all."""
    combos = expand_grid(grid, base_config, base_overrides)
    metric_lib.parse_metrics(metrics)
    sweep_id = f"sweep-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    plans = [(plan_run(dataset, config, store=store, metrics=metrics, overrides=overrides, sweep_id=sweep_id,
                       top_k=config.top_k if "top_k" in overrides else None), dataset) for overrides, config in combos]
    return _fan_out(plans, store=store, pool=pool, progress=progress, baseline=baseline, oracle=oracle,
                    parts_dir=parts_dir, shard_size=shard_size, attribute=attribute)


def _fan_out(plans: list[tuple[PlannedRun, Dataset]], *, store: TraceStore, pool: Pool, progress: Progress | None,
             baseline: bool, oracle: bool, parts_dir: str | Path | None, shard_size: int | None,
             attribute: bool = True) -> list[RunResult]:
    indexes: dict[int, KnowledgeIndex] = {}
    for dims in sorted({planned.config.svd_dims for planned, _ in plans}):
        indexes[dims] = open_dataset_index(plans[0][1], dims)
    for planned, _ in plans:  # a bad model fails the run here; the workers read the vectors this made
        prepare_models(indexes[planned.config.svd_dims], planned.config)
    with open_runner(pool) as runner:
        sink = (TraceSink(parts_dir=str(Path(parts_dir or parts_dir_of(store)).resolve())) if pool.dask
                else TraceSink(trace_file=str(store.path.resolve())))
        questions = sum(len(dataset.queries) for _, dataset in plans)
        size = shard_size or max(1, min(MAX_SHARD, math.ceil(questions / (runner.size * SHARDS_PER_WORKER))))
        # local workers report each question through a tick file; a Dask run's progress moves per shard
        watcher = TickWatcher(questions, progress) if progress is not None and not pool.dask else None
        ticks = None if watcher is None else str(watcher.path)
        jobs = [_job(planned, dataset, indexes[planned.config.svd_dims], pool, sink, size, oracle, ticks, attribute)
                for planned, dataset in plans]
        for job in jobs:
            start_run(store, job.planned.run)
        try:
            _gather(runner, jobs, store, None if watcher else progress, baseline, oracle, sink)
        finally:
            if watcher is not None:
                watcher.stop()
    return [load_run(store, job.planned.run_id) for job in jobs]


def _job(planned: PlannedRun, dataset: Dataset, index: KnowledgeIndex, pool: Pool, sink: TraceSink, size: int,
         oracle: bool, ticks: str | None = None, attribute: bool = True) -> _Job:
    """A run's shards; the oracle runs in them when the serial path would run it (a question has a category)."""
    oracle_on = oracle and any(oracle_lib.true_category(query_categories(q, index)) for q in dataset.queries)
    source = IndexSource(str(Path(dataset.kb_path).resolve()), planned.config.svd_dims,
                         tuple(dataset.exclude_fields), tuple(dataset.exclude_paths),
                         None if pool.dask else str(default_cache_dir()))
    items = [ShardItem(position, query, planned.done.get(query.id)) for position, query in enumerate(dataset.queries)]
    names = tuple(m.name for m in planned.parsed)
    shards = tuple(Shard(planned.run_id, number, source, planned.config, names, tuple(items[start:start + size]),
                         oracle_on, sink, ticks=ticks, cutoff=planned.cutoff if attribute else None)
                   for number, start in enumerate(range(0, len(items), size)))
    return _Job(planned, dataset, index, shards)


def _gather(runner: Runner, jobs: list[_Job], store: TraceStore, progress: Progress | None, baseline: bool,
            oracle: bool, sink: TraceSink) -> None:
    """Run every job's shards, finishing each run once its last shard is back; on a failure, store the runs
    left as `incomplete` with the shards they miss."""
    by_run = {job.planned.run_id: job for job in jobs}
    returned: dict[str, list[ShardResult]] = {run_id: [] for run_id in by_run}
    finished: set[str] = set()
    total, done, flushed = sum(len(job.dataset.queries) for job in jobs), 0, time.monotonic()
    try:
        results = runner.map([shard for job in jobs for shard in job.shards])
        baselines = _Baselines(jobs[0].index, baseline)  # the parent's work while the workers run
        for job in jobs:
            baselines.rows(job)
        for result in results:
            returned[result.run_id].append(result)
            done += len(result.rows)
            if progress is not None:
                progress(done, total)
            job = by_run[result.run_id]
            if len(returned[result.run_id]) == len(job.shards):
                _finish(job, returned[result.run_id], baselines, store, oracle, sink)
                finished.add(result.run_id)
            if time.monotonic() - flushed >= FLUSH_EVERY:
                _drain_quietly(store)
                flushed = time.monotonic()
    except BaseException as exc:
        reason = f"{type(exc).__name__}: {exc}"
        for run_id in by_run.keys() - finished:
            _mark_failed(store, by_run[run_id], returned[run_id], reason)
        with contextlib.suppress(TraceStoreError):
            store.flush()
        if isinstance(exc, WorkerDied):
            left = sorted(by_run.keys() - finished)
            raise ShardsFailed(f"{exc}; {len(left)} run(s) stored as incomplete ({', '.join(left)}): finish each "
                               f"with `python -m eval run ... --resume RUN_ID` (the same dataset flags and --set "
                               f"values), which reuses the lookups already recorded") from exc
        raise
    store.flush()


def _drain_quietly(store: TraceStore) -> None:
    """Move the workers' spooled lookups into the table if the file is free now; if a reader holds it, the
    next drain (or the last, which warns) moves them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceStoreWriteWarning)  # the locked warning is one of these
        store.flush(timeout=0.25)


def _finish(job: _Job, results: list[ShardResult], baselines: _Baselines, store: TraceStore, oracle: bool,
            sink: TraceSink) -> None:
    """Merge a run's shards in question order and store it as `complete` (its Parquet parts loaded first)."""
    ordered = sorted(results, key=lambda r: r.number)
    rows = [row for result in ordered for row in result.rows]
    metric_rows = [row for result in ordered for row in result.lookup_metrics]
    means, extra = baselines.rows(job)
    metric_rows.extend(extra)
    metric_rows.extend(row for result in ordered for row in result.oracle_metrics)
    if sink.parts_dir:
        collect_parts(store, job.planned.run_id, sink.parts_dir, expected={row["invocation_id"] for row in rows})
    workers = worker_mismatch(job.planned.run["library_versions"], (r.library_versions for r in ordered))
    finish_run(store, job.planned, rows, metric_rows, baseline_means=means, oracle=oracle, worker_versions=workers)


def _mark_failed(store: TraceStore, job: _Job, results: list[ShardResult], reason: str) -> None:
    back = {result.number for result in results}
    failed = [{"shard": s.number, "questions": len(s.items), "first_position": s.items[0].position}
              for s in job.shards if s.number not in back]
    with contextlib.suppress(TraceStoreError):
        mark_shards_failed(store, job.planned.run_id, failed, reason)


class _Baselines:
    """The BM25 baseline's rows, searched once per depth for all runs of a fan-out (it depends on no setting)."""

    def __init__(self, index: KnowledgeIndex, enabled: bool) -> None:
        self.engine = BM25Baseline.build(index.kb) if enabled else None
        self.by_depth: dict[int, tuple[dict[str, float], list[tuple]]] = {}

    def rows(self, job: _Job) -> tuple[dict[str, float] | None, list[tuple]]:
        if self.engine is None:
            return None, []
        planned = job.planned
        depth, run_id = int(planned.run["top_k"]), planned.run_id
        if depth not in self.by_depth:
            self.by_depth[depth] = baseline_rows(self.engine, job.dataset.queries, planned.parsed, depth, run_id)
        means, rows = self.by_depth[depth]
        return means, [(run_id, *row[1:]) for row in rows]

