"""Every trace row names the knowledge base that answered: path, content fingerprint, sizes, index settings; and the
models its settings name (the dense part's, the reranker's), as every evaluation run does."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import pytest

from eval.cli import main as eval_main
from eval.compare import compare_runs
from eval.reports import render
from eval.runs import load_run, run_evaluation
from retrieval import LookupConfig, TraceStore, lookup_knowledge
from retrieval.lookup import provenance
from retrieval.lookup.invocation import ToolInvocation
from retrieval.models import load_encoder, load_reranker
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


def _recorded_models(store: TraceStore, invocation_id: str) -> dict:
    frame = store.query("SELECT config->'models' AS m FROM tool_invocation WHERE id = ?", [invocation_id])
    return json.loads(frame["m"].iloc[0])


def test_a_trace_row_records_each_model_its_settings_name_with_the_weights_hash(index, store):
    config = LookupConfig(l1_dense_model="hash:32", rerank_model="hash")
    result = lookup_knowledge("rotate an API token", index=index, config=config, recorder=store)
    models = _recorded_models(store, result.invocation_id)
    assert models == {"dense": load_encoder("hash:32").info.to_dict(), "rerank": load_reranker("hash").info.to_dict()}
    assert models["dense"]["name"] == "hash:32" and models["dense"]["backend"] == "hash"
    assert len(models["dense"]["weights_sha256"]) == 64 and len(models["rerank"]["fingerprint"]) == 16
    # the settings themselves are recorded as they were, beside what they resolved to
    stored = store.query("SELECT config FROM tool_invocation WHERE id = ?", [result.invocation_id])["config"][0]
    assert json.loads(stored)["l1_dense_model"] == "hash:32" and "index" in json.loads(stored)


@pytest.mark.parametrize("config", [LookupConfig(), LookupConfig(l1_dense_model="hash:32", l1_dense_weight=0.0,
                                                                 rerank_model="hash", rerank_weight=0.0)])
def test_a_trace_row_records_no_model_for_a_part_that_is_off(index, store, config):
    result = lookup_knowledge("rotate an API token", index=index, config=config, recorder=store)
    frame = store.query("SELECT config->'models' AS m FROM tool_invocation WHERE id = ?", [result.invocation_id])
    assert frame["m"].isna().all()  # no model part on: the row's config is what it always was


def test_a_model_that_cannot_load_is_recorded_with_its_error_not_raised(index, store, tmp_path):
    missing = f"onnx:{tmp_path / 'no-such-model'}"
    result = lookup_knowledge("rotate an API token", index=index, config=LookupConfig(rerank_model=missing),
                              recorder=store)
    models = _recorded_models(store, result.invocation_id)
    assert models["dense"] is None and set(models["rerank"]) == {"spec", "error"}
    assert models["rerank"]["spec"] == missing and models["rerank"]["error"].startswith("ModelError: ")
    assert store.query("SELECT status FROM tool_invocation")["status"].tolist() == ["ok"]


def test_an_evaluation_run_records_the_models_its_settings_name(tiny_kb_dataset, store):
    dense = run_evaluation(tiny_kb_dataset, LookupConfig(svd_dims=16, l1_dense_model="hash:32"), store=store,
                           baseline=False, oracle=False)
    plain = run_evaluation(tiny_kb_dataset, LookupConfig(svd_dims=16), store=store, baseline=False, oracle=False)
    expected = {"dense": load_encoder("hash:32").info.to_dict(), "rerank": None}
    assert dense.models == expected and dense.to_dict()["models"] == expected
    assert plain.models == {"dense": None, "rerank": None}
    stored = store.query("SELECT run_id, models FROM eval_run ORDER BY created_at")
    assert [json.loads(m) for m in stored["models"]] == [expected, {"dense": None, "rerank": None}]
    # its lookups' rows say the same, each
    rows = store.query("SELECT DISTINCT config->'models' AS m FROM tool_invocation WHERE run_id = ?", [dense.run_id])
    assert [json.loads(m) for m in rows["m"]] == [expected]


def test_two_runs_whose_dense_model_loaded_other_weights_are_compared_with_a_warning(tiny_kb_dataset, store, capsys):
    config = LookupConfig(svd_dims=16, l1_dense_model="hash:32")
    a, b = (run_evaluation(tiny_kb_dataset, config, store=store, baseline=False, oracle=False).run_id
            for _ in range(2))
    info = load_encoder("hash:32").info.to_dict()
    with store.connect() as con:  # B's model "exported again": the same spec, other weights
        con.execute("UPDATE eval_run SET models = ? WHERE run_id = ?",
                    [json.dumps({"dense": {**info, "fingerprint": "0123456789abcdef"}, "rerank": None}), b])
    comparison = compare_runs(store, a, b)
    assert comparison.config_diff == {}  # the settings are the same: only the weights differ
    (note,) = comparison.model_notes()
    assert note.line() == (f"warning: runs used different weights for the dense model hash:32 (fingerprint "
                           f"{info['fingerprint']} vs 0123456789abcdef; A vs B): metric differences may come from "
                           "the model, not the settings")
    assert note in comparison.notes() and comparison.to_dict()["models"][0] == {"dense": info, "rerank": None}
    assert eval_main(["compare", a, b, "--traces", str(store.path)]) == 0
    out, err = capsys.readouterr()
    assert note.line() in err and note.line() in out  # on stderr, and in the Markdown report
    assert compare_runs(store, a, a).model_notes() == []
    report = render(load_run(store, a), "markdown")
    assert (f"models: dense model hash:32 (hash, weights {info['weights_sha256'][:12]}…, fingerprint "
            f"{info['fingerprint']}); reranker off") in report
