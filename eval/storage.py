"""Evaluation tables beside `tool_invocation` in the trace file: runs, per-query facts, per-query metrics.

- `eval_run`: one row per run (dataset, split, configuration, mean metrics, baseline, diagnostics).
- `eval_query`: one row per (run, query): the query, its labels, the filter decision and other diagnostics,
  and `invocation_id`, the `tool_invocation` row of its lookup.
- `eval_query_metric`: long form (run, query, system, metric, value); `system` is `lookup`, the BM25
  baseline (`bm25`) or the oracle filter (`oracle`).

Columns added after a table was first created are listed in MIGRATIONS and added to existing trace files
(ALTER TABLE ... ADD COLUMN IF NOT EXISTS) whenever the tables are ensured; old rows read them as null.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from retrieval import TraceStore

LOOKUP = "lookup"
QUERY_COLUMNS = ("run_id", "query_id", "position", "query", "n_relevant", "relevant", "categories",
                 "invocation_id", "first_relevant_rank", "top_sources", "filter_decision", "filter_category",
                 "filter_correct", "filter_harm", "filter_harm_missed", "filter_widened", "retrieval_layer", "l1_status",
                 "candidate_count", "duplicates_merged", "evidence_count", "latency_ms")
RUN_JSON = ("config", "overrides", "metrics", "baseline", "diagnostics", "dataset_info", "metric_names")
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS eval_run (
        run_id VARCHAR PRIMARY KEY, created_at TIMESTAMP NOT NULL, sweep_id VARCHAR, dataset VARCHAR NOT NULL,
        dataset_kind VARCHAR, dataset_path VARCHAR, split VARCHAR, n_queries INTEGER, top_k INTEGER,
        seconds DOUBLE, config JSON, overrides JSON, metrics JSON, baseline JSON, diagnostics JSON,
        dataset_info JSON, metric_names JSON)""",
    """CREATE TABLE IF NOT EXISTS eval_query (
        run_id VARCHAR NOT NULL, query_id VARCHAR NOT NULL, position INTEGER, query VARCHAR, n_relevant INTEGER,
        relevant JSON, categories JSON, invocation_id VARCHAR, first_relevant_rank INTEGER, top_sources JSON,
        filter_decision VARCHAR, filter_category VARCHAR, filter_correct BOOLEAN, filter_harm BOOLEAN,
        filter_harm_missed BOOLEAN, filter_widened BOOLEAN, retrieval_layer VARCHAR, l1_status VARCHAR, candidate_count INTEGER,
        duplicates_merged INTEGER, evidence_count INTEGER, latency_ms DOUBLE, PRIMARY KEY (run_id, query_id))""",
    """CREATE TABLE IF NOT EXISTS eval_query_metric (
        run_id VARCHAR NOT NULL, query_id VARCHAR NOT NULL, system VARCHAR NOT NULL, metric VARCHAR NOT NULL,
        value DOUBLE, PRIMARY KEY (run_id, query_id, system, metric))""",
)
MIGRATIONS = (("eval_query", "filter_widened", "BOOLEAN"),)  # (table, column, type) added since the first schema
BOOLEAN_COLUMNS = ("filter_correct", "filter_harm", "filter_harm_missed", "filter_widened")


class UnknownRunError(ValueError):
    """No stored run has this id (or the prefix matches several)."""


def ensure_tables(store: TraceStore) -> None:
    """Create the evaluation tables, and add the MIGRATIONS columns to tables an older version created."""
    with store.connect() as con:
        for statement in SCHEMA:
            con.execute(statement)
        for table, column, kind in MIGRATIONS:
            con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {kind}")


def save_run(store: TraceStore, run: dict[str, Any], per_query: pd.DataFrame, metric_frame: pd.DataFrame) -> None:
    """Insert one run: its `eval_run` row, its `eval_query` rows and its long-form metrics, in one transaction."""
    ensure_tables(store)
    row = {k: (json.dumps(v, default=str) if k in RUN_JSON else v) for k, v in run.items()}
    queries = per_query.reindex(columns=list(QUERY_COLUMNS)).copy()
    for name in ("relevant", "categories", "top_sources"):
        queries[name] = queries[name].map(json.dumps)
    for name in BOOLEAN_COLUMNS:
        queries[name] = queries[name].astype("boolean")
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        con.execute(f"INSERT INTO eval_run ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                    list(row.values()))
        for table, frame in (("eval_query", queries), ("eval_query_metric", metric_frame)):
            con.register("_incoming", frame)
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
            con.unregister("_incoming")
        con.execute("COMMIT")


def resolve_run_id(store: TraceStore, text: str) -> str:
    """The run id `text` names: an exact id or a unique prefix; otherwise UnknownRunError with recent ids."""
    ensure_tables(store)
    found = store.query("SELECT run_id FROM eval_run WHERE starts_with(run_id, ?) ORDER BY created_at DESC",
                        [str(text)])["run_id"].tolist()
    if str(text) in found:
        return str(text)
    if len(found) == 1:
        return found[0]
    if found:
        raise UnknownRunError(f"run id {text!r} is ambiguous; it starts {len(found)} runs: {', '.join(found[:5])}")
    recent = store.query("SELECT run_id FROM eval_run ORDER BY created_at DESC LIMIT 5")["run_id"].tolist()
    hint = f"recent runs: {', '.join(recent)}" if recent else "this trace file has no runs yet"
    raise UnknownRunError(f"unknown run id {text!r} in {store.path}; {hint} (see `python -m eval runs`)")


def load_run_row(store: TraceStore, run_id: str) -> dict[str, Any]:
    run_id = resolve_run_id(store, run_id)
    row = store.query("SELECT * FROM eval_run WHERE run_id = ?", [run_id]).iloc[0].to_dict()
    for name in RUN_JSON:
        row[name] = json.loads(row[name]) if isinstance(row.get(name), str) else row.get(name)
    return row


def load_per_query(store: TraceStore, run_id: str) -> pd.DataFrame:
    """The wide per-query frame of a run: facts, lookup metrics by name, baseline metrics as `<system>:<name>`."""
    queries = store.query("SELECT * FROM eval_query WHERE run_id = ? ORDER BY position", [run_id])
    for name in ("relevant", "categories", "top_sources"):
        queries[name] = queries[name].map(lambda v: json.loads(v) if isinstance(v, str) else v)
    metrics = store.query("SELECT query_id, system, metric, value FROM eval_query_metric WHERE run_id = ?", [run_id])
    if metrics.empty:
        return queries
    metrics["column"] = [m if s == LOOKUP else f"{s}:{m}" for s, m in zip(metrics["system"], metrics["metric"], strict=True)]
    wide = metrics.pivot(index="query_id", columns="column", values="value").reset_index()
    wide.columns.name = None
    return queries.merge(wide, on="query_id", how="left")


def list_runs(store: TraceStore) -> pd.DataFrame:
    """Every stored run, newest first, with its mean metrics as columns."""
    ensure_tables(store)
    frame = store.query("SELECT run_id, created_at, sweep_id, dataset, split, n_queries, top_k, seconds, "
                        "overrides, metrics FROM eval_run ORDER BY created_at DESC")
    if frame.empty:
        return frame.drop(columns=["metrics"])
    metrics = pd.DataFrame([json.loads(m) for m in frame["metrics"]], index=frame.index)
    frame["overrides"] = frame["overrides"].map(lambda v: json.loads(v) if isinstance(v, str) else {})
    return pd.concat([frame.drop(columns=["metrics"]), metrics], axis=1)
