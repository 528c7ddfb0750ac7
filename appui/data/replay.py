"""Replay: recorded lookups (interactive calls, or a run's) looked up again under configuration B, with what
changed per call — filter decision, layer, primary, blocks gained and lost — and no labels needed.

The replayed calls go through `lookup_knowledge` like any other; recorded, they form a run whose
`run_id` starts with `replay-` and whose `query_id` is the original run's query id (a run's lookups) or the
original call's id (interactive lookups); eval.replays stores that run as an evaluation run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from retrieval import TRACE_TABLE as TABLE
from retrieval import KnowledgeIndex, LookupConfig, TraceStore, lookup_knowledge
from retrieval.export import json_object

PREFIX = "replay-"


@dataclass(frozen=True)
class ReplayDiff:
    """One recorded call against its replay under B."""

    original_id: str
    query: str
    decision: tuple[str | None, str | None]
    layer: tuple[str | None, str | None]
    primary: tuple[str | None, str | None]
    gained: tuple[str, ...]
    lost: tuple[str, ...]
    replay_id: str | None

    @property
    def changed(self) -> bool:
        """Whether the results changed: another primary block, or blocks gained or lost."""
        return self.primary[0] != self.primary[1] or bool(self.gained) or bool(self.lost)

    @property
    def labels_only(self) -> bool:
        """Whether only labels changed (the filter decision or the layer) while the results stayed the same,
        e.g. `skipped_ambiguous → disabled` with the same blocks."""
        return not self.changed and (self.decision[0] != self.decision[1] or self.layer[0] != self.layer[1])

    def to_row(self) -> dict[str, Any]:
        def arrow(pair: tuple[Any, Any]) -> str:
            return f"{pair[0]} → {pair[1]}" if pair[0] != pair[1] else str(pair[0])

        return {"query": self.query, "changed": self.changed, "labels only": self.labels_only,
                "filter": arrow(self.decision),
                "layer": arrow(self.layer), "primary": arrow(self.primary), "gained": ", ".join(self.gained),
                "lost": ", ".join(self.lost), "original_id": self.original_id, "replay_id": self.replay_id}


def new_run_id() -> str:
    return f"{PREFIX}{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def recorded_calls(store: TraceStore, *, run_id: str | None = None, text: str = "", limit: int = 20) -> pd.DataFrame:
    """Successful recorded calls, newest first: interactive ones (optionally whose query contains `text`),
    or those of one run. Every row spooled so far is drained first (the store's flush drains the shared spool,
    everyone's rows): a read only shows this store's own rows at once, and a replay, which records, is
    asked for the newest calls, such as those of a writer that is gone (its rows wait for the keeper)."""
    if limit < 1:
        raise ValueError(f"replay at least one call, got {limit}")
    store.flush()
    where, params = ["status = 'ok'"], []
    if run_id:
        where.append("run_id = ?")
        params.append(run_id)
    else:
        where.append("run_id IS NULL")
        if text.strip():
            where.append("query ILIKE ?")
            params.append(f"%{text.strip()}%")
    return store.query(f"SELECT id, query, query_id, latency_ms, config, arguments, retrieval_details, "
                       f"kb_fingerprint FROM {TABLE} WHERE "
                       f"{' AND '.join(where)} ORDER BY created_at DESC, id LIMIT {int(limit)}", params)


def on_this_base(calls: pd.DataFrame, fingerprint: str, *,
                 include_others: bool = False) -> tuple[pd.DataFrame, str | None]:
    """The calls recorded on the knowledge base of `fingerprint` (calls that recorded none count as this one's),
    and a sentence on those left out (or, with `include_others`, replayed anyway); None when there were none.
    A call replayed on another base than its own changes because the pages did, not because of B."""
    other = calls["kb_fingerprint"].notna() & (calls["kb_fingerprint"] != fingerprint)
    count = int(other.sum())
    if not count:
        return calls, None
    if include_others:
        return calls, (f"{count} of these {len(calls)} calls were recorded on another knowledge base and were "
                       "replayed on this one: their changes may come from the pages, not from B")
    return (calls[~other].reset_index(drop=True),
            f"{count} of {len(calls)} calls were recorded on another knowledge base and were left out (replayed "
            "here, their changes would be the pages', not B's); turn on \"Include calls recorded on another "
            "knowledge base\" to replay them")


def replay(calls: pd.DataFrame, *, index: KnowledgeIndex, config: LookupConfig, store: TraceStore | None,
           run_id: str, progress: Callable[[int, int], None] | None = None) -> list[ReplayDiff]:
    """Each call looked up again under `config` (recorded in `store` under `run_id`, in one write, when given)."""
    from eval.replays import paired_query_id  # eval/ loads only when a replay runs

    out, recorded = [], []
    for done, row in enumerate(calls.itertuples(index=False), start=1):
        arguments = json_object(row.arguments)
        result = lookup_knowledge(row.query, index=index, config=config, category=arguments.get("category"),
                                  top_k=arguments.get("top_k"), recorder=recorded.append, run_id=run_id,
                                  query_id=paired_query_id(row.id, row.query_id))
        out.append(diff(row.id, row.query, json_object(row.retrieval_details), result.retrieval_details,
                        result.invocation_id if store is not None else None))
        if progress is not None:
            progress(done, len(calls))
    if store is not None:
        store.record_many(recorded)
    return out


def diff(original_id: str, query: str, a: dict[str, Any], b: dict[str, Any], replay_id: str | None) -> ReplayDiff:
    """What changed from the recorded details `a` to the replayed details `b`."""
    sources_a, sources_b = _sources(a), _sources(b)
    return ReplayDiff(original_id, query, ((a.get("filter") or {}).get("decision"),
                                           (b.get("filter") or {}).get("decision")),
                      (a.get("retrieval_layer"), b.get("retrieval_layer")),
                      (sources_a[0] if sources_a else None, sources_b[0] if sources_b else None),
                      tuple(s for s in sources_b if s not in sources_a),
                      tuple(s for s in sources_a if s not in sources_b), replay_id)


def _sources(details: dict[str, Any]) -> list[str]:
    return list(details.get("evidence_sources") or [e["source"] for e in details.get("evidence") or []])
