"""The index-build progress bar: the build's stage, its real fraction (chunks vectorised, SVD steps, blocks
projected), the overall fraction by the stages' weights, and an estimate of the time left (elapsed /
overall fraction), plus the seconds each stage took, for the caption under the finished build.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from retrieval.index import BUILD_STAGES, build_share

ESTIMATE_AFTER = 0.03  # no estimate before this overall fraction: the first stages say little of the rest


@dataclass(frozen=True)
class BuildStatus:
    """What the bar shows: the overall fraction and its text."""

    overall: float
    text: str


def describe(label: str, stage: str, fraction: float, elapsed: float) -> BuildStatus:
    """'Indexing kb: L1: SVD fit (power iterations) 50% · stage 6 of 8 · 3.1 s, about 2.4 s left'."""
    overall = build_share(stage, fraction)
    names = [name for name, _ in BUILD_STAGES]
    where = f" · stage {names.index(stage) + 1} of {len(names)}" if stage in names else ""
    if overall >= 1.0:
        estimate = f"{elapsed:.1f} s"
    elif overall >= ESTIMATE_AFTER:
        estimate = f"{elapsed:.1f} s, about {elapsed / overall - elapsed:.1f} s left"
    else:
        estimate = f"{elapsed:.1f} s, estimating the time left"
    return BuildStatus(overall, f"Indexing {label}: {stage} {fraction:.0%}{where} · {estimate}")


class BuildBar:
    """A `progress(stage, fraction)` callback drawing into a Streamlit placeholder; keeps each stage's seconds."""

    def __init__(self, placeholder: Any, label: str, clock: Callable[[], float] = time.perf_counter) -> None:
        self._placeholder, self._label, self._clock = placeholder, label, clock
        self._started = clock()
        self._entered: dict[str, float] = {}
        self.seconds: dict[str, float] = {}

    def __call__(self, stage: str, fraction: float) -> None:
        now = self._clock()
        self._entered.setdefault(stage, now)
        if fraction >= 1.0:
            self.seconds[stage] = now - self._entered[stage]
        status = describe(self._label, stage, fraction, now - self._started)
        self._placeholder.progress(min(max(status.overall, 0.0), 1.0), text=status.text)


def stage_summary(seconds: dict[str, float]) -> str:
    """'reading the knowledge base 0.1 s · L1: SVD fit (power iterations) 0.8 s · …' in build order."""
    return " · ".join(f"{stage} {value:.1f} s" for stage, value in seconds.items())
