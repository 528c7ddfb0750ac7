"""Every complete run of one dataset side by side (a leaderboard, as ranx's `compare` tables): the settings that
differ among them, every metric they have, the BM25 baseline's primary metric, and a metric's trend over time.

The runs and their mean metrics come from eval.storage.list_runs (so a run scored against the judgements reads
as they score it now); each run's settings from its recorded `config`, compared as
retrieval.config.changed_settings compares them (an `svd_dims` of the default index is the default; a field a
run stored before it existed reads as its default). Runs made on other knowledge bases under the same dataset
name are kept, with their base in the `base` column and a warning, as `eval compare` warns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from retrieval import LookupConfig, TraceStore
from retrieval.config import DEFAULT_SVD_DIMS

from .compare import EXTERNAL
from .storage import COMPLETE, list_runs, run_bases

CREATED = "created"  # --sort created: newest first
BASELINE = "bm25"
LEAD = ("run_id", "created_at", "sweep_id", "label", "base")
LISTED = ("run_id", "status", "lookups", "created_at", "sweep_id", "dataset", "split", "n_queries", "top_k",
          "seconds", "overrides")  # list_runs' columns that are not metrics
LABEL_CHARS = 48


@dataclass(frozen=True, eq=False)
class Leaderboard:
    """The complete runs of `dataset` (and `split`, if given), one row each, sorted by `sort` (a metric,
    descending, or `created`, newest first); `settings` are the settings that differ among them, `metrics`
    every metric they have (NaN where a run lacks one), `notes` the warnings about what they were made on."""

    dataset: str
    split: str | None
    primary_metric: str
    sort: str
    metrics: tuple[str, ...]
    settings: tuple[str, ...]
    rows: pd.DataFrame
    notes: tuple[str, ...] = ()

    @property
    def baseline_column(self) -> str:
        """The column of the BM25 baseline's primary metric (present when some run stored a baseline)."""
        return f"{BASELINE}:{self.primary_metric}"

    def header(self) -> str:
        """One line: the dataset, how many runs, how they are sorted, which settings differ."""
        split = f" (split {self.split})" if self.split else ""
        order = "newest first" if self.sort == CREATED else f"by {self.sort}, best first"
        return (f"leaderboard of dataset {self.dataset}{split}: {len(self.rows)} complete run(s), {order}; "
                f"settings that differ: {', '.join(self.settings) or 'none'}")

    def trend(self, metric: str | None = None) -> pd.DataFrame:
        """`metric`'s value per run over time (oldest first; runs without it left out): run_id, created_at,
        label and the metric, for a chart of how the metric moved."""
        metric = metric or self.primary_metric
        if metric not in self.metrics:
            raise ValueError(f"no metric {metric!r} in the leaderboard of {self.dataset}; it has "
                             f"{', '.join(self.metrics)}")
        frame = self.rows[["run_id", "created_at", "label", metric]].dropna(subset=[metric])
        return frame.sort_values("created_at", kind="stable").reset_index(drop=True)

    def trend_lines(self, metric: str | None = None) -> list[str]:
        """The trend as text: first, last and best, then one line per run with its change from the one before."""
        metric = metric or self.primary_metric
        trend = self.trend(metric)
        if trend.empty:
            return [f"trend of {metric}: no run has it"]
        values = trend[metric]
        best = trend.loc[values.idxmax()]
        first, last = trend.iloc[0], trend.iloc[-1]
        lines = [f"trend of {metric} over {len(trend)} run(s): first {first[metric]:.4f} ({first['run_id']}), "
                 f"last {last[metric]:.4f} ({last['run_id']}), best {best[metric]:.4f} ({best['run_id']})"]
        for i, row in trend.iterrows():
            change = "" if i == 0 else f"  {row[metric] - values.iloc[i - 1]:+.4f}"
            lines.append(f"  {row['created_at']:%Y-%m-%d %H:%M}  {row['run_id']}  {row[metric]:.4f}{change}"
                         f"  {row['label']}")
        return lines

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as JSON-ready records (times in ISO 8601, NaN as null)."""
        return json.loads(self.rows.to_json(orient="records", date_format="iso"))

    def text(self) -> str:
        """The plain-text leaderboard: the header, an aligned table and the sorted metric's trend."""
        shown = self.rows.assign(created_at=self.rows["created_at"].dt.strftime("%Y-%m-%d %H:%M:%S"))
        table = shown.to_string(index=False, float_format=lambda v: f"{v:.4f}", na_rep="—")
        metric = self.primary_metric if self.sort == CREATED else self.sort
        return "\n".join([self.header(), "", table, "", *self.trend_lines(metric)])


def leaderboard(store: TraceStore, dataset: str, *, split: str | None = None, sort: str | None = None) -> Leaderboard:
    """The leaderboard of `dataset`'s complete runs (of `split`, if given) in `store`, sorted by `sort` (a metric,
    best first; `created`, newest first; default: the newest run's first metric); ValueError naming what the
    file holds when there is no such dataset, split or metric."""
    runs = runs_of(store, dataset, split)
    stored = _stored(store, runs["run_id"].tolist())
    metrics = _metric_names(runs, stored)
    primary = metrics[0]
    sort = sort or primary
    if sort != CREATED and sort not in metrics:
        raise ValueError(f"cannot sort by {sort!r}: the runs of {dataset} have the metrics {', '.join(metrics)}; "
                         f"or sort by {CREATED!r} (newest first)")
    configs = {r: _settings(stored.at[r, "config"]) for r in runs["run_id"]}
    differing = differing_settings([c for c in configs.values() if c])  # an imported run has none: not compared
    bases = run_bases(store, runs["run_id"].tolist()).set_index("run_id")["kb_fingerprint"]
    rows = pd.DataFrame({
        "run_id": runs["run_id"], "created_at": runs["created_at"], "sweep_id": runs["sweep_id"],
        "label": [label(o) for o in runs["overrides"]],
        "base": [_short(bases.get(r)) for r in runs["run_id"]]})
    if split is None and runs["split"].nunique(dropna=False) > 1:
        rows["split"] = runs["split"]
    for name in differing:
        rows[name] = [configs[r].get(name) for r in runs["run_id"]]
    rows["n_queries"] = runs["n_queries"]
    for name in metrics:
        rows[name] = runs[name].astype(float)
    baseline = [(stored.at[r, "baseline"] or {}).get(primary) for r in runs["run_id"]]
    if any(v is not None for v in baseline):
        rows[f"{BASELINE}:{primary}"] = pd.Series(baseline, index=rows.index, dtype=float)
    rows = _sorted(rows, sort)
    notes = _notes(dataset, rows, runs, split)
    return Leaderboard(dataset, split, primary, sort, tuple(metrics), tuple(differing), rows, tuple(notes))


def runs_of(store: TraceStore, dataset: str, split: str | None = None) -> pd.DataFrame:
    """list_runs' complete runs of `dataset` (and `split`), newest first; ValueError listing the datasets (or
    the dataset's splits) the file has when none match, or saying that none of its runs is complete."""
    runs = of_dataset(list_runs(store), dataset, split, str(store.path))
    complete = runs[runs["status"] == COMPLETE]
    if complete.empty:
        raise ValueError(f"dataset {dataset!r} has {len(runs)} run(s) but none is complete: resume or delete them "
                         "(`python -m eval runs --incomplete`)")
    return complete.reset_index(drop=True)


def of_dataset(runs: pd.DataFrame, dataset: str, split: str | None, where: str) -> pd.DataFrame:
    """The rows of `runs` (list_runs') of `dataset` (and `split`); ValueError listing the datasets (or the
    dataset's splits) `runs` has when none match (`where`: the trace file, for the message)."""
    if runs.empty:
        raise ValueError(f"{where} has no evaluation runs yet: run `python -m eval run --dataset DIR` first")
    names = sorted(runs["dataset"].dropna().unique())
    if dataset not in names:
        raise ValueError(f"no runs of dataset {dataset!r} in {where}; its datasets are {', '.join(names)} "
                         "(`python -m eval runs` lists the runs)")
    runs = runs[runs["dataset"] == dataset]
    if split is not None:
        splits = sorted(runs["split"].dropna().astype(str).unique())
        runs = runs[runs["split"] == split]
        if runs.empty:
            raise ValueError(f"dataset {dataset!r} has no runs of split {split!r}; its splits are "
                             f"{', '.join(splits) or 'none recorded'}")
    return runs


def differing_settings(configs: list[dict[str, Any]]) -> list[str]:
    """The settings (LookupConfig fields, in its order) whose values are not the same in every config."""
    names = list(LookupConfig().to_dict())
    return [n for n in names if len({json.dumps(c.get(n), sort_keys=True, default=str) for c in configs}) > 1]


def label(overrides: Any) -> str:
    """A run's short label: the settings it set (`--set`), `key=value, …`, or `defaults`; cut to a few words."""
    text = ", ".join(f"{k}={_value(v)}" for k, v in (overrides or {}).items()) or "defaults"
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def _value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, bool) or value is None else str(value)


def _settings(config: Any) -> dict[str, Any]:
    """A run's recorded config as comparable settings: every LookupConfig field (one not recorded: its
    default), `svd_dims` of the default index as unset."""
    defaults = LookupConfig().to_dict()
    if (config or {}).get("system") == EXTERNAL:  # an imported run (eval.imported) has no settings of ours
        return {}
    settings = {**defaults, **{k: v for k, v in (config or {}).items() if k in defaults}}
    if settings.get("svd_dims") == DEFAULT_SVD_DIMS:
        settings["svd_dims"] = None
    return settings


def _stored(store: TraceStore, run_ids: list[str]) -> pd.DataFrame:
    """The runs' recorded `config`, `baseline` and `metric_names` (JSON decoded), indexed by run id."""
    marks = ", ".join("?" * len(run_ids))
    frame = store.query(f"SELECT run_id, config, baseline, metric_names FROM eval_run WHERE run_id IN ({marks})",
                        run_ids)
    for name in ("config", "baseline", "metric_names"):
        frame[name] = frame[name].map(lambda v: json.loads(v) if isinstance(v, str) else None)
    return frame.set_index("run_id")


def _metric_names(runs: pd.DataFrame, stored: pd.DataFrame) -> list[str]:
    """Every metric the runs have, in the order their runs name them (newest first), then any other."""
    have = [c for c in runs.columns if c not in LISTED and runs[c].notna().any()]
    ordered = [m for r in runs["run_id"] for m in (stored.at[r, "metric_names"] or []) if m in have]
    names = list(dict.fromkeys([*ordered, *have]))
    if not names:
        raise ValueError(f"the runs of {runs['dataset'].iloc[0]} have no metrics stored")
    return names


def _sorted(rows: pd.DataFrame, sort: str) -> pd.DataFrame:
    """Newest first, then (for a metric) best first, ties kept newest first; runs without the metric last."""
    rows = rows.sort_values("created_at", ascending=False, kind="stable")
    if sort != CREATED:
        rows = rows.sort_values(sort, ascending=False, kind="stable", na_position="last")
    return rows.reset_index(drop=True)


def _short(fingerprint: Any) -> str | None:
    return fingerprint[:12] if isinstance(fingerprint, str) and fingerprint else None


def _notes(dataset: str, rows: pd.DataFrame, runs: pd.DataFrame, split: str | None) -> list[str]:
    """Warnings: runs on several knowledge bases, or (no split given) of several splits."""
    notes = []
    bases = rows["base"].dropna().value_counts()
    if len(bases) > 1:
        counted = ", ".join(f"{b}…: {n} run(s)" for b, n in bases.items())
        notes.append(f"warning: the runs of dataset {dataset} were made on {len(bases)} different knowledge bases "
                     f"(fingerprint {counted}; see the base column): metric differences may come from the pages, "
                     "not the settings")
    splits = runs["split"].dropna().astype(str).unique()
    if split is None and len(splits) > 1:
        notes.append(f"warning: the runs of dataset {dataset} are of {len(splits)} splits ({', '.join(splits)}), "
                     "scored on different questions: pass --split to rank one")
    return notes
