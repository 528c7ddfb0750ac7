"""A replay saved as an evaluation run, so the Compare page offers it beside what it replayed.

- A replay of a stored run's lookups becomes a run of that run's dataset (name, kind, path, split), scored
  against that run's labels (`eval_query.relevant`, each at grade 1) under the same query ids, so
  `compare_runs` pairs it with the original run query by query.
- A replay of interactive lookups (or of a run with no `eval_run` row) has no run to pair with, so the
  recorded calls are stored as a run too (`recorded-…`; its lookups are the recorded rows themselves,
  nothing is looked up again), both scored against the trace file's judgements; a query nobody judged
  scores 0 on both sides. Those judgements change after the save, so such runs (dataset kind `replay`) are
  scored again against them whenever they are read (eval.judged), with the scoring the save used.

A run's query rows point at their lookups through `eval_query.invocation_id`; the replayed lookups stay
`tool_invocation` rows under the replay's run id. The replay records this process's library versions and the
models B names as this process loads them; the `recorded-…` run records no library versions (its calls were
made earlier, by a process whose versions no row kept) and the models its calls recorded, when they all
recorded the same (else none).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd

from retrieval import KnowledgeIndex, TraceStore
from retrieval.config import changed_settings
from retrieval.export import json_object
from retrieval.lookup import library_versions, recorded_models

from . import judged
from . import oracle as oracle_lib
from .datasets import Query
from .judged import Lookup
from .runs import DEFAULT_METRICS
from .scoring import index_domains
from .storage import UnknownRunError, load_per_query, load_run_row, load_unanswerable, save_run

RECORDED_PREFIX = "recorded-"
INTERACTIVE = "interactive lookups"
NO_ORACLE = "a replay looks recorded calls up again; the oracle filter is not run"


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
        dataset = {**_dataset_of(source), "replay_of": source["run_id"]}
        if judged.is_judged(dataset["kind"]):  # a replay of a judged run is judged too: keep its pages' categories
            known = (source["dataset_info"] or {}).get("source_domains") or {}
            dataset["source_domains"] = {**known, **_domains(store, replayed, index)}
        _save(store, run_id, replayed, lambda lk: labels.get(lk.query_id), index, config, created, dataset,
              source["metric_names"], (library_versions(), recorded_models(config)))
        return source["run_id"], run_id
    qrels = judged.judged_qrels(store)
    originals = [Lookup(paired_query_id(r.id, r.query_id), r.query, r.id, float(r.latency_ms or 0.0),
                        json_object(r.retrieval_details)) for r in calls.itertuples(index=False)]
    recorded_id = RECORDED_PREFIX + run_id.split("-", 1)[-1]
    dataset = {"name": INTERACTIVE, "kind": judged.KIND, "path": run_id, "split": "all",
               "replay_of": source_run or INTERACTIVE,
               "source_domains": _domains(store, [*originals, *replayed], index)}
    original_config = recorded_config(calls, config)
    label = lambda lk: judged.judged_query(lk, qrels)  # noqa: E731
    _save(store, recorded_id, originals, label, index, original_config, created - timedelta(microseconds=1),
          dataset, list(DEFAULT_METRICS), (None, calls_models(calls)))
    _save(store, run_id, replayed, label, index, config, created, dataset, list(DEFAULT_METRICS),
          (library_versions(), recorded_models(config)))
    return recorded_id, run_id


def save_or_discard(store: TraceStore, run_id: str, calls: pd.DataFrame, *, index: KnowledgeIndex,
                    config: Mapping[str, Any], source_run: str | None = None) -> tuple[str, str]:
    """`save_replay_run`, or, when it fails, nothing at all: the replay's recorded lookups and any rows of it (and
    of its `recorded-…` run) are deleted, so no run id without a run shows in the pickers and exports, and a
    ReplayNotSaved says why."""
    try:
        return save_replay_run(store, run_id, calls, index=index, config=config, source_run=source_run)
    except Exception as exc:
        removed = discard_replay(store, run_id)
        raise ReplayNotSaved(f"the replay could not be saved as a run ({type(exc).__name__}: {exc}); its "
                             f"{removed} recorded lookup(s) were deleted, so nothing of it is kept") from exc


class ReplayNotSaved(ValueError):
    """Saving a replay as a run failed; nothing of the replay was kept."""


def discard_replay(store: TraceStore, run_id: str) -> int:
    """Delete every row of the replay `run_id` and of its `recorded-…` run (spooled rows drained first, so none
    comes back later); returns how many recorded lookups went."""
    store.flush()
    ids = [run_id, RECORDED_PREFIX + run_id.split("-", 1)[-1]]
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        removed = con.execute("DELETE FROM tool_invocation WHERE run_id = ?", [run_id]).fetchone()[0]
        for table in ("eval_query_metric", "eval_query", "eval_run"):
            con.execute(f"DELETE FROM {table} WHERE run_id IN (?, ?)", ids)
        con.execute("COMMIT")
    return int(removed)


def _save(store: TraceStore, run_id: str, lookups: list[Lookup], label: Callable[[Lookup], Query | None],
          index: KnowledgeIndex, config: Mapping[str, Any], created: datetime, dataset: dict[str, Any],
          metric_names: list[str], made_with: tuple[dict[str, Any] | None, dict[str, Any] | None]) -> None:
    """Score `lookups` (eval.judged.score, which also re-scores a judged run when it is read) and store them
    with what they were looked up with, `made_with`: the library versions and the models (None: not known)."""
    scored = judged.score(run_id, lookups, label, index_domains(index), metric_names, oracle_lib.skipped(NO_ORACLE),
                          grade_unanswerable=not judged.is_judged(dataset["kind"]), marks=judged.judged_qrels(store))
    save_run(store, {
        "run_id": run_id, "created_at": created, "sweep_id": None, "dataset": dataset["name"],
        "dataset_kind": dataset["kind"], "dataset_path": dataset["path"], "split": dataset["split"],
        "n_queries": len(lookups), "top_k": _depth(config.get("top_k"), lookups), "config": dict(config),
        "overrides": _overrides(config), "seconds": 0.0,
        "dataset_info": {**dataset, "queries": len(lookups), "labelled_queries": scored.labelled},
        "metric_names": list(scored.metrics), "metrics": scored.metrics, "baseline": None,
        "diagnostics": scored.diagnostics, "library_versions": made_with[0], "models": made_with[1]},
        scored.per_query, scored.metric_frame)


def _depth(value: Any, lookups: list[Lookup]) -> int:
    """The run's depth: its top_k, or, for calls recorded with several ("mixed: 5 ×13, 10 ×1", which crashed
    `int()`), the largest of them: each call was replayed at its own recorded top_k."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    recorded = [int(n) for n in re.findall(r"(\d+) ×", str(value))]
    return max(recorded or [len(lookup.ranked) for lookup in lookups] or [0])


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


def calls_models(calls: pd.DataFrame) -> dict[str, Any] | None:
    """The models the recorded `calls` named (their config's `models`), when every call recorded the same ones;
    None when they differ or a call recorded none (made before calls recorded them)."""
    configs = [json_object(c) for c in calls["config"]] if "config" in calls else []
    found = {json.dumps(c.get("models"), sort_keys=True) for c in configs}
    models = json.loads(found.pop()) if len(found) == 1 else None
    return models if isinstance(models, dict) else None


def _overrides(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings that differ from the real defaults (what a run's label names), not from the compared run."""
    return changed_settings(config)


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
    """The stored run's labels by query id: its relevant sources (grade 1), the categories it scored with and its
    questions' facets (none for a run stored before they were)."""
    frame = pd.concat([load_per_query(store, run_id), load_unanswerable(store, run_id)], ignore_index=True)
    sets = frame["question_set"] if "question_set" in frame else pd.Series(None, index=frame.index)
    facets = frame["facets"] if "facets" in frame else pd.Series(None, index=frame.index)
    return {str(r.query_id): Query(str(r.query_id), str(r.query), {s: 1.0 for s in (r.relevant or [])},
                                   tuple(r.categories or ()), True, origin if isinstance(origin, str) else "",
                                   dict(found) if isinstance(found, dict) else {})
            for r, origin, found in zip(frame.itertuples(index=False), sets, facets, strict=True)}


def _domains(store: TraceStore, lookups: list[Lookup], index: KnowledgeIndex) -> dict[str, list[str]]:
    """The categories of every page the lookups returned or analysts judged: what re-scoring a judged run
    against later judgements needs of the knowledge base (eval.judged)."""
    judged_pages = [source for marks in judged.judged_qrels(store).values() for source in marks]
    return judged.source_domains([*(s for lookup in lookups for s in lookup.ranked), *judged_pages], index)
