"""Progress of an index build: named stages, each reported as a fraction from 0.0 to 1.0.

A build calls `progress(stage, fraction)`: for every stage it enters, 0.0 first, then non-decreasing
fractions, then 1.0. Counting terms reports chunks vectorised, the SVD its power-iteration steps, the
projection its blocks of chunks; the other stages report their start and end. Reporting never changes
what is built (the callback only receives numbers) nor the cache key.

`STAGES` weighs each stage by its share of a build's time (measured on 100k real-text chunks), so a
caller can turn (stage, fraction) into one overall fraction and an estimate (`overall`).
"""

from __future__ import annotations

from retrieval.l1.stages import PROJECTING, SVD, VECTORISING, WEIGHTING, Progress, counted, report

HASHING = "hashing the knowledge base"
READING = "reading the knowledge base"
L0 = "L0: BM25 over titles, keywords, categories, entities"
CACHING = "writing the index cache"
CACHED = "loaded from cache"
# each stage's share of a large build's time, as measured by bench/run.py (docs/benchmarks.md)
STAGES: tuple[tuple[str, float], ...] = ((HASHING, 0.01), (READING, 0.17), (L0, 0.02), (VECTORISING, 0.30),
                                         (WEIGHTING, 0.33), (SVD, 0.12), (PROJECTING, 0.02), (CACHING, 0.03))
__all__ = ["CACHED", "CACHING", "HASHING", "L0", "PROJECTING", "READING", "STAGES", "SVD", "VECTORISING",
           "WEIGHTING", "Progress", "counted", "overall", "report"]


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
