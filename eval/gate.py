"""The regression gate: `python -m eval compare A B --fail-on-regression ndcg@10:0.01` exits 1 when run B is worse
than run A on a metric by more than its tolerance and the difference is significant (the paired randomisation
test at p < SIGNIFICANCE, as the Compare page says it), so a CI step can stop a change that really lost quality
and let noise through."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .compare import SIGNIFICANCE, Comparison


@dataclass(frozen=True)
class Tolerance:
    """A metric and how much B may lose on it (absolute, in the metric's units)."""

    metric: str
    tolerance: float


class RegressionFound(RuntimeError):
    """B regressed beyond a tolerance; `output` is the comparison as it was to be printed."""

    def __init__(self, message: str, output: str | bytes) -> None:
        super().__init__(message)
        self.output = output


def parse_tolerances(items: Sequence[str]) -> list[Tolerance]:
    """`["ndcg@10:0.01", "mrr@10:0"]` as tolerances; ValueError naming the item and the form otherwise."""
    found = []
    for item in items:
        metric, sep, amount = str(item).partition(":")
        try:
            tolerance = float(amount) if sep else float("nan")
        except ValueError:
            tolerance = float("nan")
        if not metric.strip() or tolerance != tolerance or tolerance < 0:
            raise ValueError(f"--fail-on-regression expects METRIC:TOLERANCE with a tolerance of 0 or more, got "
                             f"{item!r} (e.g. ndcg@10:0.01)")
        found.append(Tolerance(metric.strip(), tolerance))
    return found


def regressions(comparison: Comparison, tolerances: Sequence[Tolerance]) -> list[str]:
    """One sentence per metric on which B lost more than its tolerance, significantly; a metric the comparison
    does not hold is an error (ValueError), not a pass."""
    said = []
    for tolerance in tolerances:
        stats: Mapping[str, Any] | None = comparison.metrics.get(tolerance.metric)
        if stats is None:
            raise ValueError(f"--fail-on-regression names {tolerance.metric}, which the comparison does not hold; "
                             f"it holds {', '.join(comparison.metrics)} (pass --metrics to add it)")
        delta, p = float(stats["delta"]), stats.get("p_randomization")
        if delta < -tolerance.tolerance and p is not None and p < SIGNIFICANCE:
            said.append(f"{tolerance.metric}: B is {-delta:.4f} below A (tolerance {tolerance.tolerance:g}), "
                        f"significant (p = {p:.3g} < {SIGNIFICANCE}); mean A {stats['mean_a']} → B {stats['mean_b']}, "
                        f"B loses {stats['losses']} of {stats['n']} queries")
    return said
