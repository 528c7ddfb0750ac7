"""An external system's TREC run stored as a run of ours (`python -m eval import-run FILE --name NAME`).

Its questions are the dataset's: each is scored on the file's ranking for its id, in trec_eval's order
(eval.trec), with the same metrics, per-query rows and tie figures as a lookup run, so `eval compare`, the
Compare page and every report treat it like any other run (a production ranker against the lookup, or two
external systems). It made no lookups: the filter and lookup diagnostics say so, and its knowledge base is the
dataset's, by the content fingerprint lookups record, so the app groups it with the lookup runs of that base.

A question of the dataset the file does not rank is scored on an empty ranking (0), as trec_eval's `-c` does,
and named; a query id the dataset does not have is left out and named. A file none of whose query ids or
none of whose documents the dataset knows is refused: it belongs to another dataset or another id scheme.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from retrieval import TraceStore
from retrieval.kb import load_knowledge_base

from . import depth, judged
from . import metrics as metric_lib
from .compare import EXTERNAL
from .datasets import Dataset
from .defaults import DEFAULT_METRICS, LOOKUP
from .lifecycle import METRIC_COLUMNS
from .runs import RunResult, load_run
from .scoring import metric_means, query_facts
from .storage import save_run
from .ties import ties_summary
from .trec import read_run

KIND = EXTERNAL  # the `system` a stored imported run names in its config
EXAMPLES = 5
NO_LOOKUPS = "an imported run made no lookups"
NO_GRADES = ("an imported run has no relevance grades (a lookup's `relevance`): its unanswerable questions are "
             "named, not graded")


def import_run(store: TraceStore, dataset: Dataset, path: str | Path, *, name: str,
               metrics: Sequence[str] = DEFAULT_METRICS) -> RunResult:
    """Score the TREC run file at `path` on `dataset` and store it as the run `import-<name>-…`; returns it."""
    name = str(name).strip()
    if not name:
        raise ValueError("an imported run needs a name: pass --name, e.g. --name bm25-prod")
    parsed = metric_lib.parse_metrics(metrics)
    trec = read_run(path)
    kb = load_knowledge_base(dataset.kb_path, exclude_fields=dataset.exclude_fields,
                             exclude_paths=dataset.exclude_paths)
    known_ids = {q.id for q in dataset.queries}
    foreign = [qid for qid in trec.rankings if qid not in known_ids]
    if len(foreign) == len(trec.rankings):
        raise ValueError(f"none of the {len(foreign)} query ids in {path} (e.g. {', '.join(foreign[:3])}) is a "
                         f"question of dataset {dataset.name} (e.g. {', '.join(sorted(known_ids)[:3])}); pass the "
                         "dataset flags of the dataset the run was made for")
    docs = {doc for ranking in trec.rankings.values() for doc, _ in ranking}
    unknown = sorted(d for d in docs if kb.entry(d) is None)
    if len(unknown) == len(docs):
        raise ValueError(f"none of the {len(docs)} documents in {path} (e.g. {', '.join(unknown[:3])}) is a page "
                         f"of the knowledge base {dataset.kb_path} (e.g. {', '.join(e.source for e in kb.entries[:3])})"
                         "; document ids must be the pages' sources as the dataset's labels name them")

    def domains_of(source: str) -> tuple[str, ...]:
        entry = kb.entry(source)
        return entry.domains if entry is not None else ()

    created = datetime.now(timezone.utc)
    run_id = f"import-{_slug(name)}-{created:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    rows, metric_rows = [], []
    for position, query in enumerate(dataset.queries):
        ranked, scores = trec.ranked(query.id), trec.scores(query.id)
        details = {"evidence_sources": ranked, "evidence_scores": scores, "evidence_count": len(ranked)}
        rows.append({**query_facts(query, position, None, ranked, details, 0.0, domains_of, parsed),
                     "run_id": run_id})
        if query.answerable:
            metric_rows.extend((run_id, query.id, LOOKUP, m, v)
                               for m, v in metric_lib.score(ranked, query.qrels, parsed).items())
    missing = [q.id for q in dataset.queries if q.id not in trec.rankings]
    metric_frame = pd.DataFrame(metric_rows, columns=METRIC_COLUMNS)
    means = metric_means(metric_frame, LOOKUP, parsed)
    depth.add_marks(rows, judged.judged_qrels(store))  # an analyst's mark is a judgement too (Judged@10)
    per_query = pd.DataFrame(rows)
    scored = per_query[per_query["answerable"].astype(bool)]
    # no lookup: no filter, layer, latency or relevance grade to report (an unanswerable question is still named)
    diagnostics = {"queries": len(scored), "lookups": NO_LOOKUPS, "oracle": {"skipped": NO_LOOKUPS},
                   "missed_stages": {"skipped": NO_LOOKUPS}, "answerability": {"skipped": NO_GRADES},
                   "ties": ties_summary(list(scored["tie_ranges"]), means), depth.COLUMN: depth.mean_judged(scored),
                   "imported": _import_notes(path, trec.tags, trec.lines, missing, foreign, unknown)}
    top_k = max([metric_lib.depth(parsed), *(len(r) for r in trec.rankings.values())])
    config = {"system": KIND, "name": name, "run_file": str(Path(path).resolve()), "tags": list(trec.tags)}
    save_run(store, {
        "run_id": run_id, "created_at": created.replace(tzinfo=None), "sweep_id": None, "dataset": dataset.name,
        "dataset_kind": dataset.kind, "dataset_path": dataset.path, "split": dataset.split,
        "n_queries": len(dataset.queries), "top_k": top_k, "config": config, "overrides": {"system": name},
        "seconds": 0.0, "dataset_info": {**dataset.describe(), "kb_fingerprint": kb.fingerprint},
        "metric_names": [m.name for m in parsed], "metrics": means, "baseline": None, "diagnostics": diagnostics,
        "library_versions": None, "models": None}, per_query, metric_frame)
    return load_run(store, run_id)


def _import_notes(path: str | Path, tags: Sequence[str], lines: int, missing: list[str], foreign: list[str],
                  unknown: list[str]) -> dict[str, Any]:
    """What the import read and what it could not match, named rather than dropped."""
    return {"file": str(path), "tags": list(tags), "lines": lines,
            "questions_not_ranked": len(missing), "questions_not_ranked_examples": missing[:EXAMPLES],
            "queries_not_in_dataset": len(foreign), "queries_not_in_dataset_examples": foreign[:EXAMPLES],
            "documents_not_in_kb": len(unknown), "documents_not_in_kb_examples": unknown[:EXAMPLES]}


def import_sentence(notes: dict[str, Any] | None) -> str | None:
    """The import's notes in one line (None for a run that was not imported)."""
    if not notes:
        return None
    parts = [f"imported from {notes['file']} ({notes['lines']} lines, tag {', '.join(notes['tags'])})"]
    for key, words in (("questions_not_ranked", "question(s) the file does not rank, scored 0 (trec_eval -c)"),
                       ("queries_not_in_dataset", "query id(s) not in the dataset, left out"),
                       ("documents_not_in_kb", "document(s) not in the knowledge base")):
        if notes.get(key):
            parts.append(f"{notes[key]} {words}, e.g. {', '.join(notes[key + '_examples'])}")
    return "; ".join(parts)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "run"
