"""Why a fanned-out run stopped (light to import: the CLI names these errors without loading the fan-out)."""

from __future__ import annotations


class WorkerDied(RuntimeError):
    """A worker process died while it held shards (SIGKILL, out of memory, a crash)."""


class ShardsFailed(RuntimeError):
    """Shards of a run did not finish; the run is stored as `incomplete` and `--resume` finishes it."""
