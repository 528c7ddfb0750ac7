"""Where a stored run's dataset is: the paths its `eval_run` row recorded, made absolute.

A run records absolute paths (eval.datasets resolves them when it loads a dataset). A run stored before recorded
them as they were typed, relative to the folder the command ran in (`--dataset data`: `data`, `data/kb`), which
it did not record. Its lookups did record their knowledge base's absolute root (`tool_invocation.kb_path`), and
the run's `kb_path` names the same folder relatively, so that folder is the absolute root less the relative
path's last parts. A run without lookups (an imported one) or whose lookups are gone leaves it unknown: then the
paths are read from the working folder when they are there, and `RunPaths.note` says so; when they are not,
`RunPaths.problem` says plainly that the run's knowledge base is not found and how to fix it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PATH_KEYS = ("kb_path", "queries_file", "qrels_file", "unanswerable_file")  # dataset_info's paths besides `path`


@dataclass(frozen=True)
class RunPaths:
    """A run's dataset folder (`dataset`, absolute when it could be made so) and its `dataset_info` with every
    recorded path absolute; `note`: how relative paths were read; `problem`: why the run's files cannot be
    found (empty when they can)."""

    dataset: str | None
    info: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    problem: str = ""


def run_paths(row: Mapping[str, Any], store: Any = None) -> RunPaths:
    """The paths of the run whose `eval_run` row (JSON decoded) is `row`; `store` (the trace store it is in) lets a
    run stored with relative paths find the folder it was made in through its lookups."""
    info = dict(row.get("dataset_info") or {})
    path = row.get("dataset_path") or info.get("path")
    paths = {"path": path, **{key: info.get(key) for key in PATH_KEYS}}
    relative = {k: v for k, v in paths.items() if isinstance(v, str) and v and not Path(v).is_absolute()}
    if not relative:
        return RunPaths(path, info)
    folder = made_in(row, store)
    note = ""
    if folder is None:
        kb = str(info.get("kb_path") or path)
        if not Path(kb).exists():
            return RunPaths(path, info, problem=(
                f"the run's knowledge base is not found: the run recorded it as {kb!r}, relative to the folder the "
                f"run was made in, which it did not record (it was stored before runs recorded absolute paths), "
                f"and there is no {kb!r} in the working folder {Path.cwd()}; open the app (or run the command) from "
                f"the folder the run was made in, or make the run again"))
        folder = Path.cwd()
        note = (f"the run recorded its paths relative to the folder it was made in, which it did not record; read "
                f"from the working folder {folder}")
    absolute = {k: os.path.normpath(folder / v) for k, v in relative.items()}
    dataset = absolute.pop("path", path)
    info.update(absolute)
    if "path" in info:
        info["path"] = dataset
    return RunPaths(dataset, info, note)


def made_in(row: Mapping[str, Any], store: Any) -> Path | None:
    """The folder the run was made in, found through its lookups' absolute knowledge-base root and the run's
    relative `kb_path`; None when that cannot be known (no store, no lookups, no relative `kb_path`)."""
    info = row.get("dataset_info") or {}
    relative = info.get("kb_path") or row.get("dataset_path") or info.get("path")
    if store is None or not isinstance(relative, str) or not relative or Path(relative).is_absolute():
        return None
    tail = Path(os.path.normpath(relative)).parts
    if ".." in tail:
        return None
    roots = store.query("SELECT DISTINCT kb_path FROM (SELECT t.kb_path FROM eval_query q JOIN tool_invocation t "
                        "ON t.id = q.invocation_id WHERE q.run_id = ? UNION ALL SELECT kb_path FROM "
                        "tool_invocation WHERE run_id = ?) WHERE kb_path IS NOT NULL LIMIT 5",
                        [row["run_id"], row["run_id"]])
    for root in roots["kb_path"].tolist() if not roots.empty else []:
        for candidate in (Path(str(root)), Path(str(root)).parent):  # a BEIR base's root is its corpus.jsonl
            if candidate.is_absolute() and candidate.parts[-len(tail):] == tail:
                return Path(*candidate.parts[:-len(tail)])
    return None
