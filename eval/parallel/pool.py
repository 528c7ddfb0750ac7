"""Where a run's lookups happen: in this process (serial), in N local worker processes, or on a Dask cluster.

Light to import (no joblib, no dask): the CLI parses and checks `--workers` and `--dask` with it before any
work, and a serial run never loads the fan-out's modules.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

DASK_ADDRESS = re.compile(r"(?:(tcp|tls|inproc|ucx|ws|wss)://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+)(?::(\d{1,5}))?")
DASK_SCHEMES = ("tcp", "tls", "ucx", "ws", "wss")


@dataclass(frozen=True)
class Pool:
    """`workers` local processes, or the Dask scheduler at `dask` (then its workers' threads)."""

    workers: int = 1
    dask: str | None = None

    @property
    def serial(self) -> bool:
        return self.dask is None and self.workers == 1


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def parse_workers(text: str | int) -> int:
    """`--workers N|auto` as a count: a positive integer, or `auto` for the cores available."""
    value = str(text).strip().lower()
    if value == "auto":
        return available_cores()
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"--workers must be a positive whole number or auto (the {available_cores()} cores "
                         f"available here), got {text!r}; --workers 1 runs the lookups in this process")
    return int(value)


def dask_address(text: str) -> str:
    """A Dask scheduler address as `distributed` takes it (`tcp://host:8786`); a malformed one is a ValueError
    saying the expected shape."""
    value = str(text).strip()
    match = DASK_ADDRESS.fullmatch(value)
    scheme = (match.group(1) if match else None) or "tcp"
    if match is None or scheme not in DASK_SCHEMES or (match.group(3) and not 0 < int(match.group(3)) < 65536):
        raise ValueError(f"--dask takes a Dask scheduler address such as tcp://10.0.0.5:8786 (what `dask "
                         f"scheduler` prints as 'Scheduler at:'), got {text!r}")
    port = match.group(3) or "8786"
    return f"{scheme}://{match.group(2)}:{port}"


def pool_of(workers: str | int | None, dask: str | None) -> Pool:
    """The pool `--workers` and `--dask` ask for; both at once is a ValueError (a Dask run uses every worker
    thread of the cluster)."""
    if dask is not None and workers not in (None, "1", 1):
        raise ValueError("give --workers N or --dask ADDRESS, not both: a Dask run uses every thread of the "
                         "cluster's workers (start them with `dask worker ADDRESS --nthreads N`)")
    if dask is not None:
        return Pool(dask=dask_address(dask))
    return Pool(workers=parse_workers(workers if workers is not None else 1))
