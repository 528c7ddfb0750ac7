"""Helpers of the fan-out tests (tests/test_eval_workers.py, tests/test_eval_dask.py): a labelled set with many
questions, the worker processes of a command, and what two runs must share to be the same run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from retrieval import TraceStore
from tests.eval_helpers import QUERIES, write_dataset

ROOT = Path(__file__).resolve().parents[1]
GRID = {"l0_filter": ["true", "false"], "l1_pool": ["20", "40"]}
VOLATILE = ("run_id", "invocation_id", "latency_ms")  # what differs between two runs of the same lookups


def write_many(root: Path, copies: int) -> Path:
    """tests/eval_helpers.py's dataset with its labelled questions repeated `copies` times (ids made unique)."""
    write_dataset(root)
    many = [{**q, "_id": f"{q['_id']}-{n}"} for n in range(copies) for q in QUERIES if q.get("relevant")]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in many) + "\n", encoding="utf-8")
    return root


def loky_workers(parent: int) -> list[int]:
    """The pids of the loky worker processes (joblib's local workers) that `parent` started."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent and b"popen_loky_posix" in cmdline:
            found.append(int(stat.parent.name))
    return sorted(found)


def ranked_sources(store: TraceStore, run_id: str) -> dict[str, list[str]]:
    """query_id -> the ranked sources of the run's stored lookup (its `tool_invocation` row)."""
    frame = store.query("SELECT query_id, retrieval_details->'evidence_sources' AS ranked FROM tool_invocation "
                        "WHERE run_id = ?", [run_id])
    return {q: json.loads(r) for q, r in frame.itertuples(index=False)}


def same_run(store: TraceStore, serial, parallel) -> None:
    """Raise AssertionError unless the two runs have the same metrics (bit for bit), the same per-query rows
    apart from ids and latencies, and the same ranked sources in each stored lookup."""
    assert parallel.metrics == serial.metrics and parallel.baseline == serial.baseline
    assert parallel.diagnostics["oracle"] == serial.diagnostics["oracle"]
    assert parallel.diagnostics["answerability"] == serial.diagnostics["answerability"]
    ours, theirs = (r.per_query.drop(columns=list(VOLATILE)) for r in (parallel, serial))
    # the scores, stored at 6 decimals, may differ in the last one: another process sums the LSA's floats in
    # another order (BLAS threads); the rankings, metrics and everything else are the same bit for bit
    for a, b in zip(ours.pop("ranked_scores"), theirs.pop("ranked_scores"), strict=True):
        assert a == pytest.approx(b, abs=2e-6)
    pd.testing.assert_frame_equal(ours, theirs)
    expected = ranked_sources(store, serial.run_id)
    questions = len(serial.per_query) + (0 if serial.unanswerable is None else len(serial.unanswerable))
    assert ranked_sources(store, parallel.run_id) == expected and len(expected) == questions


def stored_ids(store: TraceStore, run_id: str) -> set[str]:
    """The ids of the run's `tool_invocation` rows."""
    return set(store.query("SELECT id FROM tool_invocation WHERE run_id = ?", [run_id])["id"])
