"""Resuming a run that stopped: the lookups it already recorded, and the check that this dataset and
configuration are the ones it was started with."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from retrieval import LookupConfig, TraceStore

from .datasets import Dataset
from .storage import COMPLETE, RUNNING, load_run_row


@dataclass(frozen=True)
class Recorded:
    """A lookup an interrupted run already recorded: what its query row and metrics need."""

    invocation_id: str
    latency_ms: float
    details: dict[str, Any]

    @property
    def ranked(self) -> list[str]:
        return list(self.details.get("evidence_sources") or [])


def resumable(store: TraceStore, text: str, dataset: Dataset,
              config: LookupConfig) -> tuple[str, datetime, dict[str, Recorded]]:
    """The id, start time and recorded lookups of an incomplete run that this dataset and config can finish."""
    row = load_run_row(store, text, allow_incomplete=True)
    run_id = row["run_id"]
    if row["status"] in (COMPLETE, RUNNING):
        raise ValueError(f"run {run_id} is {row['status']}; only an incomplete run can be resumed")
    wanted = json.loads(json.dumps(config.to_dict(), default=str))
    changed = sorted(k for k in set(wanted) | set(row["config"] or {}) if wanted.get(k) != (row["config"] or {}).get(k))
    theirs = (row["dataset"], row["split"], int(row["n_queries"]))
    ours = (dataset.name, dataset.split, len(dataset.queries))
    if changed or theirs != ours:
        raise ValueError(f"run {run_id} was started on {theirs} with other settings ({', '.join(changed) or 'none'}) "
                         f"than this resume on {ours}; pass the same dataset flags and --set values")
    frame = store.query("SELECT query_id, id, latency_ms, retrieval_details FROM tool_invocation "
                        "WHERE run_id = ? AND status = 'ok' AND query_id IS NOT NULL", [run_id])
    done = {q: Recorded(i, float(ms), json.loads(d)) for q, i, ms, d in frame.itertuples(index=False)}
    created = pd.Timestamp(row["created_at"]).to_pydatetime().replace(tzinfo=timezone.utc)
    return run_id, created, done
