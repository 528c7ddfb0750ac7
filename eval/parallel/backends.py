"""Running shards on a pool, with one code path for both kinds: joblib's `Parallel`, on its `loky` backend
(local worker processes, started fresh and kept for the next call) or on its `dask` backend (the workers of
an existing `distributed` cluster). Results come back as shards finish, in any order.

A local worker that dies (SIGKILL, out of memory) breaks loky's pool: the shards not returned yet are lost
and `WorkerDied` is raised. On Dask the scheduler first retries a dead worker's task elsewhere; a task that
killed its workers too often (`KilledWorker`) is raised as `WorkerDied` too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import joblib

from ..failures import WorkerDied
from .pool import Pool
from .shards import Shard, ShardResult, run_shard

CONNECT_TIMEOUT = 10  # seconds to reach a Dask scheduler


class Runner:
    """An open pool: how many shards it runs at once, and `map` to run them."""

    def __init__(self, pool: Pool, size: int, client: object | None = None) -> None:
        self.pool, self.size, self.client = pool, size, client

    def map(self, shards: Sequence[Shard]) -> Iterator[ShardResult]:
        """Every shard's result as it finishes; dispatch starts at this call, so the caller can work meanwhile."""
        backend = "dask" if self.client is not None else "loky"
        params = {"client": self.client} if self.client is not None else {}
        with joblib.parallel_config(backend=backend, **params):
            parallel = joblib.Parallel(n_jobs=self.size, return_as="generator_unordered", batch_size=1,
                                       pre_dispatch="all")
            results = parallel(joblib.delayed(run_shard)(shard) for shard in shards)
        return _translated(results)


@contextmanager
def open_runner(pool: Pool) -> Iterator[Runner]:
    """A Runner for `pool`: loky's processes, or a client of the Dask scheduler (closed at the end)."""
    if pool.dask is None:
        yield Runner(pool, pool.workers)
        return
    client = _dask_client(pool.dask)
    try:
        size = sum(client.nthreads().values())
        if not size:
            raise ValueError(f"the Dask scheduler at {pool.dask} has no workers; start some with "
                             f"`dask worker {pool.dask}` on each host")
        yield Runner(pool, size, client)
    finally:
        client.close()


def _dask_client(address: str) -> object:
    try:
        from distributed import Client
    except ImportError:
        raise ValueError("--dask needs the `distributed` package: pip install 'lookup-knowledge[dask]'") from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"cannot reach a Dask scheduler at {address} within {CONNECT_TIMEOUT} s ({exc}); start "
                         f"one with `dask scheduler` and pass the address it prints") from None


def _deaths() -> tuple[type[BaseException], ...]:
    """The exceptions that say a worker process died: loky's, the standard pool's and Dask's."""
    from concurrent.futures.process import BrokenProcessPool

    from joblib.externals.loky.process_executor import TerminatedWorkerError

    kinds: list[type[BaseException]] = [TerminatedWorkerError, BrokenProcessPool]
    try:
        from distributed import KilledWorker
    except ImportError:
        pass
    else:
        kinds.append(KilledWorker)
    return tuple(kinds)


def _translated(results: Iterator[ShardResult]) -> Iterator[ShardResult]:
    """`results`, with a worker's death raised as WorkerDied (saying how it died)."""
    try:
        yield from results
    except _deaths() as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise WorkerDied(f"a worker process died ({type(exc).__name__}: {first})") from exc
