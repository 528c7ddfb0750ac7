"""How far named annotators agree on relevance, the pages they dispute, their adjudication, and qrels by a rule.

The data are each annotator's latest mark per (query, source) page (eval.annotation.by_annotator), grades 0, 1, 2
(eval.judgements.GRADES, ordinal). Per question set (a queue's pages; marked pages in no queue form NO_QUEUE)
and overall:

- Cohen's κ for every pair of annotators, on the pages both judged (nominal, unweighted: scikit-learn's
  `cohen_kappa_score`);
- Krippendorff's α across all annotators, ordinal by default (the `krippendorff` package's
  `alpha(..., level_of_measurement="ordinal")`): the coincidence matrix of the values pairable within each page
  (a page judged by one annotator only adds nothing; nobody needs to judge every page), with the ordinal
  distance δ²(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k) / 2)²;
- percentile bootstrap confidence intervals over pages (a fixed seed: the same data give the same interval).

A coefficient is None, with the reason in words, where it is undefined: a pair with no page in common, or marks
that leave no disagreement to expect (every grade the same), or fewer than two annotators.

The pages annotators grade differently are the disagreements; an adjudicator's final grade settles one
(`adjudicate`, table `judgement_adjudication`, the latest counts). `consensus` turns the marks into one grade per
page by a stated rule (RULES) for qrels; `flips` says which comparison verdicts change with the annotator.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from retrieval import TraceStore

from . import annotation, judgements
from .compare import PERMUTATIONS, Comparison
from .reading import one_read

RULES = ("latest", "adjudicated", "majority", "mean")
LEVELS = ("nominal", "ordinal", "interval")
NO_QUEUE = "(no queue)"
OVERALL = "overall"
RESAMPLES = 1000
NO_PAIR = "no page judged by both"
ADJUDICATE = ("python -m eval adjudicate --traces FILE --query QUERY --source SOURCE --grade GRADE --who NAME")


@dataclass(frozen=True)
class PairAgreement:
    """Cohen's κ of annotators `a` and `b` on the `n` pages both judged, with its bootstrap interval; None and
    `reason` where it is undefined."""

    a: str
    b: str
    n: int
    kappa: float | None
    ci_low: float | None
    ci_high: float | None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "n": self.n, "kappa": self.kappa, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "reason": self.reason or None}


@dataclass(frozen=True)
class Disagreement:
    """A page annotators graded differently: each annotator's grade, and the adjudicated grade (None: not yet)."""

    query: str
    source: str
    grades: tuple[tuple[str, int], ...]
    adjudicated_grade: int | None = None

    @property
    def adjudicated(self) -> bool:
        return self.adjudicated_grade is not None

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "source": self.source, "grades": dict(self.grades),
                "adjudicated": self.adjudicated, "adjudicated_grade": self.adjudicated_grade}


@dataclass(frozen=True)
class Agreement:
    """The annotators' agreement on the pages of `scope` (OVERALL, or one question set): κ per pair, α across
    all with its interval (`alpha_ci`, at `level`), the disagreements, and (overall only) `per_set`.
    `reason` says why there is nothing to compute (no marks, one annotator); `alpha_reason` why α is None."""

    scope: str
    annotators: tuple[str, ...]
    pages: int
    pairable: int  # pages judged by two annotators or more: the ones α counts
    pairs: tuple[PairAgreement, ...]
    alpha: float | None
    alpha_ci: tuple[float, float] | None
    disagreements: tuple[Disagreement, ...]
    level: float = 0.95
    resamples: int = RESAMPLES
    seed: int = 0
    metric: str = "ordinal"
    alpha_reason: str = ""
    reason: str = ""
    per_set: tuple[Agreement, ...] = field(default=())

    @property
    def adjudicated(self) -> int:
        """How many disagreements an adjudicator has settled."""
        return sum(d.adjudicated for d in self.disagreements)

    def sentence(self) -> str:
        """The agreement in words: who, how many pages, α with its interval, each pair's κ, the disputes."""
        if self.reason:
            return self.reason
        pct = f"{self.level:.0%}".rstrip("%") + "%"
        alpha = (f"Krippendorff's α ({self.metric}) {_num(self.alpha)} [{pct} CI {_interval(self.alpha_ci)}] over "
                 f"{self.pairable} page(s) judged by two or more" if self.alpha is not None
                 else f"Krippendorff's α ({self.metric}) undefined: {self.alpha_reason}")
        kappas = "; ".join(f"{p.a}–{p.b} {_num(p.kappa)} [{_interval(_ci(p))}] on {p.n}" if p.kappa is not None
                           else f"{p.a}–{p.b} undefined ({p.reason})" for p in self.pairs)
        return (f"{len(self.annotators)} annotators ({', '.join(self.annotators)}) marked {self.pages} page(s); "
                f"{alpha}; Cohen's κ per pair: {kappas}; {len(self.disagreements)} page(s) disputed, "
                f"{self.adjudicated} adjudicated")

    def pairs_frame(self) -> pd.DataFrame:
        """The pairs as a table: a, b, pages both judged, κ, interval, and why κ is undefined where it is."""
        return pd.DataFrame([{"a": p.a, "b": p.b, "pages": p.n, "kappa": _round(p.kappa), "ci_low": _round(p.ci_low),
                              "ci_high": _round(p.ci_high), "note": p.reason} for p in self.pairs],
                            columns=["a", "b", "pages", "kappa", "ci_low", "ci_high", "note"])

    def sets_frame(self) -> pd.DataFrame:
        """One row per question set: pages, annotators, α with its interval, disputed and adjudicated pages."""
        return pd.DataFrame([{"set": s.scope, "pages": s.pages, "annotators": len(s.annotators),
                              "alpha": _round(s.alpha), "ci_low": _round(s.alpha_ci[0]) if s.alpha_ci else None,
                              "ci_high": _round(s.alpha_ci[1]) if s.alpha_ci else None,
                              "disputed": len(s.disagreements), "adjudicated": s.adjudicated,
                              "note": s.reason or s.alpha_reason} for s in self.per_set],
                            columns=["set", "pages", "annotators", "alpha", "ci_low", "ci_high", "disputed",
                                     "adjudicated", "note"])

    def to_dict(self) -> dict[str, Any]:
        return {"scope": self.scope, "annotators": list(self.annotators), "pages": self.pages,
                "pairable": self.pairable, "level": self.level, "resamples": self.resamples, "seed": self.seed,
                "metric": self.metric, "alpha": self.alpha,
                "alpha_ci": list(self.alpha_ci) if self.alpha_ci else None,
                "alpha_reason": self.alpha_reason or None, "reason": self.reason or None,
                "pairs": [p.to_dict() for p in self.pairs],
                "disagreements": [d.to_dict() for d in self.disagreements], "adjudicated": self.adjudicated,
                "per_set": [s.to_dict() for s in self.per_set], "sentence": self.sentence()}


# ---------------------------------------------------------------- the coefficients


def cohen_kappa(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> float | None:
    """Cohen's κ of two annotators' grades of the same pages (nominal, unweighted, as scikit-learn's
    `cohen_kappa_score`); None when undefined (no page, or chance agreement 1: both gave one and the same grade)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) != len(y):
        raise ValueError(f"Cohen's κ needs the same pages from both annotators, got {len(x)} and {len(y)} grades")
    if not len(x):
        return None
    labels = np.unique(np.concatenate([x, y]))
    table = _confusion(x, y, labels)[None, ...]
    value = _kappas(table)[0]
    return None if math.isnan(value) else float(value)


def krippendorff_alpha(data: np.ndarray | list[list[float]], level: str = "ordinal") -> float | None:
    """Krippendorff's α of a reliability matrix (annotators × pages, NaN where an annotator did not judge a page)
    at `level` (LEVELS), as the `krippendorff` package computes it; None when undefined (no page judged by two,
    fewer than two values, or no disagreement to expect)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level of measurement {level!r}; known: {', '.join(LEVELS)}")
    matrix = np.asarray(data, dtype=float)
    domain = np.unique(matrix[~np.isnan(matrix)])
    if len(domain) < 2:
        return None
    units = _unit_coincidences(matrix, domain)
    value = _alphas(units.sum(axis=0)[None, ...], domain, level)[0]
    return None if math.isnan(value) else float(value)


def _confusion(x: np.ndarray, y: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The labels × labels table of (x, y) grade pairs."""
    table = np.zeros((len(labels), len(labels)))
    np.add.at(table, (np.searchsorted(labels, x), np.searchsorted(labels, y)), 1)
    return table


def _kappas(tables: np.ndarray) -> np.ndarray:
    """κ of each R × L × L confusion table (NaN where chance agreement is 1 or the table is empty)."""
    n = tables.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(tables, axis1=1, axis2=2) / n
        chance = (tables.sum(axis=2) * tables.sum(axis=1)).sum(axis=1) / n ** 2
        kappa = (observed - chance) / (1 - chance)
    return np.where(np.isclose(chance, 1.0, rtol=0, atol=1e-12) | (n == 0), np.nan, kappa)


def _unit_coincidences(matrix: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """Each page's contribution to the coincidence matrix (pages × values × values): the ordered pairs of
    values from different annotators, each weighted 1 / (m_u − 1); a page with one value adds nothing."""
    counts = (matrix.T[..., None] == domain[None, None, :]).sum(axis=1).astype(float)  # pages × values
    m = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(len(domain))[None, ...]
    weight = np.where(m >= 2, 1.0 / np.maximum(m - 1, 1), 0.0)
    return pairs * weight[:, None, None]


def _distances(n_v: np.ndarray, domain: np.ndarray, level: str) -> np.ndarray:
    """δ² between the values of `domain` (R × V × V for R sets of value totals `n_v`, R × V)."""
    size = len(domain)
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(size), (len(n_v), size, size))
    if level == "interval":
        return np.broadcast_to((domain[:, None] - domain[None, :]) ** 2, (len(n_v), size, size))
    cumulative = np.concatenate([np.zeros((len(n_v), 1)), np.cumsum(n_v, axis=1)], axis=1)  # R × (V + 1)
    low, high = np.minimum.outer(np.arange(size), np.arange(size)), np.maximum.outer(np.arange(size), np.arange(size))
    between = cumulative[:, high + 1] - cumulative[:, low]  # Σ_{g = low..high} n_g
    return (between - (n_v[:, low] + n_v[:, high]) / 2) ** 2


def _alphas(coincidences: np.ndarray, domain: np.ndarray, level: str) -> np.ndarray:
    """α of each R × V × V coincidence matrix: 1 − (n − 1) Σ o δ² / Σ n_c n_k δ² (NaN where undefined)."""
    n_v = coincidences.sum(axis=1)
    n = n_v.sum(axis=1)
    delta = _distances(n_v, domain, level)
    observed = (coincidences * delta).sum(axis=(1, 2))
    expected = ((n_v[:, :, None] * n_v[:, None, :] - np.eye(len(domain))[None] * n_v[:, :, None]) * delta).sum(
        axis=(1, 2)) / np.where(n > 1, n - 1, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 1 - observed / expected
    return np.where((n <= 1) | np.isclose(expected, 0.0, rtol=0, atol=1e-12), np.nan, value)


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float] | None:
    kept = values[~np.isnan(values)]
    if not len(kept):
        return None
    low, high = np.quantile(kept, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def _resample_counts(size: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """How often each of `size` items is drawn in each of `resamples` bootstrap samples (resamples × size)."""
    draws = rng.integers(0, size, size=(resamples, size))
    counts = np.zeros((resamples, size))
    np.add.at(counts, (np.repeat(np.arange(resamples), size), draws.ravel()), 1)
    return counts


# ---------------------------------------------------------------- agreement of the trace file's marks


@one_read
def compute(store: TraceStore, *, queue: str | None = None, question_set: str | None = None, level: float = 0.95,
            resamples: int = RESAMPLES, seed: int = 0, queries: Collection[str] | None = None,
            metric: str = "ordinal") -> Agreement:
    """The annotators' agreement on the trace file's marks: overall and per question set (a queue's pages;
    NO_QUEUE for the rest), only on `queue`'s pages or on one `question_set` when given, and only on the
    questions `queries` (texts) when given. ValueError for an unknown queue or set, a level outside (0, 1), or
    fewer than 1 resample."""
    if not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"the confidence level must be between 0 and 1 (exclusive), e.g. 0.95; got {level!r}")
    if int(resamples) < 1:
        raise ValueError(f"the bootstrap needs at least 1 resample, got {resamples!r}")
    if metric not in LEVELS:
        raise ValueError(f"unknown level of measurement {metric!r}; known: {', '.join(LEVELS)}")
    marks = annotation.by_annotator(store)
    if queries is not None:
        wanted = {str(q).strip() for q in queries}
        marks = marks[marks["query"].isin(wanted)]
    sets = question_sets(store, marks)
    if queue is not None:
        annotation.check_queue(store, queue)
        marks = _on(marks, sets.get(queue, set()))
    if question_set is not None:
        if question_set not in sets:
            known = ", ".join(sorted(sets)) or "none (no marks)"
            raise ValueError(f"unknown question set {question_set!r}; sets with marks: {known}")
        marks = _on(marks, sets[question_set])
    adjudicated = _adjudicated(store)
    options = {"level": float(level), "resamples": int(resamples), "seed": int(seed), "metric": metric}
    overall = _agreement(OVERALL, marks, adjudicated, **options)
    if overall.reason:
        return overall
    per_set = tuple(_agreement(name, _on(marks, pages), adjudicated, **options)
                    for name, pages in sets.items() if not _on(marks, pages).empty)
    return Agreement(**{**overall.__dict__, "per_set": per_set})


def question_sets(store: TraceStore, marks: pd.DataFrame) -> dict[str, set[tuple[str, str]]]:
    """The marked pages of each question set: each queue's (in name order), then NO_QUEUE, the marked pages in
    no queue (when there are any)."""
    found: dict[str, set[tuple[str, str]]] = {}
    if annotation.has_table(store, "judgement_assignment"):
        rows = store.query("SELECT DISTINCT queue, query, source FROM judgement_assignment ORDER BY queue")
        for row in rows.itertuples(index=False):
            found.setdefault(str(row.queue), set()).add((str(row.query), str(row.source)))
    queued = set().union(*found.values()) if found else set()
    rest = {p for p in zip(marks["query"], marks["source"], strict=True) if p not in queued}
    if rest:
        found[NO_QUEUE] = rest
    return found


def _on(marks: pd.DataFrame, pages: set[tuple[str, str]]) -> pd.DataFrame:
    keys = pd.Series(list(zip(marks["query"], marks["source"], strict=True)), index=marks.index, dtype=object)
    return marks[keys.isin(pages)] if len(marks) else marks


def _agreement(scope: str, marks: pd.DataFrame, adjudicated: Mapping[tuple[str, str], int], *, level: float,
               resamples: int, seed: int, metric: str) -> Agreement:
    """The agreement of `marks` (by_annotator's rows) on the pages they cover."""
    people = tuple(sorted(set(marks["who"])))
    pages = sorted(set(zip(marks["query"], marks["source"], strict=True)))
    options = {"level": level, "resamples": resamples, "seed": seed, "metric": metric}
    if not people:
        where = "these pages" if scope != OVERALL else "this trace file"
        return Agreement(scope, (), 0, 0, (), None, None, (), **options,
                         reason=f"no marks in {where}: nothing to agree on (judge pages first)")
    if len(people) == 1:
        return Agreement(scope, people, len(pages), 0, (), None, None, (), **options,
                         reason=f"only one annotator ({people[0]}) marked {len(pages)} page(s): agreement needs "
                                "two or more (assign a queue to others: python -m eval assign)")
    matrix = _matrix(marks, people, pages)
    pairs = tuple(_pair(people, i, j, matrix, level, resamples, seed)
                  for i in range(len(people)) for j in range(i + 1, len(people)))
    alpha, ci, reason = _alpha(matrix, level, resamples, seed, metric)
    pairable = int(((~np.isnan(matrix)).sum(axis=0) >= 2).sum())
    return Agreement(scope, people, len(pages), pairable, pairs, alpha, ci,
                     _disagreements(marks, adjudicated), **options, alpha_reason=reason)


def _matrix(marks: pd.DataFrame, people: tuple[str, ...], pages: list[tuple[str, str]]) -> np.ndarray:
    """Annotators × pages, each annotator's grade of each page (NaN: not judged)."""
    matrix = np.full((len(people), len(pages)), np.nan)
    row = {p: i for i, p in enumerate(people)}
    column = {p: j for j, p in enumerate(pages)}
    for mark in marks.itertuples(index=False):
        matrix[row[mark.who], column[(mark.query, mark.source)]] = float(mark.grade)
    return matrix


def _pair(people: tuple[str, ...], i: int, j: int, matrix: np.ndarray, level: float, resamples: int,
          seed: int) -> PairAgreement:
    both = ~np.isnan(matrix[i]) & ~np.isnan(matrix[j])
    x, y = matrix[i, both], matrix[j, both]
    a, b, n = people[i], people[j], int(both.sum())
    if not n:
        return PairAgreement(a, b, 0, None, None, None, f"undefined: {NO_PAIR}")
    kappa = cohen_kappa(x, y)
    if kappa is None:
        return PairAgreement(a, b, n, None, None, None,
                             f"undefined: both gave all {n} common page(s) grade {int(x[0])}, so agreement by "
                             "chance is 1")
    labels = np.unique(np.concatenate([x, y]))
    rows = np.eye(len(labels))[np.searchsorted(labels, x)]
    columns = np.eye(len(labels))[np.searchsorted(labels, y)]
    per_page = rows[:, :, None] * columns[:, None, :]  # pages × L × L
    counts = _resample_counts(n, resamples, np.random.default_rng([seed, i, j]))
    tables = np.einsum("rp,pkl->rkl", counts, per_page)
    ci = _percentiles(_kappas(tables), level)
    return PairAgreement(a, b, n, kappa, *(ci or (None, None)),
                         "" if ci else "no interval: every resample had chance agreement 1")


def _alpha(matrix: np.ndarray, level: float, resamples: int, seed: int,
           metric: str) -> tuple[float | None, tuple[float, float] | None, str]:
    """α of the matrix with its bootstrap interval over pages, or None and why."""
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2
    if not pairable.any():
        return None, None, "no page was judged by two annotators"
    domain = np.unique(matrix[:, pairable][~np.isnan(matrix[:, pairable])])
    if len(domain) < 2:
        return None, None, (f"every mark on the {int(pairable.sum())} page(s) judged by two or more is grade "
                            f"{int(domain[0])}: there is no disagreement to expect")
    alpha = krippendorff_alpha(matrix, metric)
    if alpha is None:
        return None, None, "no disagreement to expect"
    units = _unit_coincidences(matrix[:, pairable], domain)
    counts = _resample_counts(units.shape[0], resamples, np.random.default_rng([seed]))
    ci = _percentiles(_alphas(np.einsum("ru,ukl->rkl", counts, units), domain, metric), level)
    return alpha, ci, ""


def _disagreements(marks: pd.DataFrame, adjudicated: Mapping[tuple[str, str], int]) -> tuple[Disagreement, ...]:
    found = []
    for (query, source), group in marks.groupby(["query", "source"], sort=True):
        if group["grade"].nunique() > 1:
            grades = tuple((str(w), int(g)) for w, g in sorted(zip(group["who"], group["grade"], strict=True)))
            found.append(Disagreement(str(query), str(source), grades, adjudicated.get((str(query), str(source)))))
    return tuple(found)


# ---------------------------------------------------------------- verdicts that depend on the annotator


@dataclass(frozen=True)
class AnnotatorVerdict:
    """A comparison's verdict on one metric under one annotator's marks: B better / B worse / tie (eval.what_if
    .outcome), the mean delta (B − A) and the randomisation-test p, on `rescored` questions they marked."""

    who: str
    outcome: str
    delta: float
    p: float
    rescored: int


@dataclass(frozen=True)
class MetricFlip:
    """One metric's verdict on the labels alone (`before`) and under each annotator's marks."""

    metric: str
    before: str
    verdicts: tuple[AnnotatorVerdict, ...]

    @property
    def flipped(self) -> bool:
        """Whether the verdict changes with the annotator."""
        return len({v.outcome for v in self.verdicts}) > 1

    def line(self) -> str:
        """`ndcg@10: the verdict changes with the annotator: ana B better (Δ +0.2100, p 0.0010); bob tie (…)`."""
        each = "; ".join(f"{v.who} {v.outcome} (Δ {v.delta:+.4f}, p {v.p:.4f})" for v in self.verdicts)
        head = "the verdict changes with the annotator" if self.flipped else "the same verdict under every annotator"
        return f"{self.metric}: {head}: {each} (labels alone: {self.before})"


@dataclass(frozen=True)
class AnnotatorFlips:
    """A comparison scored again under each annotator's marks (with the labels, as eval.what_if scores it under
    everyone's): which metrics' verdicts change with the annotator. `reason`: why there is nothing to compare."""

    run_a: str
    run_b: str
    annotators: tuple[str, ...]
    metrics: tuple[MetricFlip, ...]
    reason: str = ""

    def flipped(self) -> list[str]:
        """The metrics whose verdict changes with the annotator."""
        return [m.metric for m in self.metrics if m.flipped]

    def lines(self) -> list[str]:
        """One line per metric whose verdict flips with the annotator."""
        return [m.line() for m in self.metrics if m.flipped]

    def sentence(self) -> str:
        """Whether any verdict depends on who judged, in words."""
        if self.reason:
            return self.reason
        flipped = self.flipped()
        who = f"{len(self.annotators)} annotators ({', '.join(self.annotators)})"
        if not flipped:
            return (f"scored again under each of {who}' marks, every metric keeps its verdict: the conclusions do not "
                    "depend on who judged")
        return (f"scored again under each of {who}' marks, the verdict on {', '.join(flipped)} changes with the "
                "annotator: the conclusion depends on who judged")

    def to_dict(self) -> dict[str, Any]:
        return {"run_a": self.run_a, "run_b": self.run_b, "annotators": list(self.annotators),
                "flipped": self.flipped(), "sentence": self.sentence(), "reason": self.reason or None,
                "metrics": [{"metric": m.metric, "before": m.before, "flipped": m.flipped,
                             "verdicts": [v.__dict__ for v in m.verdicts]} for m in self.metrics]}


def annotators_on(store: TraceStore, queries: Collection[str]) -> list[str]:
    """The annotators with marks on any of the questions `queries` (texts), sorted."""
    wanted = {str(q).strip() for q in queries}
    marks = annotation.by_annotator(store)
    return sorted(set(marks.loc[marks["query"].isin(wanted), "who"]))


@one_read
def flips(store: TraceStore, comparison: Comparison, *, permutations: int = PERMUTATIONS,
          seed: int = 0) -> AnnotatorFlips:
    """`comparison` scored again under each annotator's own marks on its paired questions (eval.what_if with that
    annotator's qrels, over the labels), and the metrics whose verdict changes with the annotator."""
    from .what_if import outcome, what_if_judged

    texts = {str(q).strip() for q in comparison.per_query["query"]}
    marks = annotation.by_annotator(store)
    marks = marks[marks["query"].isin(texts)]
    people = tuple(sorted(set(marks["who"])))
    if len(people) < 2:
        named = f"only {people[0]}" if people else "nobody"
        return AnnotatorFlips(comparison.run_a, comparison.run_b, people, (),
                              f"{named} marked the paired questions: the verdicts cannot depend on the annotator")
    results = {}
    for who in people:
        qrels: dict[str, dict[str, float]] = {}
        for row in marks[marks["who"] == who].itertuples(index=False):
            qrels.setdefault(str(row.query), {})[str(row.source)] = float(row.grade)
        results[who] = what_if_judged(store, comparison, permutations=permutations, seed=seed, marks=qrels)
    found = []
    for name, stats in comparison.metrics.items():
        verdicts = []
        for who, result in results.items():
            after = next(c for c in result.conclusions if c.metric == name)
            verdicts.append(AnnotatorVerdict(who, outcome(after.p_after, after.delta_after), float(after.delta_after),
                                             float(after.p_after), result.rescored))
        found.append(MetricFlip(name, outcome(stats.get("p_randomization"), stats.get("delta")), tuple(verdicts)))
    return AnnotatorFlips(comparison.run_a, comparison.run_b, people, tuple(found))


# ---------------------------------------------------------------- adjudication and consensus


def adjudicate(store: TraceStore, query: str, source: str, grade: int, *, who: str, note: str = "") -> None:
    """Keep the adjudicator `who`'s final grade of a page (the latest adjudication counts); ValueError for a
    blank query, source or adjudicator, a grade outside GRADES, or a page nobody has marked."""
    if not str(query).strip() or not str(source).strip():
        raise ValueError(f"an adjudication needs a query and a source, got {query!r} and {source!r}")
    if grade not in judgements.GRADES:
        raise ValueError(f"grade must be one of {sorted(judgements.GRADES)} "
                         f"({', '.join(judgements.GRADES.values())}), got {grade!r}")
    if not isinstance(who, str) or not who.strip():
        raise ValueError(f"an adjudication needs the adjudicator's name (who=NAME or an email), got {who!r}")
    page = [str(query).strip(), str(source).strip()]
    marked = store.query("SELECT count(*) AS n FROM judgement WHERE query = ? AND source = ?", page)["n"][0]
    if not marked:
        raise ValueError(f"nobody has marked {page[1]!r} for {page[0]!r}: adjudication settles a page annotators "
                         "marked (see `python -m eval agreement` for the disputed ones)")
    with store.connect() as con:
        con.execute("INSERT INTO judgement_adjudication VALUES (?, ?, ?, ?, ?, ?)",
                    [*page, int(grade), who.strip(), datetime.now(timezone.utc).replace(tzinfo=None), str(note or "")])


def adjudications(store: TraceStore) -> pd.DataFrame:
    """The adjudication that counts per page (the latest): query, source, grade, who, created_at, note."""
    columns = ["query", "source", "grade", "who", "created_at", "note"]
    if not annotation.has_table(store, "judgement_adjudication"):
        return pd.DataFrame(columns=columns)
    return store.query("SELECT query, source, grade, who, created_at, note FROM judgement_adjudication "
                       "QUALIFY row_number() OVER (PARTITION BY query, source ORDER BY created_at DESC) = 1 "
                       "ORDER BY query, source")


def _adjudicated(store: TraceStore) -> dict[tuple[str, str], int]:
    frame = adjudications(store)
    return {(str(q), str(s)): int(g) for q, s, g in zip(frame["query"], frame["source"], frame["grade"], strict=True)}


@one_read
def consensus(store: TraceStore, rule: str) -> pd.DataFrame:
    """One grade per page by `rule` (RULES), columns query, source, grade; `attrs["note"]` says what the rule did
    and `attrs["left_out"]` how many marked pages it left out.

    latest: the latest mark of each page, whoever made it (what every export did before annotators had names);
    adjudicated: the adjudicated grade where there is one, else the grade every annotator of the page gave
    (disputed pages nobody adjudicated are left out); majority: the most common grade among the annotators'
    latest marks (a tie goes to the lower grade); mean: their mean grade rounded half up. An adjudicated grade
    overrides the marks in the adjudicated, majority and mean rules."""
    if rule not in RULES:
        raise ValueError(f"unknown judgement rule {rule!r}; known rules: {', '.join(RULES)}")
    if rule == "latest":
        frame = judgements.latest(store)[["query", "source", "grade"]].reset_index(drop=True)
        return _noted(frame, 0, f"latest: the latest mark of each of {len(frame)} page(s), whoever made it")
    marks = annotation.by_annotator(store)
    settled = _adjudicated(store)
    rows, left_out, ties, overridden = [], 0, 0, 0
    for (query, source), group in marks.groupby(["query", "source"], sort=True):
        grades = [int(g) for g in group["grade"]]
        page = (str(query), str(source))
        if page in settled:
            rows.append((*page, settled[page]))
            overridden += 1
        elif rule == "adjudicated":
            if len(set(grades)) == 1:
                rows.append((*page, grades[0]))
            else:
                left_out += 1
        elif rule == "majority":
            counts = pd.Series(grades).value_counts()
            best = counts[counts == counts.max()].index
            ties += len(best) > 1
            rows.append((*page, int(min(best))))
        else:
            rows.append((*page, int(math.floor(sum(grades) / len(grades) + 0.5))))
    frame = pd.DataFrame(rows, columns=["query", "source", "grade"])
    words = {"adjudicated": f"adjudicated: {overridden} adjudicated page(s), {len(frame) - overridden} every "
                            f"annotator agrees on; {left_out} disputed page(s) nobody adjudicated left out",
             "majority": f"majority: the most common grade of each of {len(frame)} page(s) ({overridden} "
                         f"adjudicated); {ties} tie(s) went to the lower grade",
             "mean": f"mean: the mean grade of each of {len(frame)} page(s), rounded half up ({overridden} "
                     "adjudicated)"}
    return _noted(frame, left_out, words[rule])


def _noted(frame: pd.DataFrame, left_out: int, note: str) -> pd.DataFrame:
    frame.attrs["left_out"] = left_out
    frame.attrs["note"] = note
    return frame


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _interval(ci: tuple[float, float] | None) -> str:
    return "n/a" if ci is None else f"{ci[0]:.3f}, {ci[1]:.3f}"


def _ci(pair: PairAgreement) -> tuple[float, float] | None:
    return None if pair.ci_low is None or pair.ci_high is None else (pair.ci_low, pair.ci_high)


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)
