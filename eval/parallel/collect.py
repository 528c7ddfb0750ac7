"""Loading a Dask run's trace rows into the trace file: the Parquet parts its workers wrote, hive-partitioned
by run under the parts folder (`<trace file>.parts/run_id=<run>/*.parquet` unless `--parts DIR`).

The parent of a Dask run loads them when the run's last shard is back; `python -m eval collect RUN_ID` loads
them later, on a host that sees the folder (where the parent did not). Loading twice stores nothing twice.
A finished run loads only the lookups it scored (its `eval_query.invocation_id`s): a task that a dead Dask
worker left half done, and the scheduler ran again, wrote the same questions' first attempt too.
DuckDB, Spark or Trino can read the parts where they are, without the trace file.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection
from pathlib import Path

from retrieval import TraceStore
from retrieval.traces import LoadedParts, load_parts

from ..storage import resolve_run_id


class TracePartsMissingWarning(UserWarning):
    """Lookups of a Dask run whose Parquet parts this host cannot see (yet); `eval collect` loads them later."""


def parts_dir_of(store: TraceStore) -> Path:
    """The default parts folder of a trace file: `<trace file>.parts` beside it."""
    return store.path.with_name(store.path.name + ".parts")


def collect_parts(store: TraceStore, run_id: str, parts_dir: str | Path,
                  expected: Collection[str] | None = None) -> LoadedParts:
    """Load `run_id`'s parts under `parts_dir` into the trace file; warn when `expected` invocation ids are
    still not in it (the parts are on a folder this host does not see)."""
    loaded = load_parts(store, parts_dir, run_id, only=expected or None)
    if expected:
        stored = set(store.query("SELECT id FROM tool_invocation WHERE run_id = ?", [run_id])["id"])
        missing = set(expected) - stored
        if missing:
            warnings.warn(f"{len(missing)} of {len(expected)} lookups of run {run_id} are not in {store.path}: their "
                          f"Parquet parts are not under {parts_dir} on this host; run `python -m eval collect "
                          f"{run_id} --parts DIR` where the workers' parts folder is", TracePartsMissingWarning,
                          stacklevel=2)
    return loaded


def collect_run(store: TraceStore, run: str, parts_dir: str | Path | None = None) -> LoadedParts:
    """`python -m eval collect RUN_ID`: the run (an id or unique prefix) must be known to the trace file."""
    run_id = resolve_run_id(store, run)
    folder = Path(parts_dir) if parts_dir else parts_dir_of(store)
    if not folder.is_dir():
        raise ValueError(f"no parts folder {folder}; pass --parts DIR with the folder the Dask workers wrote "
                         f"their Parquet parts to")
    return load_parts(store, folder, run_id, only=_scored(store, run_id))


def _scored(store: TraceStore, run_id: str) -> set[str] | None:
    """The invocation ids a stored run scored; None while it has none stored (an incomplete run: load all)."""
    ids = store.query("SELECT invocation_id FROM eval_query WHERE run_id = ? AND invocation_id IS NOT NULL",
                      [run_id])["invocation_id"]
    return set(ids) or None
