"""The relevance confidence: a fitted logistic model over the lookup's signals (retrieval.lookup.answerability).

`confidence` estimates the chance that the first returned page answers the question. Its weights, the
signals' means and scales and the level thresholds are a few numbers (a `ConfidenceModel`), written by
`python -m eval.fit_confidence` from labelled answerable and unanswerable questions (eval.answerability):
today's in confidence_model.py (`DEFAULT`), one per contextual model configuration in confidence_models/
(retrieval.lookup.grading picks it); nothing is learned at run time. `drivers` names the signals that moved it
most, for the basis sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from retrieval.lookup import confidence_model
from retrieval.lookup.answerability import ALL_SIGNALS, SIGNALS, Signals, signal_words

NUMBERS = ("mean", "scale", "weights")  # a model's per-signal numbers, one each in `signals` order


@dataclass(frozen=True)
class ConfidenceModel:
    """One fitted model: per signal (`signals`, by name) its mean, scale and weight, the intercept, and the
    thresholds of high and medium; `key` names the configuration it was fitted for ("default": no model part)."""

    signals: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float
    high: float
    medium: float
    key: str = "default"

    def __post_init__(self) -> None:
        unknown = [n for n in self.signals if n not in ALL_SIGNALS]
        if unknown or len(set(self.signals)) != len(self.signals):
            raise ValueError(f"confidence model {self.key!r}: signals {list(self.signals)} are not distinct names "
                             f"of {list(ALL_SIGNALS)}")
        if any(len(getattr(self, n)) != len(self.signals) for n in NUMBERS):
            raise ValueError(f"confidence model {self.key!r}: mean, scale and weights need one number per signal "
                             f"({len(self.signals)})")
        if not all(s > 0 for s in self.scale) or not 0.0 <= self.medium <= self.high <= 1.0:
            raise ValueError(f"confidence model {self.key!r}: every scale must be positive and 0 <= medium <= "
                             f"high <= 1 (medium {self.medium}, high {self.high})")

    @cached_property
    def terms(self) -> tuple[tuple[str, float, float, float], ...]:
        """(name, mean, scale, weight) per signal, made once per model."""
        return tuple(zip(self.signals, self.mean, self.scale, self.weights, strict=True))

    def level_of(self, value: float) -> str:
        """high, medium or low by this model's thresholds (none is for no evidence, decided by the caller)."""
        return "high" if value >= self.high else "medium" if value >= self.medium else "low"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "signals": list(self.signals), "mean": list(self.mean), "scale": list(self.scale),
                "weights": list(self.weights), "intercept": self.intercept, "high": self.high, "medium": self.medium}

    @classmethod
    def from_dict(cls, numbers: dict[str, Any]) -> ConfidenceModel:
        """The model a fitted file's `to_dict` numbers describe (other keys, such as how it was fitted, ignored)."""
        try:
            return cls(tuple(numbers["signals"]), *(tuple(float(v) for v in numbers[n]) for n in NUMBERS),
                       float(numbers["intercept"]), float(numbers["high"]), float(numbers["medium"]),
                       str(numbers.get("key", "default")))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"a confidence model needs signals, mean, scale, weights, intercept, high and medium "
                             f"({type(exc).__name__}: {exc})") from None


DEFAULT = ConfidenceModel(tuple(confidence_model.SIGNALS), tuple(confidence_model.MEAN),
                          tuple(confidence_model.SCALE), tuple(confidence_model.WEIGHTS),
                          confidence_model.INTERCEPT, confidence_model.HIGH, confidence_model.MEDIUM)


@dataclass(frozen=True)
class Confidence:
    """The estimate and the signals' pulls on it (weight x standardised value), largest first."""

    value: float
    pulls: tuple[tuple[str, float], ...]
    model: ConfidenceModel = field(default=DEFAULT, compare=False, repr=False)

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
        level = self.model.level_of(self.value)
        negative = sorted((pull for pull in self.pulls if pull[1] < 0), key=lambda x: x[1])
        logit = _logit(self.value)
        decisive = [(n, p) for n, p in negative if self.model.level_of(_sigmoid(logit - p)) != level]
        if decisive or level != "low":
            return decisive[:1]
        return negative[:1]


def estimate(signals: Signals, model: ConfidenceModel = DEFAULT) -> Confidence:
    """`model`'s confidence for these signals (today's shipped model by default); a signal the lookup does not
    have (a model part that did not score it) pulls neither way."""
    if model is DEFAULT and DEFAULT.signals != SIGNALS:  # the shipped numbers must be for these signals, in order
        raise RuntimeError("retrieval/lookup/confidence_model.py was fitted on other signals; rerun "
                           "`python -m eval.fit_confidence`")
    pulls = [(name, 0.0 if (v := getattr(signals, name)) is None else w * (v - m) / s)  # missing: no pull
             for name, m, s, w in model.terms]
    value = _sigmoid(model.intercept + sum(p for _, p in pulls))
    return Confidence(value, tuple(sorted(pulls, key=lambda x: -abs(x[1]))), model)


def _sigmoid(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))


def _logit(value: float) -> float:
    value = min(max(value, 1e-12), 1 - 1e-12)
    return math.log(value / (1 - value))


def level_of(value: float, model: ConfidenceModel = DEFAULT) -> str:
    """high, medium or low by `model`'s thresholds (today's shipped model by default)."""
    return model.level_of(value)
