"""Stored runs for the Compare page: which runs may be compared, and the per-query table that leads with
what matters. Plain functions over the trace store and eval/ results, no Streamlit calls.

Two runs are comparable when they share the dataset (name and path) and the knowledge base (content
fingerprint recorded on their lookups); the run pickers only offer runs of one such group.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from appui.data.cells import no_none
from eval import storage
from eval.run_paths import run_paths
from retrieval import TraceStore

LEAD = ["query", "rank A → B", "Δ", "filter A", "filter B", "true category"]
UNKNOWN_BASE = "base not recorded"


class IncomparableRunsError(ValueError):
    """The two runs were made on different datasets or knowledge bases."""


def run_table(store: TraceStore, runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` (eval's list_runs) with dataset_path, kb_fingerprint and a `group` label naming dataset and base."""
    if runs.empty:
        return runs.assign(dataset_path=[], kb_fingerprint=[], group=[])
    paths = store.query("SELECT run_id, dataset_path, dataset_info FROM eval_run")
    paths["dataset_path"] = [_absolute(store, r) for r in paths.to_dict("records")]
    paths = paths.drop(columns=["dataset_info"])
    bases = storage.run_bases(store)
    table = runs.merge(paths, on="run_id", how="left").merge(bases, on="run_id", how="left")
    table["group"] = [_group(d, p, f) for d, p, f in zip(table["dataset"], table["dataset_path"],
                                                         table["kb_fingerprint"], strict=True)]
    return table


def settings_label(overrides: Any, none: str) -> str:
    """A run's settings as its label reads them: the overrides as JSON, with text as written (a recorded run's
    `mixed: false ×2, true ×1`, not `\\u00d72`), or `none` when it ran with the defaults."""
    return json.dumps(overrides, ensure_ascii=False) if overrides else none


def _absolute(store: TraceStore, row: dict[str, Any]) -> Any:
    """A run's dataset path made absolute: a run stored before runs recorded absolute paths (`data`) groups with
    one made since on the same folder (eval.run_paths finds where it was made)."""
    path = row.get("dataset_path")
    if not isinstance(path, str) or not path or Path(path).is_absolute():
        return path
    info = row.get("dataset_info")
    try:
        info = json.loads(info) if isinstance(info, str) else (info or {})
    except ValueError:
        info = {}
    return run_paths({**row, "dataset_info": info}, store).dataset or path


def _group(dataset: Any, path: Any, fingerprint: Any) -> str:
    base = f"base {str(fingerprint)[:10]}" if isinstance(fingerprint, str) and fingerprint else UNKNOWN_BASE
    return f"{dataset} · {path or '?'} · {base}"


def check_comparable(table: pd.DataFrame, run_a: str, run_b: str) -> None:
    """IncomparableRunsError naming both datasets/bases unless the two runs share a group."""
    groups = table.set_index("run_id")["group"]
    missing = [r for r in (run_a, run_b) if r not in groups.index]
    if missing:
        raise IncomparableRunsError(f"unknown run(s) {', '.join(missing)}")
    if groups[run_a] != groups[run_b]:
        raise IncomparableRunsError(f"run {run_a} is on {groups[run_a]} but run {run_b} is on {groups[run_b]}; "
                                    f"compare runs of one dataset and knowledge base")


def resolve_run(table: pd.DataFrame, text: str) -> str:
    """The stored run `text` names (its id or a unique prefix); IncomparableRunsError saying what is wrong."""
    text = text.strip()
    ids = table["run_id"].tolist()
    found = [r for r in ids if r.startswith(text)] if text else []
    if text in ids:
        return text
    if len(found) == 1:
        return found[0]
    if found:
        raise IncomparableRunsError(f"{text!r} starts {len(found)} runs ({', '.join(found[:3])}, …); type more of it")
    raise IncomparableRunsError(f"no stored run has the id {text!r}; the stored runs are listed above")


def deltas_table(metrics: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per metric: A, B, Δ, wins/ties/losses and significance in words."""
    from eval.compare import significance_words  # the comparison's one significance figure, worded as in reports

    rows = [{"metric": name, "A": m["mean_a"], "B": m["mean_b"], "Δ (B − A)": m["delta"],
             "wins / ties / losses": f"{m['wins']} / {m['ties']} / {m['losses']}",
             "significance": significance_words(m.get("p_randomization"), m["delta"])}
            for name, m in metrics.items()]
    return pd.DataFrame(rows)


def colour_delta(value: Any) -> str:
    """CSS for a delta cell: green for a gain, red for a loss."""
    if not isinstance(value, int | float) or pd.isna(value) or abs(value) <= 1e-12:
        return ""
    return "color: #1a7f37; font-weight: 600" if value > 0 else "color: #cf222e; font-weight: 600"


def colour_significant(row: pd.Series) -> list[str]:
    """CSS for one row of the deltas table: its Δ coloured only when the difference is significant (a gain of
    0.0004 that the test does not support is not shown as a win)."""
    significant = str(row.get("significance", "")).split(" (")[0].endswith(", significant")
    return [colour_delta(row[name]) if name == "Δ (B − A)" and significant else "" for name in row.index]


def tied_note(per_query: pd.DataFrame, primary: str) -> str | None:
    """'All N queries tie on ndcg@10' when no paired query moved (a chart of them is a flat line), else None."""
    column = per_query.get(f"{primary}_delta")
    if column is None or len(column) == 0 or (column.abs() > 1e-12).any():
        return None
    return f"All {len(column)} paired queries tie on {primary}: no query moved, so there is nothing to chart."


def pair_table(per_query: pd.DataFrame, primary: str, truth: pd.DataFrame) -> pd.DataFrame:
    """The comparison's per-query table led by query, rank A → B, Δ, filters A and B and the true category.

    `truth` is run A's per-query frame (query_id, relevant, categories); the other columns follow the lead.
    """
    frame = per_query.merge(truth.reindex(columns=["query_id", "relevant", "categories"]), on="query_id",
                            how="left")
    lead = pd.DataFrame({
        "query": frame["query"],
        "rank A → B": [f"{_rank(a)} → {_rank(b)}" for a, b in
                       zip(frame["first_relevant_rank_a"], frame["first_relevant_rank_b"], strict=True)],
        "Δ": frame[f"{primary}_delta"],
        "filter A": [_filter(d, c) for d, c in zip(frame["filter_decision_a"], frame["filter_category_a"],
                                                   strict=True)],
        "filter B": [_filter(d, c) for d, c in zip(frame["filter_decision_b"], frame["filter_category_b"],
                                                   strict=True)],
        "true category": [", ".join(c) if isinstance(c, list) and c else "—" for c in frame["categories"]],
    })
    rest = frame.drop(columns=["query"])
    return pd.concat([lead, rest], axis=1)


def relevant_pages(row: pd.Series) -> pd.DataFrame:
    """One paired question's relevant pages: each one's rank and the stage that lost it, in A and in B (from the
    runs' `relevant_stages`; empty for runs stored before they were attributed). A cell with nothing to show is
    an em dash, never "None": a rank, the page was not returned; a stage, the run did not record it."""
    a, b = row.get("relevant_stages_a"), row.get("relevant_stages_b")
    a, b = (a if isinstance(a, dict) else {}), (b if isinstance(b, dict) else {})
    rows = [{"relevant page": source, "rank A": (a.get(source) or {}).get("rank"),
             "stage A": (a.get(source) or {}).get("stage"), "rank B": (b.get(source) or {}).get("rank"),
             "stage B": (b.get(source) or {}).get("stage")} for source in sorted(set(a) | set(b))]
    return no_none(pd.DataFrame(rows, columns=["relevant page", "rank A", "stage A", "rank B", "stage B"]))


def _rank(value: Any) -> str:
    return "miss" if value is None or pd.isna(value) else str(int(value))


def _filter(decision: Any, category: Any) -> str:
    decision = "—" if decision is None or pd.isna(decision) else str(decision)
    return f"{decision} ({category})" if isinstance(category, str) and category else decision


def sorted_deltas(per_query: pd.DataFrame, primary: str) -> pd.DataFrame:
    """query_id, query and Δ sorted ascending with an `order` column: the Phoenix-style per-query chart."""
    frame = per_query[["query_id", "query", f"{primary}_delta"]].rename(columns={f"{primary}_delta": "delta"})
    frame = frame.sort_values(["delta", "query_id"], kind="stable").reset_index(drop=True)
    frame["order"] = range(1, len(frame) + 1)
    return frame
