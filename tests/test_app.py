"""The Streamlit app, driven by widget key with AppTest: every page, on a tiny knowledge base in tmp_path."""

from __future__ import annotations

import io
import json
import threading
import time

import duckdb
import pandas as pd
import pytest

from appui.data import trace_export
from appui.data import traces as data
from appui.widgets import state
from retrieval import TraceStore
from tests.app_helpers import PAGES, QUERIES, json_value, lookup, ok, page_text, run_app, select
from tests.conftest import held_trace_file
from tests.kb_fixture import write_kb


def test_every_page_renders_on_an_empty_trace_file(env):
    at = ok(run_app())
    for page in PAGES:
        ok(at.switch_page(page).run())
    ok(at.button(key="kb_reload").click().run())


def test_lookup_shows_hints_filter_decision_counts_and_evidence(env):
    at = lookup(ok(run_app()), "download invoices")
    text = page_text(at)
    assert "Matched titles" in text and "Invoices and payment" in text  # L0 hints
    # each domain list says where it comes from: L0's own matches, or the vote over the evidence
    assert "Domains of L0's matches  \n`billing`" in text and "Domains the vote carried  \n`billing`" in text
    assert "domains the vote carried `billing`" in text and "L0 domains" not in text
    assert "**Filter decision:** `applied`" in text and '{"category": "billing"}' in text  # exact L1 filter
    assert "L1 status:** :green-badge[ok]" in text
    counts = {m.label: int(m.value) for m in at.metric}
    assert set(counts) == {"L0 matches", "L1 candidates", "Candidates", "Final blocks", "Duplicates merged"}
    assert counts["L0 matches"] >= 1 and counts["Final blocks"] >= 1
    assert "**1. Invoices and payment**" in text and "`billing/invoices.md`" in text  # first evidence card
    assert any("retrieval_layer" in json_value(j) for j in at.json)  # the raw retrieval_details
    assert TraceStore(env["traces"]).count() == 1


def test_l1_failure_drill_is_a_sidebar_toggle_and_falls_back_to_l0(env):
    at = run_app()
    at.toggle(key="cfg_simulate_l1_failure").set_value(True)
    at = lookup(at, "download invoices")
    text = page_text(at)
    assert ":red-badge[failed]" in text and "without semantic support" in text
    assert TraceStore(env["traces"]).query("SELECT l1_status FROM tool_invocation")["l1_status"].tolist() == ["failed"]


def test_comparison_shows_both_sides_and_what_changed(env):
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at.toggle(key="cmpb_l0_filter").set_value(False)
    at.text_input(key="cmp_query").set_value("download invoices")
    at = ok(at.button(key="cmp_run").click().run())
    assert {"Configuration A", "Configuration B"} <= {s.value for s in at.subheader}
    changes = at.dataframe[0].value.set_index("")
    assert changes.loc["filter_decision", "A"] == "applied" and changes.loc["filter_decision", "B"] == "disabled"
    assert "`l0_filter` True → False" in page_text(at)
    assert TraceStore(env["traces"]).count() == 2


def test_a_comparison_with_the_dense_part_in_b_names_its_settings_and_b_runs_it(env):
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at = ok(at.text_input(key="cmpb_l1_dense_model").set_value("hash:32").run())
    at = ok(at.number_input(key="cmpb_l1_dense_weight").set_value(2.0).run())
    assert any("`l1_dense_model` None → **hash:32**" in w.value and "`l1_dense_weight` 1.0 → **2.0**" in w.value
               for w in at.warning)  # B's differences, named before anything runs
    at.text_input(key="cmp_query").set_value("silence an alert during maintenance")
    at = ok(at.button(key="cmp_run").click().run())
    assert "`l1_dense_model` None → hash:32" in page_text(at) and "`l1_dense_weight` 1.0 → 2.0" in page_text(at)
    rows = TraceStore(env["traces"]).query("SELECT tags->>'side' AS side, retrieval_details->'l1' AS l1, "
                                           "config->'models'->'dense' AS dense FROM tool_invocation ORDER BY side")
    l1 = [json.loads(v) for v in rows["l1"]]
    assert rows["side"].tolist() == ["A", "B"] and "dense" not in l1[0] and l1[1]["dense"]["status"] == "ok"
    assert pd.isna(rows["dense"][0]) and json.loads(rows["dense"][1])["name"] == "hash:32"  # A: no models key


def test_traces_page_filters_and_opens_a_row_in_full(env):
    at = lookup(run_app(), "rotate an API token")
    at.toggle(key="cfg_simulate_l1_failure").set_value(True)
    at = lookup(at, "download invoices")
    at = ok(at.switch_page("appui/pages/traces.py").run())
    assert len(at.dataframe(key="tr_table").value) == 2
    at = ok(at.multiselect(key="tr_l1").set_value(["failed"]).run())
    table = at.dataframe(key="tr_table").value
    assert table["query"].tolist() == ["download invoices"]
    at = ok(at.text_input(key="tr_search").set_value("token").run())
    assert "No traces match" in "\n".join(i.value for i in at.info)
    at.multiselect(key="tr_l1").set_value([])
    at = ok(select(at, "tr_table", 0))
    assert any(m.value.startswith("#### Trace in full") and "rotate an API token" in m.value for m in at.markdown)
    assert any(json_value(j).get("l1", {}).get("status") == "ok" for j in at.json)


@pytest.mark.parametrize("sql", ["DELETE FROM tool_invocation", "EXPLAIN ANALYZE DELETE FROM tool_invocation"])
def test_sql_box_refuses_a_delete_and_keeps_every_row(env, sql):
    at = lookup(run_app(), "rotate an API token")
    at = ok(at.switch_page("appui/pages/traces.py").run())
    at.text_area(key="sql_text").set_value(sql)
    at = at.button(key="sql_run").click().run()
    assert not at.exception
    assert [e.value for e in at.error] and "Refused" in at.error[0].value
    assert TraceStore(env["traces"]).count() == 1
    at.text_area(key="sql_text").set_value("SELECT query FROM tool_invocation")
    at = ok(at.button(key="sql_run").click().run())
    assert at.dataframe[-1].value["query"].tolist() == ["rotate an API token"]


@pytest.mark.parametrize("sql", ["UPDATE tool_invocation SET query = 'x'", "DROP TABLE tool_invocation",
                                 "INSERT INTO tool_invocation (id) VALUES ('x')", "COPY tool_invocation TO 'x.csv'",
                                 "ATTACH 'other.duckdb'", "CREATE TABLE t AS SELECT 1", "SELECT 1; DELETE FROM t",
                                 "PRAGMA enable_profiling", "SET threads = 1", "CALL pragma_version()"])
def test_read_only_check_refuses_statements_that_change_anything(sql):
    with pytest.raises(data.ReadOnlyError):
        data.check_read_only(sql)


def test_read_only_query_runs_in_a_rolled_back_transaction(tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    frame = data.read_only_query(store, "WITH x AS (SELECT 41 + 1 AS answer) SELECT * FROM x")
    assert frame["answer"].tolist() == [42]
    assert data.read_only_query(store, "EXPLAIN SELECT * FROM tool_invocation").shape[0] >= 1


def test_export_page_offers_every_format_of_the_filtered_traces(env):
    at = lookup(run_app(), "rotate an API token")
    at = ok(at.switch_page("appui/pages/export.py").run())
    for fmt, (extension, _) in data.FORMATS.items():
        at = ok(at.selectbox(key="ex_format").set_value(fmt).run())
        assert at.get("download_button")[0].label == f"Download traces.{extension}"


def test_trace_exports_hold_the_rows_in_every_format(env):
    store = TraceStore(env["traces"])
    at = lookup(run_app(), "rotate an API token")
    lookup(at, "download invoices")
    filters = data.TraceFilters(text="invoice")
    csv = trace_export.download_bytes(store, filters, "CSV")
    assert pd.read_csv(io.BytesIO(csv))["query"].tolist() == ["download invoices"]
    assert pd.read_parquet(io.BytesIO(trace_export.download_bytes(store, filters, "Parquet"))).shape[0] == 1
    rows = [json.loads(line) for line in trace_export.download_bytes(store, filters, "JSONL").decode().splitlines()]
    assert rows[0]["retrieval_details"]["filter"]["decision"] == "applied"  # JSON columns decoded
    assert "| download invoices |" in trace_export.report_bytes(store, filters, "Markdown").decode()
    page = trace_export.report_bytes(store, filters, "HTML").decode()
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and "download invoices" in page
    assert "<script" not in page and "http" not in page  # self-contained
    with pytest.raises(ValueError, match="CSV"):
        trace_export.download_bytes(store, filters, "xlsx")
    with pytest.raises(ValueError, match="not a report"):
        trace_export.report_bytes(store, filters, "CSV")


def test_labelled_set_sweep_comparison_and_reports(env):
    dataset = env["root"] / "dataset"
    write_kb(dataset / "kb")
    (dataset / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at.text_input(key="eval_dataset").set_value(str(dataset))
    at = ok(at.radio(key="eval_mode").set_value("Sweep").run())
    at.text_area(key="eval_grid").set_value("l0_filter=true,false")
    at = ok(at.button(key="eval_start").click().run())
    assert "Stored 2 run(s)" in at.success[0].value
    metrics = next(d.value for d in at.dataframe if "significance" in d.value.columns)  # plain frames keep no key
    assert {"Δ (B − A)", "wins / ties / losses", "significance"} <= set(metrics.columns)
    pairs = at.dataframe(key="eval_pairs").value
    assert pairs["Δ"].is_monotonic_increasing  # largest loss first
    at = ok(select(at, "eval_pairs", 0))
    assert {s.value.split(":")[0] for s in at.subheader} >= {"Run A", "Run B"}
    at = ok(at.switch_page("appui/pages/export.py").run())
    for what in ("Run report", "Comparison report"):
        at = ok(at.radio(key="ex_what").set_value(what).run())
        for fmt in data.FORMATS:
            at = ok(at.selectbox(key="ex_format").set_value(fmt).run())
            assert at.get("download_button")[0].label.startswith("Download run-")


def test_a_sweep_over_the_dense_weight_in_the_app(env):
    """The issue's acceptance: the dense model set in the sidebar (A), a sweep over its weight on the Labelled set
    tab; one stored run per weight, each recording its weight and the model, and the leaderboard shows the weight."""
    dataset = env["root"] / "dataset"
    write_kb(dataset / "kb")
    (dataset / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at = ok(at.text_input(key="cfg_l1_dense_model").set_value("hash:32").run())
    at.text_input(key="eval_dataset").set_value(str(dataset))
    at = ok(at.radio(key="eval_mode").set_value("Sweep").run())
    at.text_area(key="eval_grid").set_value("l1_dense_weight=0, 1.5")
    at = ok(at.button(key="eval_start").click().run())
    assert "Stored 2 run(s)" in at.success[0].value
    stored = TraceStore(env["traces"]).query("SELECT run_id, sweep_id, config FROM eval_run ORDER BY created_at")
    configs = [json.loads(c) for c in stored["config"]]
    assert [c["l1_dense_weight"] for c in configs] == [0.0, 1.5] and stored["sweep_id"].nunique() == 1
    assert {c["l1_dense_model"] for c in configs} == {"hash:32"}
    frames = [d.value for d in at.dataframe]  # plain frames keep no key: found by their columns
    table = next(f for f in frames if {"sweep_id", "overrides"} <= set(f.columns))  # the stored runs
    swept = table[table["sweep_id"] == stored["sweep_id"][0]]
    assert len(swept) == 2 and swept["overrides"].nunique() == 2
    assert {json.loads(o)["l1_dense_weight"] for o in swept["overrides"]} == {0.0, 1.5}
    assert all(json.loads(o)["l1_dense_model"] == "hash:32" for o in swept["overrides"])
    board = next(f for f in frames if {"label", "l1_dense_weight"} <= set(f.columns))  # the leaderboard's
    assert sorted(board["l1_dense_weight"]) == [0.0, 1.5]


def test_labelled_set_from_a_docs_folder_and_query_file_shows_the_oracle_headroom(env):
    docs = write_kb(env["root"] / "docs")
    queries = env["root"] / "dev.jsonl"
    queries.write_text("".join(json.dumps({**q, "category_of_first": "Security" if q["_id"] == "q1" else None}) + "\n"
                               for q in QUERIES))
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at = ok(at.radio(key="eval_source").set_value("Docs folder + query file").run())
    at.text_input(key="eval_kb").set_value(str(docs))
    at.text_input(key="eval_queries").set_value(str(queries))
    at.text_input(key="eval_exclude").set_value("troubleshooting/")
    at = ok(at.button(key="eval_start").click().run())
    assert "Stored 1 run(s)" in at.success[0].value
    headroom = next(d.value for d in at.dataframe if "oracle filter" in d.value.columns)  # plain frames keep no key
    assert headroom.columns.tolist() == ["metric", "lookup", "bm25", "oracle filter", "headroom"]
    assert headroom["oracle filter"].notna().all() and "ndcg@10" in headroom["metric"].tolist()
    assert "3 queries filtered by the first relevant page's category, 1 unfiltered" in page_text(at)  # q3: excluded
    assert any("1 relevant path(s) are not in the knowledge base" in w.value for w in at.warning)


@pytest.mark.parametrize(("source", "inputs", "message"), [
    ("Docs folder + query file", {"eval_kb": "{root}/kb"}, "give both a docs folder and a query file"),
    ("Docs folder + query file", {"eval_kb": "{root}/nowhere", "eval_queries": "{root}/q.jsonl"},
     "knowledge base not found"),
    ("Dataset folder", {"eval_dataset": "{root}/kb", "eval_exclude": "../elsewhere"}, "contains '..'"),
])
def test_labelled_set_input_problems_are_messages_not_tracebacks(env, source, inputs, message):
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at = ok(at.radio(key="eval_source").set_value(source).run())
    for key, value in inputs.items():
        at.text_input(key=key).set_value(value.replace("{root}", str(env["root"])))
    at = at.button(key="eval_start").click().run()
    assert not at.exception
    assert [e.value for e in at.error] and message in at.error[0].value


def test_a_missing_folder_is_an_error_message_not_a_traceback(env):
    at = run_app()
    at = at.radio(key="kb_source").set_value("Folder path").run()
    at = at.text_input(key="kb_path").set_value(str(env["root"] / "nowhere")).run()
    assert not at.exception
    assert "knowledge base not found" in at.error[0].value


def test_broken_files_are_listed_as_skipped(env, tmp_path):
    broken = write_kb(tmp_path / "broken-kb", with_broken=True)
    at = run_app()
    at = at.radio(key="kb_source").set_value("Folder path").run()
    at = ok(at.text_input(key="kb_path").set_value(str(broken)).run())
    assert any("broken/bad-yaml.md" in w.value for w in at.warning)


def test_a_trace_file_that_is_not_duckdb_is_an_error_message(env, monkeypatch):
    bad = env["root"] / "notes.duckdb"
    bad.write_text("not a database")
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(bad))
    at = run_app()
    for page in PAGES:
        at = at.switch_page(page).run()
        assert not at.exception
        assert "Cannot open the trace file" in at.error[0].value


def test_a_held_trace_file_is_a_message_naming_the_holder_not_an_error(env, monkeypatch):
    """An analyst keeps the trace file open in DuckDB's shell (read-write): the app starts, its lookups are
    recorded, and the Traces page says who holds the file and that new rows will arrive, instead of failing."""
    locked = env["root"] / "locked.duckdb"
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(locked))
    monkeypatch.setattr(state, "LOCK_TIMEOUT", 0.3)
    TraceStore(locked).close()
    with held_trace_file(locked) as holder:
        at = ok(run_app())
        at = lookup(at, "rotate an API token")
        assert any(f"held by process {holder.pid}" in w.value for w in at.warning)  # recorded, not shown yet
        at = at.switch_page("appui/pages/traces.py").run()
        assert not at.exception and not at.error
        held = [w.value for w in at.warning if f"held by process {holder.pid}" in w.value]
        assert held and "new rows are waiting and will arrive when it lets go" in held[0]
    deadline = time.monotonic() + 10  # the holder let go: the row arrives
    while TraceStore(locked).count() < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert TraceStore(locked).count() == 1


def test_switching_pages_does_not_rebuild_the_index(env, monkeypatch):
    at = lookup(run_app(), "rotate an API token")

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the index was rebuilt")

    monkeypatch.setattr(state, "open_index", no_rebuild)
    for page in (*PAGES, PAGES[0]):
        at = ok(at.switch_page(page).run())
    lookup(at, "download invoices")


def test_concurrent_sessions_build_one_index(env, monkeypatch):
    calls, real = [], state.open_index
    monkeypatch.setattr(state, "open_index", lambda *a, **k: calls.append(1) or real(*a, **k))
    slot = state._IndexSlot()
    threads = [threading.Thread(target=slot.get, args=(str(env["kb"]), 32, lambda *_: None)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [1] and slot.index is not None


def test_sample_knowledge_base_opens_with_no_set_up(tmp_path, monkeypatch):
    monkeypatch.delenv("LOOKUP_KNOWLEDGE_KB", raising=False)
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(tmp_path / "traces.duckdb"))
    at = lookup(ok(run_app()), "rotate an API token")
    assert "`api/api-tokens.md`" in page_text(at)
    assert duckdb.connect(str(tmp_path / "traces.duckdb")).execute(
        "SELECT count(*) FROM tool_invocation").fetchone()[0] == 1
