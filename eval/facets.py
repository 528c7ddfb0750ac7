"""Facets: a comparison's metrics broken down by the questions' true category and by their own fields.

A setting can win overall and lose a whole category. For every facet (`category`, the true category of
eval.oracle; and every field the questions carry, eval.query_fields, with 2 to MAX_VALUES values) and every
metric, each value's paired questions get n, mean A, mean B, delta (B - A) and the comparison's own paired
randomisation test (passed in by eval.compare: there is one test). The p-values of one facet and one metric
are one family, Holm-corrected together; a value with fewer than MIN_TESTED questions gets no test and is
not in the family. A value where B is significantly worse (Holm p < alpha) while B wins overall is flagged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .oracle import true_category

CATEGORY = "category"
MAX_VALUES = 30  # more distinct values than this: an id or free text, not a facet
MIN_TESTED = 2  # a value with fewer questions gets no test
MISSING = "(none)"  # a question without the field, or without a category
FAMILY = ("Holm's correction over the values of one facet for one metric (the values with at least "
          f"{MIN_TESTED} questions)")
Test = Callable[[np.ndarray], float]


@dataclass(frozen=True)
class FacetRow:
    """One value of a facet for one metric: its paired questions' means, delta and p-values (None: untested)."""

    value: str
    n: int
    mean_a: float
    mean_b: float
    delta: float
    p: float | None
    p_holm: float | None
    flagged: bool  # B wins overall but loses this value significantly (Holm p < alpha)


@dataclass(frozen=True)
class FacetTable:
    """One facet broken down on one metric, its values most questions first."""

    facet: str
    metric: str
    overall_delta: float
    rows: tuple[FacetRow, ...]

    def flags(self) -> list[str]:
        """Each flagged value in words."""
        return [f"{self.metric}: B wins overall ({self.overall_delta:+.4f}) but loses {self.facet} = {row.value} "
                f"significantly ({row.delta:+.4f} on {row.n} questions, Holm p = {row.p_holm:.3g})"
                for row in self.rows if row.flagged]


@dataclass(frozen=True)
class FacetBreakdown:
    """Every chosen facet on every metric; `skipped` names the fields left out and why."""

    facets: tuple[str, ...]
    tables: tuple[FacetTable, ...]
    skipped: Mapping[str, str]
    alpha: float

    def table(self, facet: str, metric: str) -> FacetTable | None:
        return next((t for t in self.tables if t.facet == facet and t.metric == metric), None)

    def flags(self) -> list[str]:
        """Every value where B wins overall but loses significantly, in words."""
        return [line for table in self.tables for line in table.flags()]

    def to_dict(self) -> dict[str, Any]:
        by_facet: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for table in self.tables:
            by_facet.setdefault(table.facet, {})[table.metric] = [asdict(row) for row in table.rows]
        return {"facets": list(self.facets), "skipped": dict(self.skipped), "family": FAMILY, "alpha": self.alpha,
                "flags": self.flags(), "by_facet": by_facet}


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the k-th smallest times (m - k + 1), kept
    non-decreasing, at most 1."""
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, i in enumerate(sorted(range(len(p_values)), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (len(p_values) - rank) * float(p_values[i])))
        adjusted[i] = running
    return adjusted


def question_labels(paired: pd.DataFrame) -> pd.DataFrame:
    """Each paired question's facet values (run A's labels, else B's): `category`, then every field the
    questions carry, in order of appearance; MISSING where a question has none."""
    def side(name: str, suffix: str) -> pd.Series:
        column = f"{name}_{suffix}"
        return paired[column] if column in paired else pd.Series(None, index=paired.index, dtype=object)

    categories = [true_category(a if isinstance(a, list) else None) or true_category(b if isinstance(b, list)
                                                                                      else None) or MISSING
                  for a, b in zip(side("categories", "a"), side("categories", "b"), strict=True)]
    fields = [{**(b if isinstance(b, dict) else {}), **(a if isinstance(a, dict) else {})}
              for a, b in zip(side("facets", "a"), side("facets", "b"), strict=True)]
    names = [n for n in dict.fromkeys(n for found in fields for n in found) if n != CATEGORY]
    columns = {CATEGORY: categories, **{n: [str(f.get(n, MISSING)) for f in fields] for n in names}}
    return pd.DataFrame(columns, index=paired.index)


def ineligible(name: str, values: pd.Series) -> str | None:
    """Why a facet cannot break the comparison down (one value, an id or free text), or None when it can."""
    distinct = values.nunique()
    if name == CATEGORY and set(values) == {MISSING}:
        return "no question has a category"
    if distinct < 2:
        return f"one value ({values.iloc[0] if len(values) else MISSING}) for every question"
    if distinct > MAX_VALUES:
        return f"{distinct} distinct values (more than {MAX_VALUES}): an id or free text"
    if distinct == len(values):
        return "a different value for every question: an id or free text"
    return None


def choose(labels: pd.DataFrame, fields: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """The facets to break down by and the fields skipped with why: every eligible one (None), or those named,
    each of which must exist and be eligible (ValueError saying why not)."""
    reasons = {name: ineligible(name, labels[name]) for name in labels.columns}
    if fields is None:
        return [n for n, why in reasons.items() if why is None], {n: why for n, why in reasons.items() if why}
    for name in fields:
        if name not in reasons:
            raise ValueError(f"unknown facet {name!r}; the compared runs' questions carry: "
                             f"{', '.join(reasons)} (pass --facets with some of them, or --no-facets)")
        if reasons[name]:
            raise ValueError(f"facet {name!r} cannot break the comparison down: {reasons[name]}")
    return list(dict.fromkeys(fields)), {}


def facet_breakdown(paired: pd.DataFrame, metrics: Sequence[str], overall: Mapping[str, float], test: Test, *,
                    fields: Sequence[str] | None = None, alpha: float = 0.05) -> FacetBreakdown:
    """The breakdown of a comparison's `paired` per-question frame (eval.compare: `<metric>_a`, `<metric>_b`,
    `categories_a`, `facets_a`…) on `metrics`, each value tested with `test(differences)`; `overall` is each
    metric's mean delta (B - A)."""
    labels = question_labels(paired)
    chosen, skipped = choose(labels, fields)
    tables = tuple(_table(facet, metric, labels[facet], paired, float(overall.get(metric, 0.0)), test, alpha)
                   for facet in chosen for metric in metrics)
    return FacetBreakdown(tuple(chosen), tables, skipped, alpha)


def _table(facet: str, metric: str, values: pd.Series, paired: pd.DataFrame, overall: float, test: Test,
           alpha: float) -> FacetTable:
    a, b = paired[f"{metric}_a"].astype(float), paired[f"{metric}_b"].astype(float)
    counts = values.value_counts()
    order = sorted(counts.index, key=lambda v: (-int(counts[v]), v == MISSING, str(v)))
    groups = [(value, (values == value).to_numpy()) for value in order]
    p = {value: test((b[mask] - a[mask]).to_numpy()) for value, mask in groups if mask.sum() >= MIN_TESTED}
    adjusted = dict(zip(p, holm(list(p.values())), strict=True))
    rows = []
    for value, mask in groups:
        delta = float((b[mask] - a[mask]).mean())
        p_holm = adjusted.get(value)
        flagged = overall > 1e-12 and delta < -1e-12 and p_holm is not None and p_holm < alpha
        rows.append(FacetRow(str(value), int(mask.sum()), _round(a[mask].mean()), _round(b[mask].mean()),
                             _round(delta), _maybe(p.get(value)), _maybe(p_holm), flagged))
    return FacetTable(facet, metric, overall, tuple(rows))


def _round(value: float) -> float:
    return round(float(value), 6)


def _maybe(value: float | None) -> float | None:
    return None if value is None else _round(value)
