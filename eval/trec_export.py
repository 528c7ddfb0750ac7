"""A stored run as a TREC run file, and the analysts' judgements as TREC qrels (`report --format trec`,
`judgements --format trec`): our runs and marks taken to trec_eval, ranx, Pyserini or ir_measures."""

from __future__ import annotations

import json
import sys
from typing import Any

import pandas as pd

from retrieval import TraceStore

from . import judgements
from .scoring import ranked_scores
from .storage import load_run_row
from .trec import qrels_lines, run_lines


def run_file(store: TraceStore, run_id: str) -> str:
    """Every question of the run `run_id` (its whole ranking, in its order, with its scores) as a TREC run file
    tagged with the run id; rows stored before rankings were kept read them from the run's recorded lookups."""
    row = load_run_row(store, run_id)
    queries = store.query("SELECT q.query_id, q.ranked, q.ranked_scores, t.retrieval_details FROM eval_query q "
                          "LEFT JOIN tool_invocation t ON t.id = q.invocation_id WHERE q.run_id = ? "
                          "ORDER BY q.position", [row["run_id"]])
    rankings = [(str(r.query_id), *_ranking(r.ranked, r.ranked_scores, r.retrieval_details))
                for r in queries.itertuples(index=False)]
    return run_lines(rankings, row["run_id"])


def _ranking(ranked: Any, scores: Any, details: Any) -> tuple[list[str], list[float | None] | None]:
    if isinstance(ranked, str):
        return json.loads(ranked), json.loads(scores) if isinstance(scores, str) else None
    recorded = json.loads(details) if isinstance(details, str) else {}
    sources = list(recorded.get("evidence_sources") or [])
    return sources, ranked_scores(recorded, len(sources))  # as a run stores them (eval.scoring)


def judgements_file(store: TraceStore, fmt: str = "trec", *, rule: str = "latest") -> str:
    """The analysts' marks, one grade per query and page by `rule` (eval.agreement.RULES; `latest`: the latest
    mark), as TREC qrels (`trec`), BEIR qrels TSV (`beir`) or a queries.jsonl labelled set (`jsonl`); the query
    ids are the stable ids of the judged query texts. What a rule other than `latest` did goes to stderr."""
    from .agreement import consensus

    marks = consensus(store, rule)
    if marks.empty:
        if rule != "latest" and not judgements.latest(store).empty:
            raise ValueError(f"the {rule} rule leaves no page of {store.path}: {marks.attrs.get('note')}")
        raise ValueError(f"{store.path} holds no judgement yet; judge results in the app first")
    if rule != "latest":
        print(f"note: {marks.attrs['note']}", file=sys.stderr)
    if fmt == "trec":
        return qrels_lines((judgements.query_id(str(r.query)), str(r.source), float(r.grade))
                           for r in marks.itertuples(index=False))
    if fmt == "beir":
        return judgements.to_qrels_tsv(marks)
    if fmt == "jsonl":
        return judgements.to_queries_jsonl(marks)
    raise ValueError(f"unknown judgements format {fmt!r}; known formats: trec, beir, jsonl")


def judged_queries(store: TraceStore) -> pd.DataFrame:
    """The id each judged query text gets in the qrels, so the qrels can be matched to their questions."""
    texts = sorted(set(judgements.latest(store)["query"]))
    return pd.DataFrame({"query_id": [judgements.query_id(t) for t in texts], "query": texts})
