"""Leave-one-source-out validation of the relevance confidence: `python -m eval.fit_confidence --loso [--set ...]`.

The held-out part of eval.answerability holds 30% of every source, so a held-out question's source was fitted
on; this asks whether the grade carries to a kind of question the fit never saw. Each fold leaves out a group
of sources, fits the model and its thresholds (eval.fit_confidence's procedure) on every other source's fitting
part, and grades the left-out sources' questions, both parts. The groups: each answerable set (the sample's,
the Hugo dev questions — natural questions —, SciFact's claims), whose fold also leaves out the same questions
asked of the other bases, so their wording is never seen; and each family of unanswerable sets: `off-topic`
(off-topic questions of every kind, on every base), `cross-corpus` (Hugo questions and SciFact claims asked of
the other bases) and `near-domain` (the sample's own unanswerable questions and its questions asked of Hugo).

Per left-out source: the levels' shares; for answerable ones the precision of high (a relevant first page among
those graded high), its reach (the share of those with a relevant first page that are graded high) and how well
the confidence tells a relevant first page from a wrong one (AUROC among the source's questions); and the
AUROC of the confidence against the other class's questions of the same base that this fold did not fit on
(their held-out part, or a left-out source): answerable questions with a relevant page in the top 5 against
unanswerable ones. The pooled line grades every question by the fold that left it out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

ORIGIN = {"scifact-train": "scifact"}  # an answerable set's name where it differs from its questions' prefix
FAMILIES = ("off-topic", "cross-corpus", "near-domain")
Fit = Callable[[list[Any]], dict]  # eval.fit_confidence.fit_rows: rows -> numbers (with HIGH and MEDIUM)
Score = Callable[[dict, np.ndarray], np.ndarray]  # eval.fit_confidence.confidence_of


def origin(source: str, answerable: bool) -> str:
    """Where a source's question texts come from: `hugo-dev` for hugo-dev and hugo-dev→sample alike."""
    return ORIGIN.get(source, source) if answerable else source.partition("→")[0]


def family(source: str, answerable: bool) -> str:
    """The fold a source is left out in: an answerable set's own; an unanswerable set's family."""
    if answerable:
        return source
    asked = origin(source, False)
    if source == "sample-none" or asked == "sample":
        return "near-domain"
    return "off-topic" if asked in ("off-topic", "shares-one-word") else "cross-corpus"


@dataclass(frozen=True)
class Fold:
    """One fold: the sources it reports on (`left_out`) and those its fit never sees (`unseen`: the left-out
    ones, and for an answerable set its questions asked of other bases)."""

    name: str
    left_out: frozenset[str]
    unseen: frozenset[str]


def folds(sources: dict[str, bool]) -> list[Fold]:
    """The folds over `sources` (source -> answerable): each answerable set, then each unanswerable family."""
    names = [s for s, a in sources.items() if a] + [f for f in FAMILIES if any(
        family(s, a) == f for s, a in sources.items())]
    out = []
    for name in names:
        left = frozenset(s for s, a in sources.items() if family(s, a) == name)
        texts = {origin(s, True) for s in left if sources[s]}
        out.append(Fold(name, left, left | frozenset(s for s, a in sources.items() if origin(s, a) in texts)))
    return out


@dataclass(frozen=True)
class SourceFigures:
    """One left-out source's figures under the model of the fold that left it out (None: not defined)."""

    fold: str
    source: str
    answerable: bool
    questions: int
    levels: dict[str, float]  # share of its questions per level
    precision: float | None  # answerable: a relevant first page among those graded high
    reach: float | None  # answerable: graded high among those with a relevant first page
    auroc: float | None
    against: int  # the other class's questions the AUROC compares with
    first_auroc: float | None = None  # answerable: AUROC of a relevant first page against a wrong one

    def to_dict(self) -> dict[str, Any]:
        return {"fold": self.fold, "source": self.source, "answerable": self.answerable,
                "questions": self.questions, "levels": {k: round(v, 4) for k, v in self.levels.items()},
                "precision_of_high": _round(self.precision), "reach_of_high": _round(self.reach),
                "auroc": _round(self.auroc), "auroc_against": self.against,
                "first_page_auroc": _round(self.first_auroc)}


@dataclass(frozen=True)
class LosoReport:
    """Every source's figures, and the pooled ones (each question graded by the fold that left it out)."""

    sources: tuple[SourceFigures, ...]
    pooled: dict[str, float | None]
    configuration: str = "default"  # the model configuration's key (retrieval.lookup.grading)

    def to_dict(self) -> dict[str, Any]:
        return {"configuration": self.configuration, "sources": [s.to_dict() for s in self.sources],
                "pooled": {k: _round(v) for k, v in self.pooled.items()}}

    def render(self) -> str:
        """A Markdown table, one row per source, then the pooled figures."""
        lines = [f"configuration: {self.configuration}\n",
                 "| fold | source | questions | high | medium | low | none | precision of high | reach of high | "
                 "AUROC (against) | AUROC first page right/wrong |", "| --- | --- |" + " ---: |" * 9]
        for s in self.sources:
            levels = " | ".join(f"{s.levels[k]:.0%}" for k in LEVELS)
            auroc = "-" if s.auroc is None else f"{s.auroc:.3f} ({s.against})"
            lines.append(f"| {s.fold} | {s.source} | {s.questions} | {levels} | {_share(s.precision)} | "
                         f"{_share(s.reach)} | {auroc} | {_number(s.first_auroc)} |")
        p = self.pooled
        lines.append(f"\npooled (every question graded by the fold that left it out): unanswerable graded high "
                     f"{_share(p['unanswerable_high'], 1)}; precision of high {_share(p['precision'], 1)}; reach "
                     f"of high {_share(p['reach'], 1)}; AUROC {_number(p['auroc'])}")
        return "\n".join(lines)


LEVELS = ("high", "medium", "low", "none")


def validate(looked: Sequence[Any], fit: Fit, score: Score, configuration: str = "default") -> LosoReport:
    """Leave each fold out in turn: fit on the other sources' fitting part, grade what the fit did not see.
    `looked`: eval.fit_confidence.Looked rows of one model configuration (its key: `configuration`)."""
    sources = {row.question.source: row.question.answerable for row in looked}
    figures: list[SourceFigures] = []
    graded: dict[int, tuple[float, str]] = {}  # row position -> (confidence, level), by the fold leaving it out
    for fold in folds(sources):
        fitted = [r for r in looked if r.question.source not in fold.unseen and not r.question.held_out
                  and r.has_evidence]
        numbers = fit(fitted)
        unseen = [i for i, r in enumerate(looked) if r.question.source in fold.unseen or r.question.held_out]
        confidence, levels = _graded(numbers, [looked[i] for i in unseen], score)
        by_row = {i: (float(c), str(level)) for i, c, level in zip(unseen, confidence, levels, strict=True)}
        for source in sorted(fold.left_out):
            figures.append(_figures(fold.name, source, looked, by_row))
            graded.update({i: v for i, v in by_row.items() if looked[i].question.source == source})
    return LosoReport(tuple(figures), _pooled(looked, graded), configuration)


def _graded(numbers: dict, rows: list[Any], score: Score) -> tuple[np.ndarray, np.ndarray]:
    """Each row's confidence and level under `numbers`, as a lookup grades: none without evidence, low when L0
    alone found the first page."""
    if not rows:
        return np.zeros(0), np.array([], dtype=object)
    confidence = score(numbers, np.array([r.signals for r in rows], dtype=float))
    evidence = np.array([r.has_evidence for r in rows])
    confidence[~evidence] = 0.0
    levels = np.where(confidence >= numbers["HIGH"], "high", np.where(confidence >= numbers["MEDIUM"], "medium",
                                                                      "low")).astype(object)
    levels[~np.array([r.semantic for r in rows])] = "low"
    levels[~evidence] = "none"
    return confidence, levels


def _figures(fold: str, source: str, looked: Sequence[Any], by_row: dict[int, tuple[float, str]]) -> SourceFigures:
    mine = [i for i in by_row if looked[i].question.source == source]
    answerable, kb = looked[mine[0]].question.answerable, looked[mine[0]].question.kb
    levels = [by_row[i][1] for i in mine]
    shares = {level: levels.count(level) / len(mine) for level in LEVELS}
    precision = reach = first_auroc = None
    if answerable:
        high = [i for i in mine if by_row[i][1] == "high"]
        first = [i for i in mine if looked[i].first]
        precision = sum(looked[i].first for i in high) / len(high) if high else None
        reach = sum(by_row[i][1] == "high" for i in first) / len(first) if first else None
        first_auroc = _auroc([by_row[i][0] for i in first], [by_row[i][0] for i in mine if not looked[i].first])
    other = [i for i in by_row if looked[i].question.kb == kb and looked[i].question.answerable != answerable
             and (looked[i].top5 or not looked[i].question.answerable)]
    ours = [i for i in mine if looked[i].top5 or not answerable]
    positives, negatives = (ours, other) if answerable else (other, ours)
    auroc = _auroc([by_row[i][0] for i in positives], [by_row[i][0] for i in negatives])
    return SourceFigures(fold, source, answerable, len(mine), shares, precision, reach, auroc, len(other),
                         first_auroc)


def _pooled(looked: Sequence[Any], graded: dict[int, tuple[float, str]]) -> dict[str, float | None]:
    answerable = [i for i in graded if looked[i].question.answerable]
    unanswerable = [i for i in graded if not looked[i].question.answerable]
    high = [i for i in answerable if graded[i][1] == "high"]
    first = [i for i in answerable if looked[i].first]
    return {"unanswerable_high": _mean([graded[i][1] == "high" for i in unanswerable]),
            "answerable_high": _mean([graded[i][1] == "high" for i in answerable]),
            "precision": _mean([looked[i].first for i in high]),
            "reach": _mean([graded[i][1] == "high" for i in first]),
            "auroc": _auroc([graded[i][0] for i in answerable if looked[i].top5],
                            [graded[i][0] for i in unanswerable])}


def _auroc(positives: list[float], negatives: list[float]) -> float | None:
    """The chance that a positive scores above a negative (ties count half); None without both classes."""
    if not positives or not negatives:
        return None
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score([1] * len(positives) + [0] * len(negatives), positives + negatives))


def _mean(values: list[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _share(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}%}"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
