"""L1's build stages, and how a build reports a stage: `progress(stage, fraction)` with 0.0 first, then
non-decreasing fractions, then 1.0 (retrieval/index/progress.py orders every stage of a build and weighs them).
Counting terms reports chunks vectorised, the SVD its power-iteration steps, the projection its blocks of chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

Progress = Callable[[str, float], None]
T = TypeVar("T")

VECTORISING = "L1: vectorising chunks"
WEIGHTING = "L1: counting and weighting terms"
SVD = "L1: SVD fit (power iterations)"
PROJECTING = "L1: projecting chunks"
REPORTS = 100  # reports per counted stage, at most


def report(progress: Progress | None, stage: str, fraction: float) -> None:
    if progress is not None:
        progress(stage, fraction)


def counted(items: Iterable[T], total: int, progress: Progress | None, stage: str, *,
            then: str | None = None) -> Iterator[T]:
    """`items` unchanged, reporting `stage` at 0.0, about every 1% of `total` and 1.0 when they run out; then
    `then` at 0.0, the stage whose work starts as soon as the consumer has them all."""
    report(progress, stage, 0.0)
    every = max(1, total // REPORTS)
    done = 0
    for done, item in enumerate(items, start=1):
        yield item
        if progress is not None and done % every == 0 and done < total:
            progress(stage, done / total)
    report(progress, stage, 1.0)
    if then is not None:
        report(progress, then, 0.0)
