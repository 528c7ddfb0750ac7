"""The figures trends, changes and alerts compute over production lookups: their names (the `--fail-on` vocabulary
and the JSON keys), what each means, and the SQL that computes it.

Production lookups are `tool_invocation` rows of `lookup_knowledge` that no evaluation run made (`run_id IS NULL`).
A share is the average of a per-row condition over the rows where the condition is defined (not null): a share of
relevance levels counts only rows with a level, a share of filter decisions only rows with a decision, so a failed
call (no details) is in `error_share`'s denominator and in no other. The figures read the plain columns (schema v16's
`relevance_level`, `confidence`, `abstained`), never `retrieval_details`' JSON, which is too slow to parse at scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["share", "latency", "mean", "count"]
PRODUCTION = "run_id IS NULL AND tool_name = 'lookup_knowledge'"  # the rows every figure counts


@dataclass(frozen=True)
class Figure:
    """One figure: `name` (the vocabulary), `kind`, `label` (words: 'abstentions'), `sql` (the aggregate over a
    group's rows) and `definition` (one sentence, for the docs). A share also has `condition`, the per-row boolean
    it averages (null where the row does not count); a latency quantile its `quantile`; a mean its `value`."""

    name: str
    kind: Kind
    label: str
    sql: str
    definition: str
    condition: str | None = None
    quantile: float | None = None
    value: str | None = None


def _share(name: str, label: str, condition: str, definition: str) -> Figure:
    return Figure(name, "share", label, f"avg(CAST(({condition}) AS DOUBLE))", definition, condition=condition)


def _latency(name: str, quantile: float) -> Figure:
    percent = round(quantile * 100)
    return Figure(name, "latency", f"p{percent} latency", f"quantile_cont(latency_ms, {quantile})",
                  f"the {percent}th percentile of `latency_ms` (linear interpolation, DuckDB's `quantile_cont`), in "
                  f"milliseconds, over lookups with a latency", quantile=quantile)


_LEVELS = tuple(_share(f"{level}_share", f"{level}-relevance lookups", f"relevance_level = '{level}'",
                       f"share of lookups graded `{level}`, of those with a relevance level")
                for level in ("high", "medium", "low", "none"))
_DECISIONS = tuple(_share(f"filter_{decision}_share", f"lookups with filter decision {decision}",
                          f"filter_decision = '{decision}'",
                          f"share of lookups whose category filter decision was `{decision}`, of those with a decision")
                   for decision in ("applied", "skipped_no_domain", "skipped_ambiguous", "disabled", "caller"))

FIGURES: tuple[Figure, ...] = (
    Figure("lookups", "count", "lookups", "count(*)", "the number of production lookups (every status)"),
    *_LEVELS,
    _share("abstain_share", "abstentions", "abstained",
           "share of lookups that abstained (relevance level low or none), of those with a relevance grade"),
    _share("empty_share", "empty results", "evidence_count = 0",
           "share of lookups that returned no evidence, of those with an evidence count"),
    _share("error_share", "errors", "status <> 'ok'", "share of lookups whose status is not `ok`, of every lookup"),
    *_DECISIONS,
    _share("l1_failed_share", "L1 failures", "l1_status IN ('failed', 'timeout')",
           "share of lookups whose L1 (semantic layer) failed or timed out, of those with an L1 status"),
    _share("l1_empty_share", "empty L1 answers", "l1_status = 'empty'",
           "share of lookups whose L1 returned no candidates, of those with an L1 status"),
    _share("fallback_share", "L0 fallbacks", "retrieval_layer = 'L0'",
           "share of lookups answered by L0's evidence only (L1 gave nothing), of those with a retrieval layer"),
    _latency("p50_ms", 0.5),
    _latency("p95_ms", 0.95),
    Figure("mean_confidence", "mean", "mean confidence", "avg(confidence)",
           "the mean of `confidence` (the estimated chance that the first page answers), of lookups with one",
           value="confidence"),
)
BY_NAME = {figure.name: figure for figure in FIGURES}
NAMES = tuple(BY_NAME)


def figure(name: str) -> Figure:
    """The figure called `name`; a ValueError naming every figure otherwise."""
    found = BY_NAME.get(name.strip())
    if found is None:
        raise ValueError(f"unknown figure {name.strip()!r}; the figures are {', '.join(NAMES)}")
    return found


def formatted(figure_name: str, value: float | None) -> str:
    """`value` of the figure as a reader says it: a share as a percentage, a latency in ms, a count with commas."""
    if value is None:
        return "n/a"
    kind = BY_NAME[figure_name].kind
    if kind == "share":
        return f"{value:.1%}"
    if kind == "latency":
        return f"{value:,.1f} ms"
    if kind == "count":
        return f"{value:,.0f}"
    return f"{value:.3f}"
