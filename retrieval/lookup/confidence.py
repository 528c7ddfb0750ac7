"""The relevance confidence: a fitted logistic model over the lookup's signals (retrieval.lookup.answerability).

`confidence` estimates the chance that the first returned page answers the question. Its weights, the
signals' means and scales and the level thresholds are a few numbers in confidence_model.py, written by
`python -m eval.fit_confidence` from labelled answerable and unanswerable questions (eval.answerability);
nothing is learned at run time. `drivers` names the signals that moved it most, for the basis sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from retrieval.lookup import confidence_model as model
from retrieval.lookup.answerability import SIGNALS, Signals, signal_words


@dataclass(frozen=True)
class Confidence:
    """The estimate and the signals' pulls on it (weight x standardised value), largest first."""

    value: float
    pulls: tuple[tuple[str, float], ...]

    def drivers(self, signals: Signals, count: int = 2) -> str:
        """The strongest pulls for, and the pulls against that kept the grade from the next level up, in words:
        'for: the first page holds 100% of …; against: …'. An abstaining (low) grade names its strongest pull
        against even when no single one decided it; a high grade has nothing against worth naming."""
        for_ = [signal_words(n, getattr(signals, n), p) for n, p in self.pulls if p > 0][:count]
        against = [signal_words(n, getattr(signals, n), p) for n, p in self._against()]
        return "; ".join(part for part in (("for: " + ", ".join(for_)) if for_ else "",
                                            ("against: " + ", ".join(against)) if against else "") if part)

    def _against(self) -> list[tuple[str, float]]:
        """The pulls against whose removal alone would lift the level (strongest first); for a low grade
        with none such, its strongest pull against."""
        level = level_of(self.value)
        negative = sorted((pull for pull in self.pulls if pull[1] < 0), key=lambda x: x[1])
        logit = _logit(self.value)
        decisive = [(n, p) for n, p in negative if level_of(_sigmoid(logit - p)) != level]
        if decisive or level != "low":
            return decisive[:1]
        return negative[:1]


_TERMS = tuple(zip(SIGNALS, model.MEAN, model.SCALE, model.WEIGHTS, strict=True))  # (name, mean, scale, weight)


def estimate(signals: Signals) -> Confidence:
    """The fitted model's confidence for these signals."""
    if tuple(model.SIGNALS) != SIGNALS:  # the shipped numbers must be for these signals, in this order
        raise RuntimeError("retrieval/lookup/confidence_model.py was fitted on other signals; rerun "
                           "`python -m eval.fit_confidence`")
    pulls = [(name, 0.0 if (v := getattr(signals, name)) is None else w * (v - m) / s)  # missing: no pull
             for name, m, s, w in _TERMS]
    value = _sigmoid(model.INTERCEPT + sum(p for _, p in pulls))
    return Confidence(value, tuple(sorted(pulls, key=lambda x: -abs(x[1]))))


def _sigmoid(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))


def _logit(value: float) -> float:
    value = min(max(value, 1e-12), 1 - 1e-12)
    return math.log(value / (1 - value))


def level_of(value: float) -> str:
    """high, medium or low by the fitted thresholds (none is for no evidence, decided by the caller)."""
    return "high" if value >= model.HIGH else "medium" if value >= model.MEDIUM else "low"
