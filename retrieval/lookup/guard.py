"""Guards around one L1 call: a time limit, and a check of everything L1 returns.

The orchestrator trusts L1 only through these: a result of the wrong type or with a non-finite score
is an L1 failure (falls back to L0, never claims semantic support), and a call past `l1_timeout_ms`
is abandoned (status `timeout`). The abandoned call keeps running in its daemon thread; its result
is dropped, and the thread serves later calls once it is free.
"""

from __future__ import annotations

import math
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

from retrieval.l1.results import L1Candidate, L1Result


class L1Timeout(TimeoutError):
    """L1 did not answer within `l1_timeout_ms`."""


class L1BadResult(TypeError):
    """L1 returned something other than an L1Result of L1Candidates with finite scores."""


@dataclass(frozen=True)
class GuardedCall:
    """What one guarded L1 call gave: a checked result, or the error that stands for it."""

    result: L1Result | None = None
    error: Exception | None = None

    @property
    def timed_out(self) -> bool:
        return isinstance(self.error, L1Timeout)


def guarded_search(search: Callable[[], Any], timeout_ms: float,
                   quick: Callable[[], Any] | None = None) -> GuardedCall:
    """Run `search()` on an idle worker thread and check its result; never raises, never waits past
    `timeout_ms`. A worker is reused once its call ends (a fresh thread per call cost ~0.2-2 ms).
    `quick()`, when given, runs first in the caller's thread: an answer L1 already holds (no scoring, so no
    time limit needed), or None to search; it is checked and caught like the search."""
    if quick is not None:
        job = _Job(quick, optional=True)
        job.run()
        if job.call.error is not None or job.call.result is not None:
            return job.call
    job = _Job(search)
    _idle_worker().jobs.put(job)
    if not job.done.wait(timeout_ms / 1000.0):
        return GuardedCall(error=L1Timeout(f"L1 did not answer within {timeout_ms:g} ms (l1_timeout_ms)"))
    return job.call


def time_limited(work: Callable[[], Any], timeout_ms: float, check: Callable[[Any], Any],
                 timeout: Callable[[], Exception]) -> GuardedCall:
    """`work()` on an idle worker thread, its result passed through `check`; never raises, never waits past
    `timeout_ms` (then the error is `timeout()`). The reranker's guard: the same workers as L1's, so a call
    abandoned past its budget never holds up the next one."""
    job = _Job(work, check=check)
    _idle_worker().jobs.put(job)
    if not job.done.wait(timeout_ms / 1000.0):
        return GuardedCall(error=timeout())
    return job.call


class _Job:
    """One L1 call handed to a worker: the work, and the event set when `call` is filled."""

    def __init__(self, search: Callable[[], Any], *, optional: bool = False,
                 check: Callable[[Any], Any] | None = None) -> None:
        self.search = search
        self.optional = optional  # None is "no answer", not a bad result
        self.check = check or validated
        self.done = threading.Event()
        self.call = GuardedCall()

    def run(self) -> None:
        try:  # the one broad catch: any L1 failure falls back to L0 evidence, recorded with its cause
            result = self.search()
            self.call = GuardedCall(result=None if result is None and self.optional else self.check(result))
        except Exception as exc:  # noqa: BLE001
            self.call = GuardedCall(error=exc)
        self.done.set()


class _Worker:
    """A daemon thread running jobs one at a time; it offers itself back to the idle list after each."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="l1-search", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self.jobs.get().run()
            with _IDLE_LOCK:
                if len(_IDLE) >= MAX_IDLE_WORKERS:
                    return
                _IDLE.append(self)


MAX_IDLE_WORKERS = 8
_IDLE: list[_Worker] = []
_IDLE_LOCK = threading.Lock()


def _forget_workers_after_fork() -> None:
    """A forked child has none of its parent's threads: an idle worker it inherited would never run a job, and
    every L1 call would wait out its time limit (a forked trace writer fell back to L0 after 1-2 s a lookup)."""
    global _IDLE_LOCK
    _IDLE.clear()
    _IDLE_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers_after_fork)


def _idle_worker() -> _Worker:
    """A worker with nothing to do: a returning one, or a new one when all are busy (or stuck past a timeout)."""
    with _IDLE_LOCK:
        if _IDLE:
            return _IDLE.pop()
    return _Worker()


def validated(result: Any) -> L1Result:
    """`result` if it is a well-formed L1Result with finite scores; else L1BadResult naming the problem."""
    if not isinstance(result, L1Result):
        raise L1BadResult(f"L1 returned {type(result).__name__}, not L1Result")
    if not isinstance(result.candidates, (tuple, list)):
        raise L1BadResult(f"L1Result.candidates is {type(result.candidates).__name__}, not a tuple")
    for number, candidate in enumerate(result.candidates):
        if _plainly_valid(candidate):
            continue
        if not isinstance(candidate, L1Candidate):
            raise L1BadResult(f"L1 candidate {number} is {type(candidate).__name__}, not L1Candidate")
        for name in ("score", "lexical_score", "lsa_score", "page_score"):
            value = getattr(candidate, name)
            if value is None and name == "lsa_score":
                continue
            if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
                raise L1BadResult(f"L1 candidate {number} has a non-finite or non-numeric {name}: {value!r}")
    for name in ("rows_searched", "dropped_below_min_score"):
        value = getattr(result, name)
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
            raise L1BadResult(f"L1Result.{name} must be a count, got {value!r}")
    return result


def _plainly_valid(candidate: Any) -> bool:
    """The usual case in one test (an L1Candidate of finite floats): checking ~90 candidates field by field
    through the numbers ABC cost a quarter of a millisecond per search. False sends it to the full check."""
    if type(candidate) is not L1Candidate:
        return False
    score, lexical, lsa, page = candidate.score, candidate.lexical_score, candidate.lsa_score, candidate.page_score
    return (type(score) is float and type(lexical) is float and type(page) is float
            and (lsa is None or type(lsa) is float) and math.isfinite(score + lexical + page + (lsa or 0.0)))
