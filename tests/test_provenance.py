"""Every trace row names the knowledge base that answered: path, content fingerprint, sizes, index settings."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import pytest

from retrieval import TraceStore, lookup_knowledge
from retrieval.lookup import provenance
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces.schema import MIGRATIONS


def test_lookup_records_the_knowledge_base_as_typed_columns(index, store):
    result = lookup_knowledge("rotate an API token", index=index, recorder=store)
    row = store.query("SELECT kb_path, kb_fingerprint, kb_entries, kb_chunks, index_settings::VARCHAR AS s "
                      "FROM tool_invocation WHERE id = ?", [result.invocation_id]).iloc[0]
    assert row["kb_path"] == index.kb.root and row["kb_fingerprint"] == index.kb.fingerprint
    assert len(row["kb_fingerprint"]) == 64
    assert row["kb_entries"] == len(index.kb.entries) and row["kb_chunks"] == len(index.kb.chunks)
    assert json.loads(row["s"]) == {**index.settings(), "l1_available": True, "excluded_paths": []}
    assert json.loads(row["s"])["svd_dims"] == index.svd_dims and json.loads(row["s"])["l1_dimensions"] > 0


def test_failed_validation_still_records_the_knowledge_base(index, store):
    with pytest.raises(ValueError):
        lookup_knowledge("   ", index=index, recorder=store)
    row = store.query("SELECT status, kb_fingerprint FROM tool_invocation").iloc[0]
    assert row["status"] == "error" and row["kb_fingerprint"] == index.kb.fingerprint


def test_provenance_is_computed_once_per_index(index):
    assert provenance.of_index(index) is provenance.of_index(index)


def test_v1_trace_file_gains_the_provenance_columns_and_keeps_its_rows(tmp_path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TIMESTAMP)")
    for statement in MIGRATIONS[0][1]:
        con.execute(statement)
    con.execute("INSERT INTO schema_version VALUES (1, now()::TIMESTAMP)")
    con.execute("INSERT INTO tool_invocation (id, created_at, tool_name, query, status) "
                "VALUES ('old', now()::TIMESTAMP, 'lookup_knowledge', 'q', 'ok')")
    con.close()
    store = TraceStore(path)
    store.record(ToolInvocation("lookup_knowledge", "q", {}, "ok", 1.0, {}, {}, id="new", knowledge_base={
        "kb_path": "/kb", "kb_fingerprint": "abc", "kb_entries": 3, "kb_chunks": 7,
        "index_settings": {"svd_dims": 64}}))
    rows = store.query("SELECT id, kb_path, kb_entries, kb_chunks, index_settings::VARCHAR AS s "
                       "FROM tool_invocation ORDER BY id DESC").set_index("id")
    assert rows.loc["new", "kb_path"] == "/kb" and pd.isna(rows.loc["old", "kb_path"])
    assert rows.loc["new", "kb_entries"] == 3 and rows.loc["new", "kb_chunks"] == 7
    assert json.loads(rows.loc["new", "s"]) == {"svd_dims": 64}
