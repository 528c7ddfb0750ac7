"""Fit the relevance confidence: `python -m eval.fit_confidence` (needs the shared data; see eval.answerability).

Looks up every question of eval.answerability with the default settings (or those of `--set`), keeps each
lookup's signals (`relevance.signals`), and fits, on the fitting part only, a logistic regression
(scikit-learn) of "the first page is a relevant one" (false for every unanswerable question), weighted so
that answerable and unanswerable questions weigh the same and every source weighs the same within them. The
thresholds come from the fitting part too: `high` from the lowest confidence at which at least 93% of
answerable questions have a relevant first page and at most 2% of unanswerable ones reach it; `medium`
(below it: low, and the result abstains) from the lowest at which at most 3% of unanswerable ones reach it.
Writes the numbers to retrieval/lookup/confidence_model.py (`--dry-run`: prints them only) and reports both
parts.

With a contextual model part on (`--set l1_dense_model=onnx:PATH`, `--set rerank_model=...`), the signals
include that part's and the numbers go to retrieval/lookup/confidence_models/<key>.json, the key naming the
models by fingerprint (retrieval.lookup.grading), which lookups of that configuration are graded by.
`--loso` fits nothing to ship: it validates the procedure source by source (eval.loso_confidence).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np

from eval.answerability import LabelledQuestion, knowledge_bases, question_sets
from eval.loso_confidence import validate
from retrieval import LookupConfig, lookup_knowledge, open_index, parse_assignments
from retrieval.lookup import (
    CONFIDENCE_MODELS,
    SIGNALS,
    ConfidenceModel,
    ModelConfiguration,
    confidence_model_path,
    configured_models,
    prepare_models,
)

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
    confidence: float = 0.0  # as the lookup graded it (its configuration's fitted model, else today's)
    level: str = "none"
    semantic: bool = True  # L1 found the first page (L0-only evidence is graded low whatever the model says)


def look_up_all(shared: Path, config: LookupConfig | None = None) -> list[Looked]:
    """Every labelled question looked up on its knowledge base, with `config` (default settings without it);
    each row's signals are those a model for the config's models weighs (`signal_names`), in that order."""
    config = config or LookupConfig()
    names = signal_names(config)
    questions = question_sets(shared)
    bases = knowledge_bases(shared)
    out = []
    for kb in sorted({q.kb for q in questions}):
        index = open_index(bases[kb])
        prepare_models(index, config)  # the dense part's vectors, made (or read from the store) once per base
        for q in (q for q in questions if q.kb == kb):
            result = lookup_knowledge(q.text, index=index, config=config)
            sources = [b.source for b in result.evidence_blocks]
            signals = result.relevance.signals
            vector = signals.vector(names) if signals is not None else (0.0,) * len(names)
            out.append(Looked(q, vector, bool(sources) and sources[0] in q.relevant,
                              any(s in q.relevant for s in sources[:5]), bool(sources),
                              result.relevance.confidence, result.relevance.level,
                              result.relevance.semantic_support or not sources))
    return out


def signal_names(config: LookupConfig) -> tuple[str, ...]:
    """The signals a model for `config` weighs: SIGNALS, plus each model part's when one is on (loads them)."""
    return configured_models(config).signals


def fit(looked: list[Looked]) -> dict:
    """The model's numbers, from the fitting part only."""
    return fit_rows([row for row in looked if not row.question.held_out and row.has_evidence])


def fit_rows(part: list[Looked]) -> dict:
    """The model's numbers and thresholds fitted on `part` (rows with evidence)."""
    from sklearn.linear_model import LogisticRegression

    x = np.array([row.signals for row in part])
    y = np.array([row.question.answerable and row.first for row in part])
    mean, scale = np.nanmean(x, axis=0), np.nanstd(x, axis=0)  # over the lookups where a signal applies
    scale[scale == 0] = 1.0
    weights = _weights(part)
    model = LogisticRegression(C=1.0, max_iter=2000).fit(_standardised(x, mean, scale), y, sample_weight=weights)
    numbers = {"MEAN": mean, "SCALE": scale, "WEIGHTS": model.coef_[0], "INTERCEPT": float(model.intercept_[0])}
    confidence = confidence_of(numbers, x)
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


def confidence_of(numbers: dict, x: np.ndarray) -> np.ndarray:
    """The confidence under `numbers` (fit's) of each row of signals `x`."""
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
        c = confidence_of(numbers, np.array([r.signals for r in part]))
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


def fitted_model(numbers: dict, configuration: ModelConfiguration) -> ConfidenceModel:
    """`numbers` as the model a lookup of `configuration` is graded by, rounded as the shipped files hold them
    (6 significant digits; thresholds to 4 decimals, as confidence_model.py)."""
    def rounded(values) -> tuple[float, ...]:
        return tuple(float(f"{float(v):.6g}") for v in values)

    return ConfidenceModel(configuration.signals, rounded(numbers["MEAN"]), rounded(numbers["SCALE"]),
                           rounded(numbers["WEIGHTS"]), float(f"{numbers['INTERCEPT']:.6g}"),
                           round(numbers["HIGH"], 4), round(numbers["MEDIUM"], 4), configuration.key)


MODEL_SETTINGS = ("l1_dense_model", "l1_dense_weight", "l1_dense_norm", "l1_dense_pool", "rerank_model",
                  "rerank_top", "rerank_weight")  # recorded in a configuration's file: what it was fitted under


def model_file(model: ConfidenceModel, looked: list[Looked], config: LookupConfig) -> str:
    """A model configuration's file (retrieval/lookup/confidence_models/<key>.json): the model's numbers, and
    how and on what it was fitted (the settings of its model parts, the date, the questions)."""
    settings = config.to_dict()
    sets = " ".join(f"--set {k}={settings[k]}" for k in MODEL_SETTINGS if settings[k] != getattr(LookupConfig(), k))
    about = {"written_by": f"python -m eval.fit_confidence {sets}", "fitted_on": f"{date.today():%Y-%m-%d}",
             "questions": sum(1 for row in looked if not row.question.held_out),
             "note": "eval.answerability's fitting part only (the held-out part was not used); do not edit by hand: "
                     "refit", "settings": {k: settings[k] for k in MODEL_SETTINGS}}
    fields = {**model.to_dict(), **about}
    return "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items()) \
        + "\n}\n"  # a key a line, each list on its line: a refit's diff shows which numbers moved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the numbers; do not write the model file")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a lookup setting; l1_dense_model or rerank_model fits that model configuration's file")
    parser.add_argument("--loso", action="store_true", help="leave-one-source-out validation only (writes nothing)")
    parser.add_argument("--json", action="store_true", help="with --loso: the table as JSON")
    parser.add_argument("--out", type=Path, help=f"folder of a model configuration's file ({CONFIDENCE_MODELS})")
    args = parser.parse_args(argv)
    shared = Path(os.environ.get("LOOKUP_KNOWLEDGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
    if not (shared / "hugo_docs").is_dir() or not (shared / "scifact").is_dir():
        return _error(f"the shared data is not at {shared}; set LOOKUP_KNOWLEDGE_SHARED_DATA")
    try:
        config = LookupConfig().with_overrides(parse_assignments(args.settings))
        configuration = configured_models(config)
    except ValueError as exc:  # a bad setting, or retrieval.models.ModelError
        return _error(str(exc))
    if args.settings and configuration.key == ModelConfiguration().key:
        return _error("--set fits a model configuration: set l1_dense_model or rerank_model (today's model is "
                      "fitted without --set)")
    if args.json and not args.loso:
        return _error("--json is for --loso's table")
    looked = look_up_all(shared, config)
    if args.loso:
        result = validate(looked, fit_rows, confidence_of, configuration.key)
        print(json.dumps(result.to_dict(), indent=1, ensure_ascii=False) if args.json else result.render())
        return 0
    numbers = fit(looked)
    if configuration.key == ModelConfiguration().key:
        text, target = write(numbers, looked), MODEL
    else:
        text = model_file(fitted_model(numbers, configuration), looked, config)
        target = confidence_model_path(configuration.key, args.out or CONFIDENCE_MODELS)
    print(text)
    print("\n".join(report(numbers, looked)))
    if not args.dry_run:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    return 0


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
