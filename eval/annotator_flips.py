"""How a comparison's conclusions depend on who judged: the comparison scored again under each annotator's own
marks (eval.what_if, with that annotator's qrels over the labels), and the metrics whose verdict (B better,
B worse, tie) changes with the annotator."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from retrieval import TraceStore

from .annotators import by_annotator
from .compare import PERMUTATIONS, Comparison
from .reading import one_read
from .what_if import outcome, what_if_judged


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
        who = f"scored again under each annotator's marks ({', '.join(self.annotators)}, with the labels)"
        if not flipped:
            return f"{who}, every metric keeps its verdict: the conclusions do not depend on who judged"
        return (f"{who}, the verdict on {', '.join(flipped)} changes with the annotator: the conclusion depends on "
                "who judged")

    def to_dict(self) -> dict[str, Any]:
        return {"run_a": self.run_a, "run_b": self.run_b, "annotators": list(self.annotators),
                "flipped": self.flipped(), "sentence": self.sentence(), "reason": self.reason or None,
                "metrics": [{"metric": m.metric, "before": m.before, "flipped": m.flipped,
                             "verdicts": [v.__dict__ for v in m.verdicts]} for m in self.metrics]}


def annotators_on(store: TraceStore, queries: Collection[str]) -> list[str]:
    """The annotators with marks on any of the questions `queries` (texts), sorted."""
    wanted = {str(q).strip() for q in queries}
    marks = by_annotator(store)
    return sorted(set(marks.loc[marks["query"].isin(wanted), "who"]))


@one_read
def flips(store: TraceStore, comparison: Comparison, *, permutations: int = PERMUTATIONS,
          seed: int = 0) -> AnnotatorFlips:
    """`comparison` scored again under each annotator's own marks on its paired questions (eval.what_if with that
    annotator's qrels, over the labels), and the metrics whose verdict changes with the annotator."""
    texts = {str(q).strip() for q in comparison.per_query["query"]}
    marks = by_annotator(store)
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
