"""Data of the facet tests (tests/test_eval_facets.py, tests/test_app_facets.py): a query file over the tiny
knowledge base whose rows carry their own fields, and a constructed pair of stored runs where B wins overall
but loses the `billing` category on every one of its questions."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pandas as pd

from eval.storage import save_run
from retrieval import TraceStore
from tests.kb_fixture import write_kb

# over tests/kb_fixture.py's pages: two styles of four questions, billing and alerting three each
FACETED_QUERIES = [
    {"_id": "k1", "text": "rotate an API token", "relevant": ["security/tokens.md"], "style": "keyword",
     "trap": False, "tags": ["token"], "note": "first"},
    {"_id": "k2", "text": "download invoices", "relevant": ["billing/invoices.md"], "style": "keyword",
     "trap": True, "note": "second"},
    {"_id": "k3", "text": "agent offline firewall port", "relevant": ["troubleshooting/agent-offline.md"],
     "style": "keyword", "trap": False, "note": "third"},
    {"_id": "k4", "text": "escalation when nobody acknowledges", "relevant": ["alerting/routing.md"],
     "style": "keyword", "trap": True, "note": "fourth"},
    {"_id": "g1", "text": "stop alerts from waking people during planned maintenance",
     "relevant": ["alerting/silences.md"], "style": "goal", "trap": False, "note": "fifth"},
    {"_id": "g2", "text": "how long are metrics kept on the free plan", "relevant": ["billing/plans.md"],
     "style": "goal", "trap": True, "note": "sixth"},
    {"_id": "g3", "text": "replace the credit card before the next charge", "relevant": ["billing/invoices.md"],
     "style": "goal", "trap": False, "note": "seventh"},
    {"_id": "g4", "text": "who is paged when an alert is not acknowledged", "relevant": ["alerting/routing.md"],
     "style": "goal", "trap": True, "note": "eighth"},
]


def write_faceted(root: Path) -> Path:
    """The tiny knowledge base under root/kb and FACETED_QUERIES as root/queries.jsonl."""
    write_kb(root / "kb")
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in FACETED_QUERIES), encoding="utf-8")
    return root


# the constructed pair: (category, style, questions, ndcg@10 of A, of B)
GROUPS = (("alerting", "goal", 30, 0.5, 1.0), ("billing", "keyword", 10, 1.0, 0.6))


def save_constructed_pair(store: TraceStore) -> tuple[str, str]:
    """Two stored runs on 40 questions: B gains 0.5 on each of 30 alerting questions and loses 0.4 on each of
    10 billing ones, so B wins overall (+0.275) and loses billing on every question. Returns (A, B)."""
    questions = [(category, style, value_a, value_b) for category, style, n, value_a, value_b in GROUPS
                 for _ in range(n)]
    for run_id, side in (("run-facets-a", 2), ("run-facets-b", 3)):
        rows = [{"run_id": run_id, "query_id": f"q{i:02d}", "position": i, "query": f"question {i}", "n_relevant": 1,
                 "relevant": [f"{category}/page.md"], "categories": [category], "answerable": True,
                 "question_set": "labels", "facets": {"style": style, "note": f"free text {i}"}}
                for i, (category, style, *_) in enumerate(questions)]
        metrics = pd.DataFrame([(run_id, f"q{i:02d}", "lookup", "ndcg@10", float(q[side]))
                                for i, q in enumerate(questions)],
                               columns=["run_id", "query_id", "system", "metric", "value"])
        mean = round(float(metrics["value"].mean()), 4)
        save_run(store, {"run_id": run_id, "created_at": datetime(2026, 12, 5, 8, side), "sweep_id": None,
                         "dataset": "constructed", "dataset_kind": "markdown", "dataset_path": "constructed",
                         "split": "all", "n_queries": len(questions), "top_k": 10, "config": {}, "overrides": {},
                         "seconds": 0.0, "dataset_info": {}, "metric_names": ["ndcg@10"],
                         "metrics": {"ndcg@10": mean}, "baseline": None, "diagnostics": {},
                         "library_versions": None}, pd.DataFrame(rows), metrics)
    return "run-facets-a", "run-facets-b"
