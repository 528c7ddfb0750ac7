"""A shard of a run, and what a worker process does with it: the lookups of some questions, scored.

A `Shard` names the index by where to open it (`IndexSource`: the knowledge base, its exclusions, the
LSA dimensions and the cache folder), never holds it: each worker opens an index once, from the on-disk
cache (memory-mapped, so the workers of one host share its pages), and keeps it for the shards after. The
worker looks up every question the run has not recorded yet through the one core (`lookup_knowledge`,
with the run and query ids), scores it, looks it up again with its true category when the run measures
the oracle filter, and returns the rows the serial path would have made for these questions
(`ShardResult`); the parent merges them in question order. Recorded lookups go either to the trace file's
spool (a local worker: every `batch_size` lookups or SPOOL_AGE seconds, as in a serial run, so a killed
worker keeps every acknowledged row) or, on a host that cannot reach the trace file, to a Parquet part
per shard (retrieval.traces.write_part).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from retrieval import KnowledgeIndex, LookupConfig, ToolInvocation, TraceWriter, lookup_knowledge
from retrieval.index import open_index
from retrieval.lookup import library_versions
from retrieval.traces import write_part

from .. import metrics as metric_lib
from .. import oracle as oracle_lib
from ..attribution import relevant_stages
from ..datasets import Query
from ..resume import Recorded
from ..scoring import query_row
from ..storage import LOOKUP
from .ticks import Ticker

SPOOL_AGE = 0.25  # seconds, as eval.runs: the trace file follows the workers as it follows a serial run
KEEP_INDEXES = 4  # indexes a worker keeps open (a sweep over svd_dims opens one per value)


@dataclass(frozen=True)
class IndexSource:
    """Where a worker opens the run's index: the same arguments give the same cache key everywhere."""

    kb_path: str
    svd_dims: int
    exclude_fields: tuple[str, ...] = ()
    exclude_paths: tuple[str, ...] = ()
    cache_dir: str | None = None  # None: the worker's own ($LOOKUP_KNOWLEDGE_CACHE or ~/.cache/lookup-knowledge)


@dataclass(frozen=True)
class TraceSink:
    """Where a worker's recorded lookups go: the trace file's spool (`trace_file`) or Parquet parts under
    `parts_dir` (hive-partitioned by run)."""

    trace_file: str | None = None
    parts_dir: str | None = None


@dataclass(frozen=True)
class ShardItem:
    """One question of a shard: its position in the dataset, and its lookup if the run recorded it already."""

    position: int
    query: Query
    recorded: Recorded | None = None


@dataclass(frozen=True)
class Shard:
    """Some questions of one run, and everything a worker needs to look them up and score them."""

    run_id: str
    number: int
    source: IndexSource
    config: LookupConfig
    metric_names: tuple[str, ...]
    items: tuple[ShardItem, ...]
    oracle: bool
    sink: TraceSink
    batch_size: int = 200
    ticks: str | None = None  # a local run's progress file (eval.parallel.ticks): one byte per finished question
    cutoff: int | None = None  # the primary metric's cut-off: each relevant page gets its stage (None: off)


@dataclass(frozen=True)
class ShardResult:
    """A shard's rows as the serial path makes them: per-question rows, lookup and oracle metric rows, how
    many lookups it ran (the others were recorded before), which worker ran it (`host:pid`) and the worker's
    library versions (retrieval.lookup.provenance.library_versions: on a Dask cluster they may not be the parent's)."""

    run_id: str
    number: int
    rows: list[dict[str, Any]]
    lookup_metrics: list[tuple]
    oracle_metrics: list[tuple]
    looked_up: int
    worker: str
    library_versions: dict[str, str | None] | None = None


_OPENED: dict[IndexSource, KnowledgeIndex] = {}


def run_shard(shard: Shard) -> ShardResult:
    """Look up, score and record one shard's questions (called in a worker process)."""
    index = worker_index(shard.source)
    parsed = metric_lib.parse_metrics(shard.metric_names)
    config, run_id = shard.config, shard.run_id
    sink, ticker = _Sink(shard), Ticker(shard.ticks)
    rows, lookup_metrics, looked_up = [], [], 0
    try:
        for item in shard.items:
            query, recorded, result = item.query, item.recorded, None
            if recorded is None:
                result = lookup_knowledge(query.text, index=index, config=config, top_k=config.top_k,
                                          recorder=sink.buffer.append, run_id=run_id, query_id=query.id)
                recorded = Recorded(result.invocation_id, sink.buffer[-1].latency_ms, result.retrieval_details)
                looked_up += 1
                sink.maybe_spool()
            rows.append(query_row(query, item.position, recorded.invocation_id, recorded.ranked, recorded.details,
                                  recorded.latency_ms, index, parsed))
            if shard.cutoff is not None:  # as the serial path (eval.runs): the lookup itself is explained
                rows[-1]["relevant_stages"] = relevant_stages(query, result, index=index, config=config,
                                                              cutoff=shard.cutoff)
            if query.answerable:  # as the serial path: an unanswerable question has no rank metric
                lookup_metrics.extend((run_id, query.id, LOOKUP, name, value)
                                      for name, value in metric_lib.score(recorded.ranked, query.qrels, parsed).items())
            ticker.tick()
    finally:
        ticker.close()
        sink.close()
    for row in rows:
        row["run_id"] = run_id
    oracle_metrics: list[tuple] = []
    if shard.oracle:
        categories = {row["query_id"]: oracle_lib.true_category(row["categories"]) for row in rows}
        oracle_metrics = oracle_lib.oracle_lookups([item.query for item in shard.items], categories, index=index,
                                                   config=config, parsed=parsed, run_id=run_id)
    return ShardResult(run_id, shard.number, rows, lookup_metrics, oracle_metrics, looked_up, worker_name(),
                       library_versions())


def worker_index(source: IndexSource) -> KnowledgeIndex:
    """The index `source` names, opened from the on-disk cache (built there if missing) once per process."""
    index = _OPENED.get(source)
    if index is None:
        while len(_OPENED) >= KEEP_INDEXES:
            _OPENED.pop(next(iter(_OPENED)))
        index = open_index(source.kb_path, svd_dims=source.svd_dims, exclude_fields=source.exclude_fields,
                           exclude_paths=source.exclude_paths, cache_dir=source.cache_dir)
        _OPENED[source] = index
    return index


def worker_name() -> str:
    """This process as `host:pid`, as a shard's result names the worker that ran it."""
    return f"{socket.gethostname()}:{os.getpid()}"


class _Sink:
    """A shard's recorded lookups on their way out: spooled as a serial run spools them, or one Parquet part."""

    def __init__(self, shard: Shard) -> None:
        self.shard, self.buffer = shard, []
        self.buffered_at = time.monotonic()
        self.kept: list[ToolInvocation] = []
        self.writer = (TraceWriter(shard.sink.trace_file, open_now=False, background=False)
                       if shard.sink.trace_file else None)

    def maybe_spool(self) -> None:
        if self.writer is None:
            return
        if len(self.buffer) >= self.shard.batch_size or time.monotonic() - self.buffered_at >= SPOOL_AGE:
            self.writer.record_many(self.buffer)
            self.buffer.clear()
            self.buffered_at = time.monotonic()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.record_many(self.buffer)
            self.writer.detach()
        elif self.shard.sink.parts_dir and self.buffer:
            name = f"part-{self.shard.number:05d}-{worker_name().replace(':', '-')}-{time.time_ns():x}"
            write_part(self.buffer, self.shard.sink.parts_dir, self.shard.run_id, name)
        self.buffer.clear()
