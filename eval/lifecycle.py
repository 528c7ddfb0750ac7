"""The two ends of a run, shared by the serial path (eval.runs) and the fanned-out one
(eval.parallel.fanout): `begin_run` resolves the configuration (or the run to resume) and the run's fields;
`finish_run` scores the merged lookups and stores the run as `complete`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from retrieval import LookupConfig, TraceStore
from retrieval.index import file_signature
from retrieval.lookup import library_versions, recorded_models

from . import depth, judged
from . import metrics as metric_lib
from . import oracle as oracle_lib
from .abstention import answerability_summary
from .attribution import missed_summary
from .datasets import Dataset
from .diagnostics import summarize
from .resume import Recorded, resumable
from .scoring import metric_means, oracle_diagnostics
from .storage import LOOKUP, save_run
from .ties import ties_summary
from .versions import WORKERS_KEY

METRIC_COLUMNS = ["run_id", "query_id", "system", "metric", "value"]
NOT_ATTRIBUTED = "switched off (--no-attribution)"


@dataclass(frozen=True, eq=False)
class PlannedRun:
    """A run about to start: its `eval_run` fields, the configuration its lookups use (top_k = depth),
    the parsed metrics, the lookups a resumed run already recorded, and when it started (perf_counter)."""

    run: dict[str, Any]
    config: LookupConfig
    parsed: tuple[metric_lib.Metric, ...]
    done: Mapping[str, Recorded]
    started: float
    kb_signature: str = ""  # the knowledge base's files when the run began (retrieval.index.file_signature)

    @property
    def run_id(self) -> str:
        return str(self.run["run_id"])

    @property
    def cutoff(self) -> int:
        """The primary metric's cut-off (within the depth): where a relevant page counts as missed."""
        return min(self.parsed[0].k, int(self.run["top_k"]))


def plan_run(dataset: Dataset, config: LookupConfig | None, *, store: TraceStore, metrics: Sequence[str],
             top_k: int | None = None, overrides: Mapping[str, Any] | None = None, sweep_id: str | None = None,
             resume: str | None = None) -> PlannedRun:
    """The run's id, fields and configuration (or those of the incomplete run `resume` names), not stored yet;
    bad metrics, an empty dataset or a run that cannot be resumed raise ValueError."""
    parsed = metric_lib.parse_metrics(metrics)
    depth = top_k or metric_lib.depth(parsed)
    config = replace(config or LookupConfig(), top_k=depth)
    overrides = {k: getattr(config, k) for k in (overrides or {})}  # typed, as the lookup saw them
    if not any(q.answerable for q in dataset.queries):
        raise ValueError(f"dataset {dataset.name} has no answerable queries to evaluate (none names a relevant "
                         "page); rank metrics need at least one")
    started, created = time.perf_counter(), datetime.now(timezone.utc)
    run_id, done = f"run-{created:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}", {}
    if resume:
        run_id, created, done = resumable(store, resume, dataset, config)
    run = {"run_id": run_id, "created_at": created.replace(tzinfo=None), "sweep_id": sweep_id,
           "dataset": dataset.name, "dataset_kind": dataset.kind, "dataset_path": dataset.path,
           "split": dataset.split, "n_queries": len(dataset.queries), "top_k": depth, "config": config.to_dict(),
           "overrides": overrides, "dataset_info": dataset.describe(), "metric_names": [m.name for m in parsed],
           "library_versions": library_versions(),  # this process's; a resumed run records the resuming one's
           "models": recorded_models(config.to_dict())}  # the models its settings name, as this process loads them
    return PlannedRun(run, config, tuple(parsed), done, started, _signature(dataset.kb_path))


def _signature(path: str) -> str:
    """The knowledge base's files as a run sees them (empty when they cannot be read: nothing to compare)."""
    try:
        return file_signature(path)
    except OSError:
        return ""


def changed_during_run(planned: PlannedRun, kb_path: str) -> str | None:
    """A sentence when the knowledge base's files changed while the run looked up (None: they did not). A run is
    scored on the index it opened, one version for all its questions; the traces record it (kb_fingerprint)."""
    if not planned.kb_signature or _signature(kb_path) in ("", planned.kb_signature):
        return None
    return ("the knowledge base changed while the run looked up: every question was answered by the index the "
            "run opened (its kb_fingerprint is on each trace row); run again to score the edited pages")


def finish_run(store: TraceStore, planned: PlannedRun, rows: list[dict[str, Any]], metric_rows: list[tuple], *,
               baseline_means: dict[str, float] | None, oracle: bool,
               worker_versions: Mapping[str, Any] | None = None) -> None:
    """Score the run's merged rows (lookup, then baseline, then oracle metric rows) and store it as `complete`;
    `worker_versions` (a fan-out's workers' library versions that differ from the run's) go in its diagnostics."""
    depth.add_marks(rows, judged.judged_qrels(store))  # an analyst's mark is a judgement too (Judged@10)
    per_query = pd.DataFrame(rows)
    scored = [row for row in rows if row.get("answerable", True)]
    categories = {row["query_id"]: oracle_lib.true_category(row["categories"]) for row in scored}
    metric_frame = pd.DataFrame(metric_rows, columns=METRIC_COLUMNS)
    means = metric_means(metric_frame, LOOKUP, planned.parsed)
    diagnostics = summarize(pd.DataFrame(scored))  # the filter's precision and harm need a relevant page
    diagnostics["answerability"] = answerability_summary(per_query)
    diagnostics[depth.COLUMN] = depth.mean_judged(pd.DataFrame(scored))
    stages = [row.get("relevant_stages") for row in scored]
    diagnostics["missed_stages"] = (missed_summary(stages, planned.cutoff, planned.parsed[0].name)
                                    if any(s is not None for s in stages) else {"skipped": NOT_ATTRIBUTED})
    diagnostics["oracle"] = oracle_diagnostics(oracle, metric_frame, means, categories, planned.parsed)
    diagnostics["ties"] = ties_summary([row.get("tie_ranges") for row in scored], means)
    if worker_versions:
        diagnostics[WORKERS_KEY] = dict(worker_versions)
    changed = changed_during_run(planned, str(planned.run["dataset_info"].get("kb_path") or ""))
    if changed:
        diagnostics["kb_changed"] = changed
    results = {"seconds": time.perf_counter() - planned.started, "metrics": means, "baseline": baseline_means,
               "diagnostics": diagnostics}
    save_run(store, {**planned.run, **results}, per_query, metric_frame)
