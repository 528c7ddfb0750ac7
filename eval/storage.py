"""Evaluation tables beside `tool_invocation` in the trace file: runs, per-query facts, per-query metrics.

- `eval_run`: one row per run (dataset, split, configuration, mean metrics, baseline, diagnostics, the
  versions of the libraries that decide its numbers, `library_versions`, and the models its settings name,
  `models`: each null for runs stored before them).
- `eval_query`: one row per (run, query): the query, its labels, the filter decision and other diagnostics,
  its relevance grade (`confidence`, `relevance_level`), and `invocation_id`, the `tool_invocation` row of its
  lookup. Unanswerable questions (`answerable` false: no relevant page) have rows but no metrics; the
  per-query frame (`load_per_query`) holds the scored ones, `load_unanswerable` the others.
- `eval_query_metric`: long form (run, query, system, metric, value); `system` is `lookup`, the BM25
  baseline (`bm25`) or the oracle filter (`oracle`).

The tables are part of the trace file's schema (retrieval/traces/schema.py): created, and given columns
added since, by the file's one list of migrations when a store opens it; old rows read new columns as null.

A run's `eval_run` row is written with `status = 'started'` (and the process's `pid` and `host`) before
its first lookup, and replaced by the finished row (`complete`) at the end; a run that stops with an
exception is marked `incomplete`. A `started` row whose process is gone (killed) reads as `incomplete`
too, and a null status (runs stored before this column) as `complete`.

A run scored against the trace file's judgements (a saved replay of interactive lookups) is read with its
figures scored again against the judgements as they are now (eval.judged), by every reader here.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

import pandas as pd

from retrieval import TraceStore

from . import judged
from .defaults import LOOKUP
from .reading import one_read

QUERY_COLUMNS = ("run_id", "query_id", "position", "query", "n_relevant", "relevant", "categories",
                 "invocation_id", "first_relevant_rank", "top_sources", "filter_decision", "filter_category",
                 "filter_correct", "filter_harm", "filter_harm_missed", "filter_widened", "retrieval_layer",
                 "l1_status", "candidate_count", "duplicates_merged", "evidence_count", "latency_ms", "filter_changed",
                 "answerable", "confidence", "relevance_level", "question_set", "relevant_stages",
                 "ranked", "ranked_scores", "tie_ranges", "judged_at_10", "facets")
RUN_JSON = ("config", "overrides", "metrics", "baseline", "diagnostics", "dataset_info", "metric_names",
            "library_versions", "models")
STARTED, COMPLETE, INCOMPLETE, RUNNING = "started", "complete", "incomplete", "running"
JSON_COLUMNS = ("relevant", "categories", "top_sources", "relevant_stages", "ranked", "ranked_scores", "tie_ranges",
                "facets")
BOOLEAN_COLUMNS = ("filter_correct", "filter_harm", "filter_harm_missed", "filter_widened", "filter_changed",
                   "answerable")


class UnknownRunError(ValueError):
    """No stored run has this id (or the prefix matches several)."""


class IncompleteRunError(ValueError):
    """The run has no results: it stopped (or is still running) before its end."""


def start_run(store: TraceStore, run: dict[str, Any]) -> None:
    """Write the run's `eval_run` row as `started` by this process, before its first lookup."""
    row = {k: (json.dumps(v, default=str) if k in RUN_JSON else v) for k, v in run.items()}
    row.update(status=STARTED, pid=os.getpid(), host=socket.gethostname())
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        con.execute("DELETE FROM eval_run WHERE run_id = ?", [row["run_id"]])
        con.execute(f"INSERT INTO eval_run ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                    list(row.values()))
        con.execute("COMMIT")


def mark_incomplete(store: TraceStore, run_id: str) -> None:
    """A run that stopped with an exception: `started` becomes `incomplete` (it can be resumed)."""
    with store.connect() as con:
        con.execute("UPDATE eval_run SET status = ? WHERE run_id = ? AND status = ?", [INCOMPLETE, run_id, STARTED])


def mark_shards_failed(store: TraceStore, run_id: str, failed: list[dict[str, Any]], reason: str) -> None:
    """A fanned-out run whose shards did not all finish: `started` becomes `incomplete`, and its diagnostics
    name the failed shards (number, questions, first position) and why (it can be resumed)."""
    diagnostics = json.dumps({"failed_shards": failed, "failure": reason}, default=str)
    with store.connect() as con:
        con.execute("UPDATE eval_run SET status = ?, diagnostics = ? WHERE run_id = ? AND status = ?",
                    [INCOMPLETE, diagnostics, run_id, STARTED])


def save_run(store: TraceStore, run: dict[str, Any], per_query: pd.DataFrame, metric_frame: pd.DataFrame) -> None:
    """Store one finished run: its `eval_run` row (replacing the `started` one), its `eval_query` rows and
    its long-form metrics, in one transaction."""
    row = {k: (json.dumps(v, default=str) if k in RUN_JSON else v) for k, v in run.items()}
    row.update(status=COMPLETE, pid=None, host=None)
    queries = per_query.reindex(columns=list(QUERY_COLUMNS)).copy()
    for name in JSON_COLUMNS:
        queries[name] = queries[name].map(_json_cell)
    for name in BOOLEAN_COLUMNS:
        queries[name] = queries[name].astype("boolean")
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        for table in ("eval_run", "eval_query", "eval_query_metric"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [row["run_id"]])
        con.execute(f"INSERT INTO eval_run ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                    list(row.values()))
        for table, frame in (("eval_query", queries), ("eval_query_metric", metric_frame)):
            con.register("_incoming", frame)
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
            con.unregister("_incoming")
        con.execute("COMMIT")


def _json_cell(value: Any) -> str | None:
    """A JSON column's cell as text; None for a missing one (a column a row does not have reads null)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return json.dumps(value)


def resolve_run_id(store: TraceStore, text: str) -> str:
    """The run id `text` names: an exact id or a unique prefix; otherwise UnknownRunError with recent ids."""
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


@one_read
def load_run_row(store: TraceStore, run_id: str, *, allow_incomplete: bool = False) -> dict[str, Any]:
    """The `eval_run` row (JSON decoded, `status` derived; a judged run's metrics, diagnostics and labelled
    queries as the judgements score it now); IncompleteRunError for a run without results."""
    run_id = resolve_run_id(store, run_id)
    row = _stored_row(store, run_id)
    if row["status"] != COMPLETE and not allow_incomplete:
        raise IncompleteRunError(f"run {run_id} is {row['status']}: it has no results yet; "
                                 + _next_step(run_id, row["status"]))
    if row["status"] == COMPLETE and judged.is_judged(row.get("dataset_kind")):
        scored = judged.rescore(store, row, _stored_queries(store, run_id))
        row["metrics"], row["diagnostics"] = scored.metrics, scored.diagnostics
        row["dataset_info"] = {**(row["dataset_info"] or {}), "labelled_queries": scored.labelled}
    return row


def _stored_row(store: TraceStore, run_id: str) -> dict[str, Any]:
    """The `eval_run` row as stored (JSON decoded, `status` derived)."""
    row = store.query("SELECT * FROM eval_run WHERE run_id = ?", [run_id]).iloc[0].to_dict()
    for name in RUN_JSON:
        row[name] = json.loads(row[name]) if isinstance(row.get(name), str) else row.get(name)
    row["status"] = run_status(row.get("status"), row.get("pid"), row.get("host"))
    return row


def run_status(status: Any, pid: Any, host: Any) -> str:
    """`complete`, `incomplete`, or `running` (started by a process on this host that is still alive)."""
    if status is None or (isinstance(status, float) and pd.isna(status)) or status == COMPLETE:
        return COMPLETE
    if status == STARTED and host == socket.gethostname() and _alive(pid):
        return RUNNING
    return INCOMPLETE


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, TypeError, ProcessLookupError):
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def _next_step(run_id: str, status: str) -> str:
    if status == RUNNING:
        return "wait for it to finish"
    return (f"resume it with `python -m eval run ... --resume {run_id}` (the same dataset flags) or delete it "
            f"with `python -m eval runs --delete {run_id}`")


def delete_run(store: TraceStore, run_id: str) -> dict[str, int]:
    """Delete a run (not one still running): its eval rows and its recorded lookups; returns row counts."""
    row = load_run_row(store, run_id, allow_incomplete=True)
    if row["status"] == RUNNING:
        raise IncompleteRunError(f"run {row['run_id']} is still running in process {row['pid']}; stop it first")
    counts = {}
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        for table in ("tool_invocation", "eval_query_metric", "eval_query", "eval_run"):
            counts[table] = con.execute(f"DELETE FROM {table} WHERE run_id = ?", [row["run_id"]]).fetchone()[0]
        con.execute("COMMIT")
    return counts


@one_read
def load_per_query(store: TraceStore, run_id: str) -> pd.DataFrame:
    """The wide per-query frame of a run's scored questions: facts, lookup metrics by name, baseline metrics as
    `<system>:<name>` (a judged run's labels, facts and metrics as the judgements score it now)."""
    queries = _stored_queries(store, run_id)
    kind = store.query("SELECT dataset_kind FROM eval_run WHERE run_id = ?", [run_id])["dataset_kind"]
    if not kind.empty and judged.is_judged(kind.iloc[0]) and not queries.empty:
        scored = judged.rescore(store, _stored_row(store, run_id), queries)
        queries = scored.per_query.reindex(columns=list(queries.columns))
        metrics = scored.metric_frame.drop(columns=["run_id"])
    else:
        queries = queries[~_unanswerable(queries)].reset_index(drop=True)
        metrics = store.query("SELECT query_id, system, metric, value FROM eval_query_metric WHERE run_id = ?",
                              [run_id])
    if metrics.empty:
        return queries
    metrics["column"] = [m if s == LOOKUP else f"{s}:{m}" for s, m in zip(metrics["system"], metrics["metric"],
                                                                          strict=True)]
    wide = metrics.pivot(index="query_id", columns="column", values="value").reset_index()
    wide.columns.name = None
    return queries.merge(wide, on="query_id", how="left")


@one_read
def load_unanswerable(store: TraceStore, run_id: str) -> pd.DataFrame:
    """A run's unanswerable questions (no relevant page), in order: their grades and what came back first."""
    queries = _stored_queries(store, run_id)
    return queries[_unanswerable(queries)].reset_index(drop=True)


def _unanswerable(queries: pd.DataFrame) -> pd.Series:
    """Rows of questions that name no relevant page (null, as in runs stored before the column: answerable)."""
    if "answerable" not in queries:
        return pd.Series(False, index=queries.index)
    return queries["answerable"].astype("boolean").fillna(True).eq(False).astype(bool)


def _stored_queries(store: TraceStore, run_id: str) -> pd.DataFrame:
    """A run's `eval_query` rows as stored, in order, JSON columns decoded."""
    queries = store.query("SELECT * FROM eval_query WHERE run_id = ? ORDER BY position", [run_id])
    for name in JSON_COLUMNS:
        if name in queries:
            queries[name] = queries[name].map(lambda v: json.loads(v) if isinstance(v, str) else v)
    return queries


@one_read
def list_runs(store: TraceStore, *, incomplete_only: bool = False) -> pd.DataFrame:
    """Every stored run, newest first, with its status, its recorded lookups and its mean metrics as columns."""
    # a run's lookups are the calls it recorded; a replay's recorded side made none, and counts the recorded
    # calls its questions point to
    frame = store.query("SELECT r.run_id, r.status, r.pid, r.host, coalesce(t.lookups, q.lookups, 0) AS lookups, "
                        "r.created_at, r.sweep_id, r.dataset, r.split, r.n_queries, r.top_k, r.seconds, r.overrides, "
                        "r.metrics, r.dataset_kind FROM eval_run r LEFT JOIN (SELECT run_id, count(*) AS lookups "
                        "FROM tool_invocation WHERE run_id IS NOT NULL GROUP BY run_id) t USING (run_id) "
                        "LEFT JOIN (SELECT e.run_id, count(*) AS lookups FROM eval_query e "
                        "JOIN tool_invocation i ON i.id = e.invocation_id "
                        "WHERE i.run_id IS NULL GROUP BY e.run_id) q USING (run_id) ORDER BY r.created_at DESC")
    frame["status"] = [run_status(*v) for v in zip(frame["status"], frame["pid"], frame["host"], strict=True)]
    frame = frame.drop(columns=["pid", "host"])
    if incomplete_only:
        frame = frame[frame["status"] != COMPLETE].reset_index(drop=True)
    if frame.empty:
        return frame.drop(columns=["metrics", "dataset_kind"])
    means = [json.loads(m) if isinstance(m, str) else {} for m in frame["metrics"]]
    for i, (run_id, kind, status) in enumerate(zip(frame["run_id"], frame["dataset_kind"], frame["status"],
                                                   strict=True)):
        if status == COMPLETE and judged.is_judged(kind):  # the judgements as they are now
            means[i] = load_run_row(store, run_id)["metrics"]
    metrics = pd.DataFrame(means, index=frame.index)
    frame["overrides"] = frame["overrides"].map(lambda v: json.loads(v) if isinstance(v, str) else {})
    return pd.concat([frame.drop(columns=["metrics", "dataset_kind"]), metrics], axis=1)


@one_read
def run_bases(store: TraceStore, run_ids: list[str] | None = None) -> pd.DataFrame:
    """Each run's knowledge base (`run_id`, `kb_fingerprint`), of every run or of `run_ids`: found through its
    query rows (a replay's `recorded-…` run has no lookups of its own: its rows point at the recorded calls),
    else through its own lookups, else (an imported run) the base its `dataset_info` names."""
    where_q, where_t, params = "", "", []
    if run_ids is not None:
        marks = ", ".join("?" * len(run_ids))
        where_q, where_t, params = f" WHERE q.run_id IN ({marks})", f" AND run_id IN ({marks})", [*run_ids] * 3
    # an imported run (eval.imported) made no lookups: its base is the one its dataset's pages were read from
    return store.query("SELECT run_id, any_value(kb_fingerprint) AS kb_fingerprint FROM ("
                       "SELECT q.run_id, t.kb_fingerprint FROM eval_query q JOIN tool_invocation t "
                       f"ON t.id = q.invocation_id{where_q} UNION ALL SELECT run_id, kb_fingerprint "
                       f"FROM tool_invocation WHERE run_id IS NOT NULL{where_t} UNION ALL SELECT run_id, "
                       "dataset_info->>'kb_fingerprint' FROM eval_run WHERE dataset_info->>'kb_fingerprint' "
                       f"IS NOT NULL{where_t}) GROUP BY run_id", params)
