"""Evaluation runs and sweeps over `lookup_knowledge`: a run = dataset + split + configuration.

Every lookup goes through the one core with `run_id` and `query_id`, and is recorded as a
`tool_invocation` as it happens (the store spools it: acknowledged rows survive a killed run). The run
is stored as `started` before its first lookup and as `complete` at the end (eval.storage); a run that
stopped can be resumed: lookups already recorded are reused, the others are run.
Per-query metrics and diagnostics are stored beside it (eval.storage).
Lookups retrieve `top_k` = the deepest metric cutoff (100 for recall@100) unless a top_k is given.
The oracle filter diagnostic (eval.oracle) looks every query up again with its true category; its
metrics are stored as a third system beside the lookup and the BM25 baseline.
"""

from __future__ import annotations

import contextlib
import itertools
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from retrieval import (
    KnowledgeIndex,
    LookupConfig,
    ToolInvocation,
    TraceStore,
    TraceStoreError,
    lookup_knowledge,
    open_index,
)
from retrieval.lookup import prepare_models

from . import metrics as metric_lib
from . import oracle as oracle_lib
from .attribution import relevant_stages
from .baseline import BM25Baseline
from .datasets import Dataset
from .defaults import DEFAULT_METRICS
from .lifecycle import PlannedRun, finish_run, plan_run
from .reading import one_read
from .resume import Recorded
from .scoring import baseline_rows, query_row
from .storage import (
    LOOKUP,
    delete_run,
    list_runs,
    load_per_query,
    load_run_row,
    load_unanswerable,
    mark_incomplete,
    start_run,
)
from .versions import recorded

__all__ = ["DEFAULT_METRICS", "RunResult", "delete_run", "list_runs", "load_run", "open_dataset_index",
           "run_evaluation", "run_sweep"]


BATCH_SIZE = 200
SPOOL_AGE = 0.25  # seconds a recorded lookup waits in the run's buffer: the table stays within ~2 s of the run
Progress = Callable[[int, int], None]


@dataclass(frozen=True, eq=False)
class RunResult:
    """One stored run: mean metrics, diagnostics, the per-query frame and the baseline's mean metrics, and the
    versions of the libraries that decide its numbers (None: stored before runs recorded them); the questions
    with no relevant page are not in `per_query` but in `unanswerable`, and `diagnostics["answerability"]`
    says how they and the others were graded (eval.abstention); `models` are the dense part's and the
    reranker's model as the run loaded them (retrieval.lookup.recorded_models; None: stored before runs
    recorded them, or an imported run)."""

    run_id: str
    metrics: dict[str, float]
    diagnostics: dict[str, Any]
    per_query: pd.DataFrame
    baseline: dict[str, float] | None
    dataset: dict[str, Any]
    config: dict[str, Any]
    overrides: dict[str, Any]
    top_k: int
    seconds: float
    created_at: datetime
    sweep_id: str | None = None
    library_versions: dict[str, str | None] | None = None
    unanswerable: pd.DataFrame | None = None  # the rows of its unanswerable questions (eval.storage.load_unanswerable)
    models: dict[str, Any] | None = None  # the models its settings named (recorded_models; None: not recorded)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's `--json` output (no per-query rows)."""
        return {"run_id": self.run_id, "dataset": self.dataset, "top_k": self.top_k, "overrides": self.overrides,
                "metrics": self.metrics, "baseline": self.baseline, "diagnostics": self.diagnostics,
                "seconds": round(self.seconds, 3), "sweep_id": self.sweep_id,
                "created_at": self.created_at.isoformat(), "config": self.config,
                "library_versions": self.library_versions, "models": self.models}


def open_dataset_index(dataset: Dataset, svd_dims: int,
                       progress: Callable[[str, float], None] | None = None) -> KnowledgeIndex:
    """The (disk-cached) index of the dataset's knowledge base, without the fields and paths it excludes;
    `progress(stage, fraction)` follows the build (retrieval.index.progress)."""
    return open_index(dataset.kb_path, svd_dims=svd_dims, exclude_fields=dataset.exclude_fields,
                      exclude_paths=dataset.exclude_paths, progress=progress)


def run_evaluation(dataset: Dataset, config: LookupConfig | None = None, *, store: TraceStore,
                   metrics: Sequence[str] = DEFAULT_METRICS, progress: Progress | None = None,
                   top_k: int | None = None, overrides: Mapping[str, Any] | None = None,
                   index: KnowledgeIndex | None = None, baseline: bool | BM25Baseline = True,
                   sweep_id: str | None = None, batch_size: int = BATCH_SIZE, oracle: bool = True,
                   resume: str | None = None, attribute: bool = True) -> RunResult:
    """Look up every query of `dataset`, score it, record traces and metrics in `store`, and return the run.

    With `oracle` (the default) every query is also looked up with its true category as the caller's
    filter (eval.oracle); `diagnostics["oracle"]` holds its metrics and headroom, or why it was skipped.
    With `resume` (a run id or prefix), an incomplete run of the same dataset and configuration is
    finished: its recorded lookups are reused and only the missing queries are looked up.
    Recorded lookups are spooled every `batch_size` queries or SPOOL_AGE seconds, whichever comes first: a
    killed run keeps every spooled one, and the table follows the run within about 2 s.
    With `attribute` (the default), each relevant page missed at the primary metric's cut-off gets the stage
    that lost it (eval.attribution; `diagnostics["missed_stages"]`).
    """
    planned = plan_run(dataset, config, store=store, metrics=metrics, top_k=top_k, overrides=overrides,
                       sweep_id=sweep_id, resume=resume)
    index = index or open_dataset_index(dataset, planned.config.svd_dims)
    prepare_models(index, planned.config)  # a bad model is the run's error before it starts; vectors made once
    start_run(store, planned.run)
    finished = False
    try:
        _score_and_save(planned, dataset, index, store, progress, baseline, oracle, batch_size, attribute)
        finished = True
    finally:
        if not finished:
            with contextlib.suppress(TraceStoreError):
                mark_incomplete(store, planned.run_id)
    return load_run(store, planned.run_id)


def _score_and_save(planned: PlannedRun, dataset: Dataset, index: KnowledgeIndex, store: TraceStore,
                    progress: Progress | None, baseline: bool | BM25Baseline, oracle: bool, batch_size: int,
                    attribute: bool = True) -> None:
    """The lookups, the baseline and the oracle filter of one run, scored and stored as `complete`."""
    config, parsed, run_id, depth = planned.config, planned.parsed, planned.run_id, planned.run["top_k"]
    cutoff = planned.cutoff if attribute else None
    rows, metric_rows = _lookups(dataset, config, index, store, run_id, parsed, progress, planned.done, batch_size,
                                 cutoff)
    baseline_means = None
    if baseline:
        engine = baseline if isinstance(baseline, BM25Baseline) else BM25Baseline.build(index.kb)
        baseline_means, extra = baseline_rows(engine, dataset.queries, parsed, depth, run_id)
        metric_rows.extend(extra)
    categories = {row["query_id"]: oracle_lib.true_category(row["categories"]) for row in rows}
    if oracle and any(categories.values()):
        metric_rows.extend(oracle_lib.oracle_lookups(dataset.queries, categories, index=index, config=config,
                                                     parsed=parsed, run_id=run_id))
    finish_run(store, planned, rows, metric_rows, baseline_means=baseline_means, oracle=oracle)


def _lookups(dataset: Dataset, config: LookupConfig, index: KnowledgeIndex, store: TraceStore, run_id: str,
             parsed: Sequence[metric_lib.Metric], progress: Progress | None, done: Mapping[str, Recorded],
             batch_size: int, cutoff: int | None) -> tuple[list[dict[str, Any]], list[tuple]]:
    """Run every lookup not `done` through the core, spooling recorded invocations every `batch_size` queries
    or SPOOL_AGE seconds; with a `cutoff`, each relevant page gets the stage that lost it (eval.attribution)."""
    buffer: list[ToolInvocation] = []
    buffered_at = time.monotonic()  # about when the buffer's oldest lookup was recorded
    rows, metric_rows = [], []
    total = len(dataset.queries)
    for position, query in enumerate(dataset.queries):
        recorded, result = done.get(query.id), None
        if recorded is None:
            result = lookup_knowledge(query.text, index=index, config=config, top_k=config.top_k,
                                      recorder=buffer.append, run_id=run_id, query_id=query.id)
            recorded = Recorded(result.invocation_id, buffer[-1].latency_ms, result.retrieval_details)
        rows.append(query_row(query, position, recorded.invocation_id, recorded.ranked, recorded.details,
                               recorded.latency_ms, index, parsed))
        if cutoff is not None:
            rows[-1]["relevant_stages"] = relevant_stages(query, result, index=index, config=config, cutoff=cutoff)
        if query.answerable:  # an unanswerable one is scored by its grade (eval.abstention), not by rank
            metric_rows.extend((run_id, query.id, LOOKUP, name, value)
                               for name, value in metric_lib.score(recorded.ranked, query.qrels, parsed).items())
        if buffer and (len(buffer) >= batch_size or time.monotonic() - buffered_at >= SPOOL_AGE):
            store.record_many(buffer)
            buffer.clear()
        if not buffer:
            buffered_at = time.monotonic()
        if progress is not None:
            progress(position + 1, total)
    store.record_many(buffer)
    for row in rows:
        row["run_id"] = run_id
    return rows, metric_rows


@one_read
def load_run(store: TraceStore, run_id: str) -> RunResult:
    """A stored run by id (or unique prefix), with its per-query frame."""
    row = load_run_row(store, run_id)
    created = pd.Timestamp(row["created_at"]).to_pydatetime().replace(tzinfo=timezone.utc)
    return RunResult(row["run_id"], row["metrics"], row["diagnostics"], load_per_query(store, row["run_id"]),
                     row["baseline"], row["dataset_info"], row["config"], row["overrides"] or {},
                     int(row["top_k"]), float(row["seconds"]), created, row["sweep_id"],
                     recorded(row.get("library_versions")), load_unanswerable(store, row["run_id"]),
                     row.get("models") if isinstance(row.get("models"), dict) else None)


def expand_grid(grid: Mapping[str, Sequence[Any]], base: LookupConfig | None = None,
                base_overrides: Mapping[str, Any] | None = None) -> list[tuple[dict[str, Any], LookupConfig]]:
    """Every combination of the grid as (overrides, config); unknown settings or bad values raise ValueError."""
    base = base or LookupConfig()
    empty = sorted(k for k, values in grid.items() if not values)
    if not grid or empty:
        raise ValueError(f"a sweep needs at least one setting with values (empty: {empty}), e.g. l0_filter=true,false")
    keys = list(grid)
    combos = []
    for values in itertools.product(*(grid[k] for k in keys)):
        overrides = {**(base_overrides or {}), **dict(zip(keys, values, strict=True))}
        combos.append((overrides, base.with_overrides(overrides)))
    return combos


def run_sweep(dataset: Dataset, grid: Mapping[str, Sequence[Any]], *, store: TraceStore,
              base_config: LookupConfig | None = None, base_overrides: Mapping[str, Any] | None = None,
              metrics: Sequence[str] = DEFAULT_METRICS, progress: Progress | None = None,
              baseline: bool = True, oracle: bool = True, attribute: bool = True) -> list[RunResult]:
    """One run per grid combination; one index per distinct svd_dims and one baseline for the sweep."""
    combos = expand_grid(grid, base_config, base_overrides)
    metric_lib.parse_metrics(metrics)
    sweep_id = f"sweep-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    total, n = len(combos) * len(dataset.queries), len(dataset.queries)
    ordered = sorted(enumerate(combos), key=lambda item: item[1][1].svd_dims or 0)  # unset: the default index
    results: dict[int, RunResult] = {}
    index, engine, done = None, None, 0
    for position, (overrides, config) in ordered:
        if index is None or index.svd_dims != config.svd_dims:
            index = open_dataset_index(dataset, config.svd_dims)
        prepare_models(index, config)
        if baseline and engine is None:
            engine = BM25Baseline.build(index.kb)  # the baseline does not depend on any setting

        def step(current: int, _total: int, offset: int = done) -> None:
            if progress is not None:
                progress(offset + current, total)

        explicit_k = config.top_k if "top_k" in overrides else None
        results[position] = run_evaluation(dataset, config, store=store, metrics=metrics, progress=step,
                                           top_k=explicit_k, overrides=overrides, index=index,
                                           baseline=engine or False, sweep_id=sweep_id, oracle=oracle,
                                           attribute=attribute)
        done += n
    return [results[i] for i in range(len(combos))]
