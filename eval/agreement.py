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

One place to import them from: the coefficients are eval.coefficients', adjudication and consensus
eval.judgements' (the labelled set is made there), the flips eval.annotator_flips'.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from retrieval import TraceStore

from . import annotation, coefficients
from .annotator_flips import AnnotatorFlips, AnnotatorVerdict, MetricFlip, annotators_on, flips
from .annotators import by_annotator
from .coefficients import LEVELS, cohen_kappa, krippendorff_alpha
from .judgements import RULES, adjudicate, adjudicated_grades, adjudications, consensus
from .reading import one_read

__all__ = ["ADJUDICATE", "LEVELS", "NO_QUEUE", "OVERALL", "RESAMPLES", "RULES", "Agreement", "AnnotatorFlips",
           "AnnotatorVerdict", "Disagreement", "MetricFlip", "PairAgreement", "adjudicate", "adjudications",
           "annotators_on", "cohen_kappa", "compute", "consensus", "flips", "krippendorff_alpha", "question_sets"]

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
    marks = by_annotator(store)
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
    adjudicated = adjudicated_grades(store)
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
    counts = coefficients.resample_counts(n, resamples, np.random.default_rng([seed, i, j]))
    tables = np.einsum("rp,pkl->rkl", counts, per_page)
    ci = coefficients.percentiles(coefficients.kappas(tables), level)
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
    units = coefficients.unit_coincidences(matrix[:, pairable], domain)
    counts = coefficients.resample_counts(units.shape[0], resamples, np.random.default_rng([seed]))
    ci = coefficients.percentiles(coefficients.alphas(np.einsum("ru,ukl->rkl", counts, units), domain, metric), level)
    return alpha, ci, ""


def _disagreements(marks: pd.DataFrame, adjudicated: Mapping[tuple[str, str], int]) -> tuple[Disagreement, ...]:
    found = []
    for (query, source), group in marks.groupby(["query", "source"], sort=True):
        if group["grade"].nunique() > 1:
            grades = tuple((str(w), int(g)) for w, g in sorted(zip(group["who"], group["grade"], strict=True)))
            found.append(Disagreement(str(query), str(source), grades, adjudicated.get((str(query), str(source)))))
    return tuple(found)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _interval(ci: tuple[float, float] | None) -> str:
    return "n/a" if ci is None else f"{ci[0]:.3f}, {ci[1]:.3f}"


def _ci(pair: PairAgreement) -> tuple[float, float] | None:
    return None if pair.ci_low is None or pair.ci_high is None else (pair.ci_low, pair.ci_high)


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)
