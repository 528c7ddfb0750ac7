"""Progress of an index build: named stages, each reported as a fraction from 0.0 to 1.0.

A build calls `progress(stage, fraction)`: for every stage it enters, 0.0 first, then non-decreasing
fractions, then 1.0. Counting terms reports chunks vectorised, the SVD its power-iteration steps, the
projection its blocks of chunks; the other stages report their start and end. Reporting never changes
what is built (the callback only receives numbers) nor the cache key.

`STAGES` weighs each stage by its share of a build's time (measured on 100k real-text chunks), so a
caller can turn (stage, fraction) into one overall fraction and an estimate (`overall`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

Progress = Callable[[str, float], None]
T = TypeVar("T")

HASHING = "hashing the knowledge base"
READING = "reading the knowledge base"
L0 = "L0: BM25 over titles, keywords, categories, entities"
VECTORISING = "L1: vectorising chunks"
WEIGHTING = "L1: counting and weighting terms"
SVD = "L1: SVD fit (power iterations)"
PROJECTING = "L1: projecting chunks"
CACHING = "writing the index cache"
CACHED = "loaded from cache"
# each stage's share of a large build's time, as measured by bench/run.py (docs/benchmarks.md)
STAGES: tuple[tuple[str, float], ...] = ((HASHING, 0.01), (READING, 0.17), (L0, 0.02), (VECTORISING, 0.30),
                                         (WEIGHTING, 0.33), (SVD, 0.12), (PROJECTING, 0.02), (CACHING, 0.03))
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


def overall(stage: str, fraction: float) -> float:
    """The build's overall fraction after `fraction` of `stage`, by the STAGES weights (1.0 for a cache hit;
    an unknown stage counts as the start)."""
    if stage == CACHED:
        return 1.0
    weights = dict(STAGES)
    if stage not in weights:
        return 0.0
    before = sum(w for name, w in STAGES[:[n for n, _ in STAGES].index(stage)])
    total = sum(weights.values())
    return min(1.0, (before + weights[stage] * min(max(fraction, 0.0), 1.0)) / total)
