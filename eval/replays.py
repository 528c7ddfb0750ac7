"""A replay saved as an evaluation run, so the Compare page offers it beside what it replayed.

- A replay of a stored run's lookups becomes a run of that run's dataset (name, kind, path, split), scored
  against that run's labels (`eval_query.relevant`, each at grade 1) under the same query ids, so
  `compare_runs` pairs it with the original run query by query.
- A replay of interactive lookups (or of a run with no `eval_run` row) has no run to pair with, so the
  recorded calls are stored as a run too (`recorded-…`; its lookups are the recorded rows themselves,
  nothing is looked up again), both scored against the trace file's judgements; a query nobody judged
  scores 0 on both sides.

A run's query rows point at their lookups through `eval_query.invocation_id`; the replayed lookups stay
`tool_invocation` rows under the replay's run id.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd

from retrieval import KnowledgeIndex, LookupConfig, TraceStore
from retrieval.export import json_object

from . import judgements
from . import metrics as metric_lib
from . import oracle as oracle_lib
from .datasets import Query
from .diagnostics import summarize
from .runs import DEFAULT_METRICS
from .scoring import metric_means, query_row
from .storage import LOOKUP, UnknownRunError, load_per_query, load_run_row, save_run

RECORDED_PREFIX = "recorded-"
INTERACTIVE = "interactive lookups"
NO_ORACLE = "a replay looks recorded calls up again; the oracle filter is not run"


@dataclass(frozen=True)
class Lookup:
    """One lookup of a replay or of the calls it replayed: the query id it is paired on, and what it returned."""

    query_id: str
    query: str
    invocation_id: str
    latency_ms: float
    details: Mapping[str, Any]

    @property
    def ranked(self) -> list[str]:
        return list(self.details.get("evidence_sources") or [e["source"] for e in self.details.get("evidence") or []])


def paired_query_id(original_id: str, original_query_id: Any) -> str:
    """The query id a replayed call is recorded under: the original run's query id, else the original call's id."""
    return original_query_id if isinstance(original_query_id, str) and original_query_id else original_id


def save_replay_run(store: TraceStore, run_id: str, calls: pd.DataFrame, *, index: KnowledgeIndex,
                    config: Mapping[str, Any], source_run: str | None = None) -> tuple[str, str]:
    """Store the recorded replay `run_id` of `calls` (the original rows: id, query, query_id, latency_ms,
    retrieval_details, config) as an eval run; returns (A, B): the run to compare it with, and `run_id`."""
    replayed = _recorded(store, run_id)
    if not replayed:
        raise ValueError(f"replay {run_id} recorded no lookup; replay with saving on to store it as a run")
    created = datetime.now(timezone.utc).replace(tzinfo=None)
    source = _source_row(store, source_run)
    if source is not None:
        labels = _run_labels(store, source["run_id"])
        # a run's calls are replayed at their recorded depth (the run's top_k), not B's
        config = {**config, "top_k": (source["config"] or {}).get("top_k", config.get("top_k"))}
        _save(store, run_id, replayed, lambda lk: labels.get(lk.query_id), index, config, created,
              {**_dataset_of(source), "replay_of": source["run_id"]}, source["metric_names"])
        return source["run_id"], run_id
    judged = _judged(store)
    originals = [Lookup(paired_query_id(r.id, r.query_id), r.query, r.id, float(r.latency_ms or 0.0),
                        json_object(r.retrieval_details)) for r in calls.itertuples(index=False)]
    recorded_id = RECORDED_PREFIX + run_id.split("-", 1)[-1]
    dataset = {"name": INTERACTIVE, "kind": "replay", "path": run_id, "split": "all",
               "replay_of": source_run or INTERACTIVE}
    original_config = recorded_config(calls, config)
    label = lambda lk: _judged_query(lk, judged)  # noqa: E731
    _save(store, recorded_id, originals, label, index, original_config, created - timedelta(microseconds=1),
          dataset, list(DEFAULT_METRICS))
    _save(store, run_id, replayed, label, index, config, created, dataset, list(DEFAULT_METRICS))
    return recorded_id, run_id


def _save(store: TraceStore, run_id: str, lookups: list[Lookup], label: Callable[[Lookup], Query | None],
          index: KnowledgeIndex, config: Mapping[str, Any], created: datetime, dataset: dict[str, Any],
          metric_names: list[str]) -> None:
    parsed = metric_lib.parse_metrics(metric_names)
    rows, metric_rows = [], []
    for position, lookup in enumerate(lookups):
        query = label(lookup) or Query(lookup.query_id, lookup.query, {})
        query = Query(lookup.query_id, lookup.query, query.qrels, query.categories, query.categories_labelled)
        row = query_row(query, position, lookup.invocation_id, lookup.ranked, lookup.details, lookup.latency_ms, index)
        rows.append({**row, "run_id": run_id})
        metric_rows.extend((run_id, lookup.query_id, LOOKUP, name, value)
                           for name, value in metric_lib.score(lookup.ranked, query.qrels, parsed).items())
    per_query = pd.DataFrame(rows)
    metric_frame = pd.DataFrame(metric_rows, columns=["run_id", "query_id", "system", "metric", "value"])
    diagnostics = {**summarize(per_query), "oracle": oracle_lib.skipped(NO_ORACLE)}
    labelled = sum(1 for lookup in lookups if (label(lookup) or Query("", "", {})).qrels)
    save_run(store, {
        "run_id": run_id, "created_at": created, "sweep_id": None, "dataset": dataset["name"],
        "dataset_kind": dataset["kind"], "dataset_path": dataset["path"], "split": dataset["split"],
        "n_queries": len(lookups), "top_k": int(config.get("top_k") or 0), "config": dict(config),
        "overrides": _overrides(config), "seconds": 0.0,
        "dataset_info": {**dataset, "queries": len(lookups), "labelled_queries": labelled},
        "metric_names": [m.name for m in parsed], "metrics": metric_means(metric_frame, LOOKUP, parsed),
        "baseline": None, "diagnostics": diagnostics}, per_query, metric_frame)


def recorded_config(calls: pd.DataFrame, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The settings the recorded `calls` ran with, field by field over `fields` (the LookupConfig fields; a
    trace's config also records index settings): a value every call shares, else "mixed: …" with each value's
    count, so a comparison with mixed calls shows that setting as different."""
    configs = [json_object(c) for c in calls["config"]] if "config" in calls else []
    settings: dict[str, Any] = {}
    for name, default in fields.items():
        values = Counter(json.dumps(c.get(name, default), sort_keys=True) for c in configs)
        if len(values) > 1:
            settings[name] = "mixed: " + ", ".join(f"{value} ×{count}" for value, count in values.most_common())
        else:
            settings[name] = json.loads(next(iter(values))) if values else default
    return settings


def _overrides(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings that differ from the real defaults (what a run's label names), not from the compared run."""
    defaults = LookupConfig().to_dict()
    return {k: v for k, v in config.items() if k in defaults and defaults[k] != v}


def _recorded(store: TraceStore, run_id: str) -> list[Lookup]:
    frame = store.query("SELECT id, query, query_id, latency_ms, retrieval_details FROM tool_invocation "
                        "WHERE run_id = ? AND status = 'ok' ORDER BY created_at, id", [run_id])
    return [Lookup(paired_query_id(r.id, r.query_id), r.query, r.id, float(r.latency_ms or 0.0),
                   json_object(r.retrieval_details)) for r in frame.itertuples(index=False)]


def _source_row(store: TraceStore, source_run: str | None) -> dict[str, Any] | None:
    """The stored run that was replayed, or None (interactive calls, or a run without an `eval_run` row)."""
    if not source_run:
        return None
    try:
        return load_run_row(store, source_run)
    except UnknownRunError:
        return None


def _dataset_of(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": row["dataset"], "kind": row["dataset_kind"], "path": row["dataset_path"], "split": row["split"]}


def _run_labels(store: TraceStore, run_id: str) -> dict[str, Query]:
    """The stored run's labels by query id: its relevant sources (grade 1) and the categories it scored with."""
    frame = load_per_query(store, run_id)
    return {str(r.query_id): Query(str(r.query_id), str(r.query), {s: 1.0 for s in (r.relevant or [])},
                                   tuple(r.categories or ()), True)
            for r in frame.itertuples(index=False)}


def _judged(store: TraceStore) -> dict[str, dict[str, float]]:
    """The trace file's judgements as qrels by query text (the latest mark of each query and source)."""
    qrels: dict[str, dict[str, float]] = {}
    for row in judgements.latest(store).itertuples(index=False):
        qrels.setdefault(str(row.query).strip(), {})[str(row.source)] = float(row.grade)
    return qrels


def _judged_query(lookup: Lookup, judged: Mapping[str, Mapping[str, float]]) -> Query | None:
    qrels = judged.get(lookup.query.strip())
    return Query(lookup.query_id, lookup.query, dict(qrels)) if qrels else None
