"""Paired comparison of two stored runs: means, deltas, wins/ties/losses, significance, per-query losses.

Queries are paired by `query_id`; a delta is B - A, so a loss is a query where run B scores below run A.
Significance: a two-sided paired randomisation test (random sign flips of the per-query differences) and
scipy's paired t-test. Runs made with different library versions are compared, with a warning
(`library_diff`, `library_notes()`; eval.versions): the libraries may have moved the metrics too; so are runs
whose settings name the same model but which loaded other weights (`model_notes()`; eval.model_notes).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from retrieval import TraceStore
from retrieval.config import DEFAULT_SVD_DIMS

from .attribution import stage_moves
from .facets import FacetBreakdown, facet_breakdown
from .model_notes import model_notes
from .reading import one_read
from .storage import load_per_query, load_run_row, run_bases
from .versions import WORKERS_KEY, VersionNote, library_diff, recorded, version_notes

PERMUTATIONS = 10_000
FACTS = ("filter_decision", "filter_category", "first_relevant_rank", "retrieval_layer", "filter_changed",
         "relevant_stages")


@dataclass(frozen=True, eq=False)
class Comparison:
    """Run A against run B; `per_query` is sorted by the primary metric's delta, largest loss first.
    `library_versions` are each run's recorded versions (None: not recorded), `library_diff` the libraries
    whose versions differ ({name: [A, B]}), `worker_versions` each run's workers' other versions (or None)."""

    run_a: str
    run_b: str
    primary_metric: str
    metrics: dict[str, dict[str, Any]]
    per_query: pd.DataFrame
    config_diff: dict[str, list[Any]]
    datasets: tuple[str, str]
    unpaired: dict[str, int]
    library_diff: dict[str, list[Any]] = field(default_factory=dict)
    library_versions: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)
    worker_versions: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)
    kb_fingerprints: tuple[str | None, str | None] = (None, None)  # each run's knowledge base (None: no lookups)
    answerability: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)  # eval.abstention's, per run
    stage_moves: dict[str, Any] | None = None  # eval.attribution.stage_moves: the stages that moved from A to B
    facets: FacetBreakdown | None = None  # eval.facets: every metric by category and by the questions' fields
    models: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)  # each run's (eval_run.models)

    def library_notes(self) -> list[VersionNote]:
        """A warning when the runs' library versions differ, a note when a run did not record them."""
        return version_notes(self.run_a, self.run_b, self.library_versions, self.library_diff, self.worker_versions)

    def base_notes(self) -> list[VersionNote]:
        """A warning when the runs were made on different datasets or knowledge bases: the app refuses such a
        pair; the CLI compares it, saying so."""
        notes = []
        if self.datasets[0] != self.datasets[1]:
            notes.append(VersionNote("warning", f"runs were made on different datasets ({self.datasets[0]} vs "
                                                f"{self.datasets[1]}; A vs B): only the queries they share are "
                                                "paired"))
        a, b = self.kb_fingerprints
        if a and b and a != b:
            notes.append(VersionNote("warning", f"runs were made on different knowledge bases (fingerprint "
                                                f"{a[:12]} vs {b[:12]}; A vs B): metric differences may come from "
                                                "the pages, not the settings"))
        return notes

    def model_notes(self) -> list[VersionNote]:
        """A warning per model both runs name by the same spec but loaded with other weights."""
        return model_notes(self.models)

    def notes(self) -> list[VersionNote]:
        """Every warning and note about what the two runs were made with: bases first, then libraries, then
        models."""
        return [*self.base_notes(), *self.library_notes(), *self.model_notes()]

    def losses(self, limit: int = 10) -> pd.DataFrame:
        """The queries where B lost most on the primary metric."""
        delta = self.per_query[f"{self.primary_metric}_delta"]
        return self.per_query[delta < 0].head(limit)

    def to_dict(self, loss_limit: int = 10) -> dict[str, Any]:
        keep = ["query_id", "query", f"{self.primary_metric}_a", f"{self.primary_metric}_b",
                f"{self.primary_metric}_delta", *(f"{c}_{s}" for c in FACTS for s in "ab")]
        losses = self.losses(loss_limit).reindex(columns=keep)
        return {"run_a": self.run_a, "run_b": self.run_b, "datasets": list(self.datasets),
                "paired_queries": len(self.per_query), "unpaired": self.unpaired,
                "config_diff": self.config_diff, "primary_metric": self.primary_metric, "metrics": self.metrics,
                "losses": _records(losses), "library_diff": self.library_diff,
                "library_versions": list(self.library_versions),
                "library_notes": [note.line() for note in self.library_notes()],
                "kb_fingerprints": list(self.kb_fingerprints), "notes": [note.line() for note in self.notes()],
                "answerability": list(self.answerability), "stage_moves": self.stage_moves,
                "models": list(self.models),
                "facets": self.facets.to_dict() if self.facets else None}


@one_read
def compare_runs(store: TraceStore, run_a: str, run_b: str, *, metrics: list[str] | None = None,
                 permutations: int = PERMUTATIONS, seed: int = 0, facets: Sequence[str] | None = None) -> Comparison:
    """Compare two runs stored in `store` (ids or unique prefixes) on the queries they share, each metric broken
    down by `facets` (eval.facets; None: category and every eligible field of the questions; empty: none)."""
    row_a, row_b = load_run_row(store, run_a), load_run_row(store, run_b)
    names = metrics or [m for m in row_a["metric_names"] if m in row_b["metric_names"]]
    if not names:
        raise ValueError(f"runs {row_a['run_id']} and {row_b['run_id']} share no metric")
    frame_a, frame_b = load_per_query(store, row_a["run_id"]), load_per_query(store, row_b["run_id"])
    missing = [m for m in names if m not in frame_a or m not in frame_b]
    if missing:
        raise ValueError(f"metric(s) {missing} not stored for both runs; stored: {', '.join(row_a['metric_names'])}")
    paired = frame_a.merge(frame_b, on="query_id", suffixes=("_a", "_b"))
    summary = {m: paired_statistics(paired[f"{m}_a"], paired[f"{m}_b"], permutations=permutations, seed=seed)
               for m in names}
    table = _per_query_table(paired, names)
    breakdown = None if facets is not None and not facets else facet_breakdown(
        paired, names, {m: s["delta"] for m, s in summary.items()},
        lambda diff: randomization_test(diff, permutations=permutations, seed=seed), fields=facets, alpha=SIGNIFICANCE)
    unpaired = {"only_in_a": len(frame_a) - len(paired), "only_in_b": len(frame_b) - len(paired)}
    versions = (recorded(row_a.get("library_versions")), recorded(row_b.get("library_versions")))
    workers = tuple((row.get("diagnostics") or {}).get(WORKERS_KEY) or None for row in (row_a, row_b))
    return Comparison(row_a["run_id"], row_b["run_id"], names[0], summary, table,
                      _config_diff(row_a["config"], row_b["config"]), (row_a["dataset"], row_b["dataset"]), unpaired,
                      library_diff(*versions), versions, workers,
                      _kb_fingerprints(store, row_a["run_id"], row_b["run_id"]),
                      tuple((row.get("diagnostics") or {}).get("answerability") for row in (row_a, row_b)),
                      stage_moves(frame_a, frame_b), breakdown,
                      tuple(row.get("models") if isinstance(row.get("models"), dict) else None
                            for row in (row_a, row_b)))


def _kb_fingerprints(store: TraceStore, run_a: str, run_b: str) -> tuple[str | None, str | None]:
    """The knowledge base each run's lookups were made on (None: a run with none)."""
    found = run_bases(store, [run_a, run_b])
    bases = {r: f for r, f in zip(found["run_id"], found["kb_fingerprint"], strict=True) if isinstance(f, str)}
    return bases.get(run_a), bases.get(run_b)


def paired_statistics(a: pd.Series | np.ndarray, b: pd.Series | np.ndarray, *, permutations: int = PERMUTATIONS,
                      seed: int = 0) -> dict[str, Any]:
    """Means, mean delta (B - A), wins/ties/losses of B, randomisation-test and paired t-test p-values."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = b - a
    return {"mean_a": _round(a.mean()), "mean_b": _round(b.mean()), "delta": _round(diff.mean()),
            "wins": int((diff > 1e-12).sum()), "ties": int((np.abs(diff) <= 1e-12).sum()),
            "losses": int((diff < -1e-12).sum()), "n": int(diff.size),
            "p_randomization": _round(randomization_test(diff, permutations=permutations, seed=seed)),
            "p_ttest": _round(paired_ttest(a, b))}


def randomization_test(diff: np.ndarray, *, permutations: int = PERMUTATIONS, seed: int = 0) -> float:
    """Two-sided p of the mean paired difference under random sign flips: (hits + 1) / (permutations + 1)."""
    diff = np.asarray(diff, dtype=float)
    if diff.size == 0 or not np.any(np.abs(diff) > 1e-12):
        return 1.0
    observed = abs(diff.mean())
    rng = np.random.default_rng(seed)
    hits, left = 0, permutations
    while left > 0:  # in blocks, so memory stays small on large query sets
        size = min(left, 1000)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, diff.size))
        hits += int((np.abs(signs @ diff / diff.size) >= observed - 1e-12).sum())
        left -= size
    return (hits + 1) / (permutations + 1)


def paired_ttest(a: np.ndarray, b: np.ndarray) -> float:
    """scipy's two-sided paired t-test; identical runs give 1, a constant non-zero shift gives 0."""
    diff = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if diff.size < 2 or np.allclose(diff, diff[0]):
        return 1.0 if diff.size == 0 or abs(diff[0]) <= 1e-12 else 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_rel(b, a).pvalue)


def _per_query_table(paired: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    columns: dict[str, Any] = {"query_id": paired["query_id"], "query": paired["query_a"]}
    for name in names:
        columns[f"{name}_a"], columns[f"{name}_b"] = paired[f"{name}_a"], paired[f"{name}_b"]
        columns[f"{name}_delta"] = paired[f"{name}_b"] - paired[f"{name}_a"]
    for fact in FACTS:
        for side in "ab":
            column = f"{fact}_{side}"  # runs stored before a fact existed lack its column
            columns[column] = paired[column] if column in paired else pd.Series(None, index=paired.index, dtype=object)
    table = pd.DataFrame(columns)
    order = [f"{n}_delta" for n in names]
    return table.sort_values(order + ["query_id"], kind="stable").reset_index(drop=True)


def _config_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, list[Any]]:
    """The settings that differ; an unset `svd_dims` and the default index's are the same index. An imported
    run (eval.imported) has no settings of ours: the difference is the system."""
    if EXTERNAL in (a.get("system"), b.get("system")):
        systems = [f"{c['system']} {c.get('name')}" if c.get("system") == EXTERNAL else "lookup" for c in (a, b)]
        return {"system": systems} if systems[0] != systems[1] else {}
    a, b = ({**c, "svd_dims": c.get("svd_dims") or DEFAULT_SVD_DIMS} if "svd_dims" in c else c for c in (a, b))
    return {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    rows = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    return [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()} for row in rows]


def _round(value: float) -> float:
    return round(float(value), 6)


EXTERNAL = "external"  # the `system` in an imported run's config (eval.imported)
SIGNIFICANCE = 0.05  # p below this reads "significant"


def significance_words(p: float | None, delta: float | None, *, label: str = "p") -> str:
    """The one significance figure of a comparison, in words, wherever it is shown (the app, reports):
    the two-sided paired randomisation test's p, e.g. 'B better, significant (p = 0.003)', 'no difference';
    `label` names the p the words use where a table shows more than one ('Holm p = 1')."""
    if p is None or delta is None or pd.isna(p):
        return "not measured"
    if abs(delta) <= 1e-12:
        return "no difference"
    side = "B better" if delta > 0 else "B worse"
    verdict = "significant" if p < SIGNIFICANCE else "not significant"
    return f"{side}, {verdict} ({label} = {p:.3g})"
