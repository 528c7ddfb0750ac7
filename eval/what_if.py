"""A comparison scored again with the analysts' marks: did its conclusions hold once the holes were judged?

Both runs' per-query metrics are recomputed for every paired question that has marks on its text: its labels
(eval.run_labels) merged with the marks (eval.judged.judged_qrels: the latest mark of each page; a mark
overrides a label of the same page), over the whole ranking its lookup recorded (`eval_query.invocation_id` ->
`tool_invocation.retrieval_details`, as eval.judged reads it; the stored top 10 when the trace row is gone).
The others keep their stored metrics. Then the same paired statistics as eval.compare. Nothing is stored: this
is a view, "what if judged", and the stored runs and their comparison stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from retrieval import TraceStore
from retrieval.export import json_object

from . import judged
from . import metrics as metric_lib
from .compare import PERMUTATIONS, SIGNIFICANCE, Comparison, paired_statistics, significance_words
from .reading import one_read
from .run_labels import run_labels
from .storage import load_per_query, load_run_row

TABLE = ["metric", "delta before", "p before", "delta after", "p after", "before", "after", "changed?"]


def outcome(p: float | None, delta: float | None) -> str:
    """A comparison's conclusion on one metric: `B better` or `B worse` (significant at SIGNIFICANCE), or `tie`."""
    if p is None or delta is None or pd.isna(p) or abs(delta) <= 1e-12 or p >= SIGNIFICANCE:
        return "tie"
    return "B better" if delta > 0 else "B worse"


@dataclass(frozen=True)
class Conclusion:
    """One metric before and after the marks: mean delta (B − A) and randomisation-test p, each side."""

    metric: str
    delta_before: float
    p_before: float
    delta_after: float
    p_after: float

    @property
    def changed(self) -> bool:
        """Whether the conclusion flipped (a significant win, loss or tie became another)."""
        return outcome(self.p_before, self.delta_before) != outcome(self.p_after, self.delta_after)


@dataclass(frozen=True, eq=False)
class WhatIf:
    """Runs A and B compared before and after the marks; `rescored` questions had marks on their text;
    `per_query` is the comparison's per-query table with the metrics after the marks."""

    run_a: str
    run_b: str
    conclusions: tuple[Conclusion, ...]
    rescored: int
    paired: int
    labels: str
    per_query: pd.DataFrame

    def table(self) -> pd.DataFrame:
        """Metric, delta and p before and after, both conclusions in words, and whether it changed (TABLE)."""
        rows = [[c.metric, c.delta_before, c.p_before, c.delta_after, c.p_after,
                 significance_words(c.p_before, c.delta_before), significance_words(c.p_after, c.delta_after),
                 "yes" if c.changed else "no"] for c in self.conclusions]
        return pd.DataFrame(rows, columns=TABLE)

    def changed(self) -> list[str]:
        """The metrics whose conclusion flipped."""
        return [c.metric for c in self.conclusions if c.changed]


@one_read
def what_if_judged(store: TraceStore, comparison: Comparison, *, permutations: int = PERMUTATIONS,
                   seed: int = 0, marks: Mapping[str, Mapping[str, float]] | None = None) -> WhatIf:
    """`comparison` (eval.compare.compare_runs, at the same `permutations` and `seed`) again with the marks:
    `marks` as qrels by query text (default: every annotator's, the latest mark of each page, judged_qrels;
    eval.agreement.flips passes one annotator's)."""
    names = list(comparison.metrics)
    parsed = metric_lib.parse_metrics(names)
    frames = {side: load_per_query(store, run) for side, run in (("a", comparison.run_a), ("b", comparison.run_b))}
    labels = run_labels(load_run_row(store, comparison.run_a), frames["a"], store)
    marks = judged.judged_qrels(store) if marks is None else marks
    table = comparison.per_query.copy()
    marked = table["query"].map(lambda q: bool(marks.get(str(q).strip())))
    for side, frame in frames.items():
        chosen = frame[frame["query_id"].isin(table.loc[marked, "query_id"])]
        ranked = rankings(store, chosen)
        for row in chosen.itertuples(index=False):
            qrels = {**labels.qrels.get(str(row.query_id), {}), **marks[str(row.query).strip()]}
            scores = metric_lib.score(ranked[str(row.query_id)], qrels, parsed)
            at = table.index[table["query_id"] == row.query_id]
            for name in names:
                table.loc[at, f"{name}_{side}"] = scores[name]
    conclusions = []
    for name in names:
        table[f"{name}_delta"] = table[f"{name}_b"] - table[f"{name}_a"]
        after = paired_statistics(table[f"{name}_a"], table[f"{name}_b"], permutations=permutations, seed=seed)
        before = comparison.metrics[name]
        conclusions.append(Conclusion(name, before["delta"], before["p_randomization"], after["delta"],
                                      after["p_randomization"]))
    return WhatIf(comparison.run_a, comparison.run_b, tuple(conclusions), int(marked.sum()), len(table), labels.source,
                  table)


def rankings(store: TraceStore, frame: pd.DataFrame) -> dict[str, list[str]]:
    """Each row's whole ranking by query id: as the run stored it (`eval_query.ranked`; an imported run has no
    lookup), else from its lookup's recorded evidence, else its stored top 10 (the trace row is gone)."""
    ids = [str(i) for i in frame["invocation_id"].dropna()]
    details = _details(store, ids)
    found = {}
    for row in frame.itertuples(index=False):
        kept = getattr(row, "ranked", None)
        if isinstance(kept, list):
            found[str(row.query_id)] = [str(s) for s in kept]
            continue
        stored = details.get(str(row.invocation_id))
        top = list(row.top_sources) if isinstance(row.top_sources, list) else []
        found[str(row.query_id)] = (judged.Lookup("", "", "", 0.0, stored).ranked if stored is not None else top)
    return found


def _details(store: TraceStore, ids: Iterable[str]) -> dict[str, dict]:
    ids = list(ids)
    if not ids:
        return {}
    frame = store.query(f"SELECT id, retrieval_details FROM tool_invocation WHERE id IN ({', '.join('?' * len(ids))})",
                        ids)
    return {str(i): json_object(d) for i, d in zip(frame["id"], frame["retrieval_details"], strict=True)}
