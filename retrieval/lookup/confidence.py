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
        """The strongest pulls for and against, in words: 'for: the first page holds 100% of …; against: …'."""
        for_ = [signal_words(n, getattr(signals, n)) for n, p in self.pulls if p > 0][:count]
        against = [signal_words(n, getattr(signals, n)) for n, p in sorted(self.pulls, key=lambda x: x[1]) if p < 0][:1]
        return "; ".join(part for part in (("for: " + ", ".join(for_)) if for_ else "",
                                            ("against: " + ", ".join(against)) if against else "") if part)


_TERMS = tuple(zip(SIGNALS, model.MEAN, model.SCALE, model.WEIGHTS, strict=True))  # (name, mean, scale, weight)


def estimate(signals: Signals) -> Confidence:
    """The fitted model's confidence for these signals."""
    if tuple(model.SIGNALS) != SIGNALS:  # the shipped numbers must be for these signals, in this order
        raise RuntimeError("retrieval/lookup/confidence_model.py was fitted on other signals; rerun "
                           "`python -m eval.fit_confidence`")
    pulls = [(name, w * (getattr(signals, name) - m) / s) for name, m, s, w in _TERMS]
    logit = model.INTERCEPT + sum(p for _, p in pulls)
    value = 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))
    return Confidence(value, tuple(sorted(pulls, key=lambda x: -abs(x[1]))))


def level_of(value: float) -> str:
    """high, medium or low by the fitted thresholds (none is for no evidence, decided by the caller)."""
    return "high" if value >= model.HIGH else "medium" if value >= model.MEDIUM else "low"
