"""Benchmark (not a test): how well the relevance grade tells answerable questions from unanswerable ones.
`python bench/answerability.py` (needs ../shared/data, or $LOOKUP_KNOWLEDGE_SHARED_DATA; `--held-out` for the
held-out part only; `--set l1_dense_model=onnx:PATH` and other settings: a model configuration, graded by its
fitted model, or by today's when none is fitted).

Asks every question of eval.answerability (answerable ones of the sample, the Hugo dev set and SciFact train;
unanswerable ones: the sample's own, off-topic questions, and each corpus's questions asked of the others) of
its knowledge base with the default settings (or `--set`'s), then prints per source: how often each level is given, for
answerable questions the share graded high, the precision of high (a relevant page first) and the share of
questions with a relevant first page that high reaches, and the AUROC of `relevance.confidence` between
answerable questions with a relevant page in the top 5 and the unanswerable ones of the same knowledge base.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval.fit_confidence import look_up_all  # noqa: E402
from retrieval import LookupConfig, parse_assignments  # noqa: E402

LEVELS = ("high", "medium", "low", "none")


def main(argv: list[str] | None = None) -> int:
    from sklearn.metrics import roc_auc_score

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held-out", action="store_true", help="only the held-out part")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a lookup setting (repeatable), e.g. l1_dense_model=onnx:PATH")
    args = parser.parse_args(argv)
    config = LookupConfig().with_overrides(parse_assignments(args.settings))
    shared = Path(os.environ.get("LOOKUP_KNOWLEDGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
    rows = [{"q": row.question, "level": row.level, "score": row.confidence, "first": row.first, "top5": row.top5}
            for row in look_up_all(shared, config) if row.question.held_out or not args.held_out]
    by_source = defaultdict(list)
    for row in rows:
        by_source[row["q"].source].append(row)
    print("| source | questions | high | medium | low | none | high given (answerable) | precision of high | "
          "high reaches (first right) | AUROC vs answerable |\n| --- |" + " ---: |" * 9)
    for source, group in sorted(by_source.items()):
        n = len(group)
        shares = [sum(r["level"] == level for r in group) / n for level in LEVELS]
        answerable = group[0]["q"].answerable
        high = [r for r in group if r["level"] == "high"]
        given = f"{len(high) / n:.0%}" if answerable else "-"
        precision = f"{sum(r['first'] for r in high) / len(high):.0%}" if answerable and high else "-"
        right = [r for r in group if r["first"]]
        reach = f"{sum(r['level'] == 'high' for r in right) / len(right):.0%}" if answerable and right else "-"
        auroc = "-"
        if not answerable:
            kb = group[0]["q"].kb
            positives = [r["score"] for r in rows if r["q"].kb == kb and r["q"].answerable and r["top5"]]
            scores = positives + [r["score"] for r in group]
            if positives:
                auroc = f"{roc_auc_score([1] * len(positives) + [0] * n, scores):.3f}"
        levels = " | ".join(f"{s:.0%}" for s in shares)
        print(f"| {source} | {n} | {levels} | {given} | {precision} | {reach} | {auroc} |")
    positives = [r["score"] for r in rows if r["q"].answerable and r["top5"]]
    negatives = [r["score"] for r in rows if not r["q"].answerable]
    print(f"\nAUROC of relevance.confidence, every answerable question with a relevant page in the top 5 "
          f"({len(positives)}) against every unanswerable one ({len(negatives)}): "
          f"{roc_auc_score([1] * len(positives) + [0] * len(negatives), positives + negatives):.3f}")
    unanswerable_high = sum(r["level"] == "high" for r in rows if not r["q"].answerable) / max(1, len(negatives))
    print(f"unanswerable questions graded high: {unanswerable_high:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
