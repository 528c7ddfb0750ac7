"""A stored run's labels again, with their grades: for the hole loop (eval.holes, eval.what_if), which needs to
know which pages the labels judge (grade 0 included) and to score rankings against labels merged with marks.

`eval_query` keeps a question's relevant pages (`relevant`, graded above 0) but not their grades nor the pages
graded 0, so the labels are read again from the run's dataset when it can be (a BEIR folder or a docs folder
with its query file, as recorded in `dataset_info`, relative paths of older runs made absolute by
eval.run_paths); otherwise (a known-item set, a replay, a dataset moved away) from `relevant`, each at grade 1,
and the result says so, with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .datasets import DatasetError, load_dataset
from .run_paths import run_paths

REREAD = ("beir", "markdown")  # dataset kinds whose labels can be read again from the recorded paths


@dataclass(frozen=True)
class RunLabels:
    """Each question's labels by query id ({page: grade}), where they came from, in words, and (`warning`) why they
    are only the run's stored relevant pages, when they are."""

    qrels: Mapping[str, Mapping[str, float]]
    source: str
    warning: str = ""  # when the labels fell back to the stored relevant pages: why, in a sentence


def stored_labels(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """The labels a run's query rows keep: each relevant page at grade 1 (grades and 0-graded pages are lost)."""
    found = {}
    for query_id, relevant in zip(frame["query_id"], frame["relevant"], strict=True):
        found[str(query_id)] = {str(s): 1.0 for s in relevant} if isinstance(relevant, list) else {}
    return found


def run_labels(row: Mapping[str, Any], frame: pd.DataFrame, store: Any = None) -> RunLabels:
    """The labels of the run whose `eval_run` row (JSON decoded) is `row` and whose per-query frame is `frame`:
    read again from its dataset when possible, else the stored relevant pages at grade 1, and then `warning` says
    why. `store` (the run's trace store) finds the folder a run stored with relative paths was made in."""
    stored = stored_labels(frame)
    info = row.get("dataset_info") or {}
    kind = row.get("dataset_kind") or info.get("kind")
    if kind not in REREAD:
        return _fallback(stored, f"its {kind or 'unknown'} dataset is not read again")
    paths = run_paths(row, store)
    info, path = paths.info, paths.dataset
    if paths.problem:
        return _fallback(stored, paths.problem)
    if not path or not Path(str(path)).exists():
        return _fallback(stored, f"its dataset is not found at {path}; was it moved or deleted? Put it back there, "
                                 "or make the run again from where it is now")
    try:
        dataset = load_dataset(path, split=None if kind == "beir" and not row.get("split") else row.get("split"),
                               kb_root=info.get("kb_path") if kind == "markdown" else None,
                               queries_file=info.get("queries_file") if kind == "markdown" else None,
                               qrels_file=info.get("qrels_file"))  # labels a qrels file gave (--qrels)
    except (DatasetError, OSError, ValueError) as exc:
        return _fallback(stored, f"its dataset could not be read again: {exc}")
    read = {q.id: dict(q.qrels) for q in dataset.queries}
    missing = [q for q in stored if q not in read]
    merged = {q: read.get(q, stored[q]) for q in stored}
    note = f"read again from {path}" + (f" ({paths.note})" if paths.note else "")
    if missing:
        note += f" ({len(missing)} question(s) not found there: their stored relevant pages at grade 1)"
    return RunLabels(merged, note)


def _fallback(stored: dict[str, dict[str, float]], why: str) -> RunLabels:
    """The stored relevant pages at grade 1, with why the labels were not read again, said as a warning."""
    warning = (f"The run's labels were not read again ({why}): its stored relevant pages stand in for them, each "
               "at grade 1, and the pages its labels grade 0 are not known, so they count as unjudged")
    return RunLabels(stored, f"the run's stored relevant pages, each at grade 1 ({why})", warning)
