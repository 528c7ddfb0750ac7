"""Fit the relevance confidence: `python -m eval.fit_confidence` (needs the shared data; see eval.answerability).

Looks up every question of eval.answerability with the default settings, keeps each lookup's signals
(`relevance.signals`), and fits, on the fitting part only, a logistic regression (scikit-learn) of "the first
page is a relevant one" (false for every unanswerable question), weighted so that answerable and
unanswerable questions weigh the same and every source weighs the same within them. The thresholds come from
the fitting part too: `high` from the lowest confidence at which at least 93% of answerable questions have a
relevant first page and at most 2% of unanswerable ones reach it; `medium` (below it: low, and the result
abstains) from the lowest at which at most 3% of unanswerable ones reach it. Writes the numbers to
retrieval/lookup/confidence_model.py (`--dry-run`: prints them only) and reports both parts.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np

from eval.answerability import LabelledQuestion, knowledge_bases, question_sets
from retrieval import lookup_knowledge, open_index
from retrieval.lookup import SIGNALS

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "retrieval" / "lookup" / "confidence_model.py"
# high: at least 93% of answerable fitting questions graded high have a relevant first page (90% held out
# too little margin: 80.8% on the held-out part), and at most 2% of unanswerable ones reach it
HIGH_PRECISION, HIGH_UNANSWERABLE, MEDIUM_UNANSWERABLE = 0.93, 0.02, 0.03


@dataclass(frozen=True)
class Looked:
    """One question's lookup: its signals and whether the first page / one of the first five is relevant."""

    question: LabelledQuestion
    signals: tuple[float, ...]
    first: bool
    top5: bool
    has_evidence: bool
    confidence: float = 0.0  # the shipped model's, as the lookup graded it
    level: str = "none"


def look_up_all(shared: Path) -> list[Looked]:
    """Every labelled question looked up on its knowledge base, default settings."""
    questions = question_sets(shared)
    bases = knowledge_bases(shared)
    out = []
    for kb in sorted({q.kb for q in questions}):
        index = open_index(bases[kb])
        for q in (q for q in questions if q.kb == kb):
            result = lookup_knowledge(q.text, index=index)
            sources = [b.source for b in result.evidence_blocks]
            signals = result.relevance.signals
            vector = signals.vector() if signals is not None else (0.0,) * len(SIGNALS)
            out.append(Looked(q, vector, bool(sources) and sources[0] in q.relevant,
                              any(s in q.relevant for s in sources[:5]), bool(sources),
                              result.relevance.confidence, result.relevance.level))
    return out


def fit(looked: list[Looked]) -> dict:
    """The model's numbers, from the fitting part only."""
    from sklearn.linear_model import LogisticRegression

    part = [row for row in looked if not row.question.held_out and row.has_evidence]
    x = np.array([row.signals for row in part])
    y = np.array([row.question.answerable and row.first for row in part])
    mean, scale = np.nanmean(x, axis=0), np.nanstd(x, axis=0)  # over the lookups where a signal applies
    scale[scale == 0] = 1.0
    weights = _weights(part)
    model = LogisticRegression(C=1.0, max_iter=2000).fit(_standardised(x, mean, scale), y, sample_weight=weights)
    numbers = {"MEAN": mean, "SCALE": scale, "WEIGHTS": model.coef_[0], "INTERCEPT": float(model.intercept_[0])}
    confidence = _confidence(numbers, x)
    answerable = np.array([row.question.answerable for row in part])
    first = np.array([row.first for row in part])
    high = medium = 1.0
    for t in sorted(set(np.round(confidence, 6)), reverse=True):
        graded = answerable & (confidence >= t)
        if graded.sum() >= 10 and first[graded].mean() >= HIGH_PRECISION and \
                (confidence[~answerable] >= t).mean() <= HIGH_UNANSWERABLE:
            high = float(t)
        if (confidence[~answerable] >= t).mean() <= MEDIUM_UNANSWERABLE:
            medium = float(t)
    numbers.update(HIGH=high, MEDIUM=min(medium, high))
    return numbers


def _weights(part: list[Looked]) -> np.ndarray:
    """Each class weighs half; within a class, each source the same."""
    counts: dict[tuple[bool, str], int] = {}
    for row in part:
        key = (row.question.answerable, row.question.source)
        counts[key] = counts.get(key, 0) + 1
    sources = {answerable: sum(1 for a, _ in counts if a == answerable) for answerable in (True, False)}
    return np.array([1.0 / (sources[row.question.answerable] * counts[(row.question.answerable, row.question.source)])
                     for row in part]) * len(part) / 2


def _standardised(x: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(x - mean) / scale, a missing signal (NaN: margin with no next block) at 0, so it has no pull, as
    retrieval.lookup.confidence.estimate gives it none."""
    return np.nan_to_num((x - mean) / scale, nan=0.0)


def _confidence(numbers: dict, x: np.ndarray) -> np.ndarray:
    logit = numbers["INTERCEPT"] + _standardised(x, numbers["MEAN"], numbers["SCALE"]) @ numbers["WEIGHTS"]
    return 1.0 / (1.0 + np.exp(-logit))


def write(numbers: dict, looked: list[Looked]) -> str:
    """confidence_model.py's text."""
    fitted = sum(1 for row in looked if not row.question.held_out)

    def numbers_of(values) -> str:
        return "(\n    " + ",\n    ".join(f"{float(v):.6g}" for v in values) + ",\n)"

    names = "(\n    " + ",\n    ".join(repr(n) for n in SIGNALS) + ",\n)"
    return "\n".join([
        '"""The relevance confidence\'s fitted numbers, written by `python -m eval.fit_confidence`',
        f"on {date.today():%Y-%m-%d} from {fitted:,} questions of eval.answerability's fitting part",
        "(the held-out part was not used).",
        'Do not edit by hand: refit."""', "",
        f"SIGNALS = {names}", f"MEAN = {numbers_of(numbers['MEAN'])}", f"SCALE = {numbers_of(numbers['SCALE'])}",
        f"WEIGHTS = {numbers_of(numbers['WEIGHTS'])}", f"INTERCEPT = {numbers['INTERCEPT']:.6g}",
        f"HIGH = {numbers['HIGH']:.4f}  # confidence at or above: high",
        f"MEDIUM = {numbers['MEDIUM']:.4f}  # at or above: medium; below: low (the result abstains)", ""])


def report(numbers: dict, looked: list[Looked]) -> list[str]:
    """Both parts' figures under these numbers."""
    from sklearn.metrics import roc_auc_score

    lines = []
    for name, held in (("fitting part", False), ("held-out part", True)):
        part = [r for r in looked if r.question.held_out == held]
        c = _confidence(numbers, np.array([r.signals for r in part]))
        c[[not r.has_evidence for r in part]] = 0.0
        answerable = np.array([r.question.answerable for r in part])
        first, top5 = np.array([r.first for r in part]), np.array([r.top5 for r in part])
        high = c >= numbers["HIGH"]
        auroc_rows = (answerable & top5) | ~answerable
        lines.append(f"{name}: {answerable.sum()} answerable, {(~answerable).sum()} unanswerable; unanswerable graded "
                     f"high {high[~answerable].mean():.1%}; answerable graded high {high[answerable].mean():.1%}, a "
                     f"relevant page first in {first[answerable & high].mean():.1%} of them; high given to "
                     f"{high[answerable & first].mean():.1%} of those with a relevant page first; AUROC "
                     f"{roc_auc_score((answerable & top5)[auroc_rows], c[auroc_rows]):.3f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the numbers; do not write the model file")
    args = parser.parse_args(argv)
    shared = Path(os.environ.get("LOOKUP_KNOWLEDGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
    if not (shared / "hugo_docs").is_dir() or not (shared / "scifact").is_dir():
        print(f"error: the shared data is not at {shared}; set LOOKUP_KNOWLEDGE_SHARED_DATA", file=sys.stderr)
        return 2
    looked = look_up_all(shared)
    numbers = fit(looked)
    text = write(numbers, looked)
    print(text)
    print("\n".join(report(numbers, looked)))
    if not args.dry_run:
        MODEL.write_text(text)
        print(f"wrote {MODEL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
