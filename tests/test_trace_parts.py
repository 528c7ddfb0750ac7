"""Trace rows as Parquet parts hive-partitioned by run: written whole, read by plain DuckDB as one table, and
loaded into `tool_invocation` once per id however often they are loaded."""

from __future__ import annotations

import duckdb
import pytest

from retrieval import lookup_knowledge
from retrieval.traces import load_parts, part_files, run_folder, write_part


def _lookups(index, run_id: str, queries: list[str]) -> list:
    recorded: list = []
    for n, query in enumerate(queries):
        lookup_knowledge(query, index=index, recorder=recorded.append, run_id=run_id, query_id=f"q{n}")
    return recorded


def test_a_part_is_a_hive_partition_plain_duckdb_reads_with_the_run_id(index, tmp_path):
    rows = _lookups(index, "run-a", ["rotate an API token", "silence alerts"])
    path = write_part(rows, tmp_path / "parts", "run-a", "part-1")
    assert path == tmp_path / "parts" / "run_id=run-a" / "part-1.parquet" and part_files(tmp_path / "parts", "run-a")
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")], "no temporary file is left"
    read = duckdb.sql(f"SELECT id, run_id, query_id, retrieval_details->>'$.retrieval_layer' AS layer FROM "
                      f"read_parquet('{tmp_path}/parts/*/*.parquet', hive_partitioning = true) ORDER BY query_id")
    assert [(r[0], r[1], r[2]) for r in read.fetchall()] == [(rows[0].id, "run-a", "q0"), (rows[1].id, "run-a", "q1")]
    assert write_part([], tmp_path / "parts", "run-a", "empty") is None


def test_loading_parts_twice_stores_each_lookup_once(index, store, tmp_path):
    first, second = _lookups(index, "run-b", ["invoice"]), _lookups(index, "run-b", ["token", "alerts"])
    write_part(first, tmp_path / "parts", "run-b", "part-1")
    write_part(second, tmp_path / "parts", "run-b", "part-2")
    write_part(_lookups(index, "run-c", ["other run"]), tmp_path / "parts", "run-c", "part-1")
    loaded = load_parts(store, tmp_path / "parts", "run-b")
    assert (loaded.parts, loaded.rows, loaded.inserted) == (2, 3, 3)
    assert load_parts(store, tmp_path / "parts", "run-b").inserted == 0
    stored = store.query("SELECT id, run_id, latency_ms FROM tool_invocation ORDER BY created_at")
    assert set(stored["id"]) == {r.id for r in first + second} and set(stored["run_id"]) == {"run-b"}
    assert stored["latency_ms"].notna().all()


def test_loading_only_the_scored_ids_leaves_a_retried_tasks_first_attempt_out(index, store, tmp_path):
    first_attempt = _lookups(index, "run-d", ["token", "alerts"])  # a worker died after writing this part
    retried = _lookups(index, "run-d", ["token", "alerts"])  # the scheduler ran the task again elsewhere
    write_part(first_attempt, tmp_path / "parts", "run-d", "part-1")
    write_part(retried, tmp_path / "parts", "run-d", "part-2")
    loaded = load_parts(store, tmp_path / "parts", "run-d", only={r.id for r in retried})
    assert (loaded.rows, loaded.inserted) == (4, 2)
    assert set(store.query("SELECT id FROM tool_invocation")["id"]) == {r.id for r in retried}


def test_a_run_id_that_is_not_a_plain_name_cannot_name_a_partition(tmp_path):
    with pytest.raises(ValueError, match="cannot name a partition folder"):
        run_folder(tmp_path, "../escape")
