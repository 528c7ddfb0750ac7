"""Traces you can read (AppTest + the DuckDB reads): a trace as cards, paging through every row, charts over
every matching row, the SQL box in its own tab, and links between a run's query and its trace."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from appui.data import trace_table as traces_data
from appui.data import traces as data
from eval import datasets, runs
from retrieval import LookupConfig, TraceStore, lookup_knowledge
from retrieval.lookup.invocation import ToolInvocation
from tests.app_helpers import APP, QUERIES, lookup, ok, select
from tests.kb_fixture import write_kb


def run_app() -> AppTest:
    return ok(AppTest.from_file(APP, default_timeout=60).run())


def _many(path: Path, n: int) -> None:
    """`n` recorded calls, one second apart, a third of them L0-only; written in one batch by a writer that
    closes (its rows in `tool_invocation` when it returns: reads do not drain other writers' spools)."""
    start = datetime(2026, 1, 5, 15, 0, tzinfo=timezone.utc)
    with TraceStore(path) as store:
        store.record_many([ToolInvocation(
            "lookup_knowledge", f"query {i}", {}, "ok", float(i % 40), {},
            {"retrieval_layer": "L0" if i % 3 else "L1"}, id=f"id-{i:05d}", created_at=start + timedelta(seconds=i))
            for i in range(n)])


def test_a_trace_renders_as_cards_with_raw_json_behind_an_expander(env):
    at = lookup(run_app(), "download invoices")
    at = ok(at.switch_page("appui/pages/traces.py").run())
    at = ok(select(at, "tr_table", 0))
    text = "\n".join(m.value for m in at.markdown)
    assert "Trace in full" in text and "**1. Invoices and payment" in text  # an evidence card
    assert "**Filter decision:** `applied`" in text and "**Timings (ms)**" in text
    labels = [e.label for e in at.expander]
    assert "Raw row (every column, JSON as stored)" in labels and "Raw retrieval_details JSON" in labels


def test_table_pages_through_every_matching_row(env):
    _many(env["traces"], 1022)
    at = ok(run_app().switch_page("appui/pages/traces.py").run())
    assert any("**1022 trace(s)** match · rows 1–100" in m.value for m in at.markdown)
    at = ok(at.selectbox(key="tr_page_size").set_value(1000).run())
    at = ok(at.number_input(key="tr_page").set_value(2).run())
    page = at.dataframe(key="tr_table").value
    assert len(page) == 22 and page["id"].iloc[-1] == "id-00000"  # the oldest row is reachable
    assert any("rows 1001–1022" in m.value for m in at.markdown)


def test_pages_never_overlap_and_cover_every_row(env):
    _many(env["traces"], 250)
    store, filters = TraceStore(env["traces"]), data.TraceFilters()
    ids = [i for n in (1, 2, 3) for i in traces_data.page(store, filters, n, 100)["id"]]
    assert len(ids) == len(set(ids)) == traces_data.count(store, filters) == 250
    with pytest.raises(ValueError, match="page number and size start at 1"):
        traces_data.page(store, filters, 0, 100)


def test_charts_aggregate_over_every_matching_row(env):
    _many(env["traces"], 1022)
    store, filters = TraceStore(env["traces"]), data.TraceFilters()
    mix = traces_data.layer_mix(store, filters).set_index("layer")["calls"]
    assert mix.sum() == 1022 and mix["L1"] == 341
    assert traces_data.latency_histogram(store, filters)["calls"].sum() == 1022
    rate, unit = traces_data.fallback_rate(store, filters)
    assert unit == "minute" and rate["calls"].sum() == 1022 and str(rate["created_at"].dt.tz) == "UTC"
    narrowed = data.TraceFilters(layers=("L1",))
    assert traces_data.latency_histogram(store, narrowed)["calls"].sum() == 341


def test_latency_bin_edges_are_rounded_so_the_axis_reads_plain_numbers(env):
    _many(env["traces"], 30)
    bins = traces_data.latency_histogram(TraceStore(env["traces"]), data.TraceFilters())
    edges = [*bins["start"], *bins["end"]]
    assert len(bins) > 1 and all(round(edge, 3) == edge for edge in edges), edges


def test_sql_box_has_its_own_tab(env):
    at = ok(run_app().switch_page("appui/pages/traces.py").run())
    assert [t.label for t in at.tabs] == ["Traces", "SQL"]
    sql_tab = at.tabs[1]
    assert sql_tab.text_area(key="sql_text") is not None
    assert sql_tab.button(key="sql_run") is not None


def test_a_run_query_links_to_its_trace_and_back(env):
    store = _swept(env)
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at = ok(select(at, "eval_pairs", 0))
    query = at.dataframe(key="eval_pairs").value["query"].iloc[0]
    at = ok(at.button(key="eval_open_trace_a").click().run())
    opened = at.session_state["tr_open_id"]
    assert store.query("SELECT query FROM tool_invocation WHERE id = ?", [opened])["query"][0] == query
    assert any(f"Trace in full: “{query}”" in m.value for m in at.markdown)  # now on the Traces page
    run_id = store.query("SELECT run_id FROM tool_invocation WHERE id = ?", [opened])["run_id"][0]
    at = ok(at.switch_page("appui/pages/traces.py").run())  # AppTest reruns the page it last was told
    at = ok(at.button(key="tr_opened_open_run").click().run())
    assert any(h.value == "Compare settings" for h in at.title)
    assert at.selectbox(key="eval_run_view").value == run_id
    assert run_id in (at.selectbox(key="eval_run_a").value, at.selectbox(key="eval_run_b").value)
    assert any(f"“{query}”" in m.value and m.value.startswith("#### Query") for m in at.markdown)


def test_the_traces_page_opens_on_interactive_calls_not_a_sweeps_rows(env):
    """A sweep records a lookup per question and setting; the analyst's own call stays on the first screen."""
    _swept(env)
    at = lookup(run_app(), "agent offline firewall port")
    at = ok(at.switch_page("appui/pages/traces.py").run())
    assert at.selectbox(key="tr_run").value == "(interactive lookups)"
    assert at.dataframe(key="tr_table").value["query"].tolist() == ["agent offline firewall port"]
    at = ok(at.selectbox(key="tr_run").set_value("(all)").run())
    assert len(at.dataframe(key="tr_table").value) == 1 + 2 * len(QUERIES)


def _swept(env) -> TraceStore:
    """The trace store after a two-setting sweep over QUERIES on the tiny base (a lookup per question and setting)."""
    dataset = env["root"] / "dataset"
    write_kb(dataset / "kb")
    (dataset / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    store = TraceStore(env["traces"])
    runs.run_sweep(datasets.load_dataset(dataset), {"l0_filter": ["true", "false"]}, store=store,
                   base_config=LookupConfig(), baseline=False, oracle=False)
    return store


def test_no_fallbacks_is_said_in_words_not_a_blank_chart(env):
    at = lookup(run_app(), "download invoices")  # answered by L1: no fallback
    at = ok(at.switch_page("appui/pages/traces.py").run())
    assert any(i.value.startswith("No fallbacks") for i in at.info)
    specs = [json.dumps(json.loads(c.proto.spec)) for c in at.get("vega_lite_chart")]
    assert not any("fallback rate" in s for s in specs)


def test_status_latency_and_id_lead_the_traces_table(env):
    at = lookup(run_app(), "download invoices")
    at = ok(at.switch_page("appui/pages/traces.py").run())
    assert list(at.dataframe(key="tr_table").value.columns[:4]) == ["created_at", "status", "latency_ms", "id"]


def test_the_a_and_b_calls_of_a_comparison_read_apart_in_the_traces_table(env):
    """Two comparisons on the Compare page (B equal to A, then B without the L0 filter): each row names its side,
    its comparison and its settings against the real defaults, so no two of the four rows read alike."""
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at.text_input(key="cmp_query").set_value("download invoices")
    at = ok(at.button(key="cmp_run").click().run())
    first = next(c.value for c in at.caption if c.value.startswith("Recorded as comparison")).split("`")[1]
    at = ok(at.toggle(key="cmpb_l0_filter").set_value(False).run())
    at = ok(at.button(key="cmp_run").click().run())
    second = next(c.value for c in at.caption if c.value.startswith("Recorded as comparison")).split("`")[1]
    assert first != second
    at = ok(at.switch_page("appui/pages/traces.py").run())
    table = at.dataframe(key="tr_table").value
    assert list(table.columns[4:7]) == ["query", "config", "comparison"]
    assert table[["config", "comparison"]].values.tolist() == [
        ["l0_filter=false", f"B of {second}"], ["defaults", f"A of {second}"],
        ["defaults", f"B of {first}"], ["defaults", f"A of {first}"]]
    at = ok(select(at, "tr_table", 0))
    assert f"Compare page: side B of {second} · settings: l0_filter=false" in [c.value for c in at.caption]


def test_settings_read_as_their_difference_from_the_real_defaults():
    assert traces_data.settings_label(json.dumps({**LookupConfig().to_dict(), "index": {"svd_dims": 64}})) == "defaults"
    changed = {**LookupConfig().to_dict(), "l1_pool": 40, "l0_filter": False}
    assert traces_data.settings_label(changed) == "l0_filter=false, l1_pool=40"
    assert traces_data.settings_label(None) == "" and traces_data.comparison_label(None) == ""
    assert traces_data.comparison_label('{"side": "A", "comparison_id": "cmp-1"}') == "A of cmp-1"


def test_a_file_of_run_rows_says_how_many_traces_the_filters_hide_and_offers_them(env):
    """Every row belongs to a run: the default (interactive lookups) matches none, and the page says so."""
    _swept(env)
    at = ok(run_app().switch_page("appui/pages/traces.py").run())
    total = 2 * len(QUERIES)
    said = [i.value for i in at.info if "hide" in i.value]
    assert said == [f"No traces match these filters; they hide {total:,} trace(s) in this file, {total:,} of "
                    "them from evaluation runs."]
    at = ok(at.button(key="tr_show_all").click().run())
    assert at.selectbox(key="tr_run").value == "(all)"
    assert len(at.dataframe(key="tr_table").value) == total


def test_an_empty_file_says_no_traces_yet(env):
    at = ok(run_app().switch_page("appui/pages/traces.py").run())
    assert any(i.value.startswith("No traces yet") for i in at.info)


def test_calls_without_evidence_are_not_called_answered_by_l1(env):
    """A `none` call beside L1 answers: no fallback, and the page does not say every call had L1's evidence."""
    at = lookup(run_app(), "download invoices")
    at = lookup(at, "zzqx vbnm plokij")  # no term of the base: no evidence at all
    at = ok(at.switch_page("appui/pages/traces.py").run())
    layers = TraceStore(env["traces"]).query("SELECT retrieval_layer FROM tool_invocation")["retrieval_layer"]
    assert "none" in set(layers)
    said = [i.value for i in at.info if "allback" in i.value]
    assert len(said) == 1 and "1 call(s) here returned no evidence at all" in said[0]
    assert "every call here was answered" not in said[0]


def test_the_traces_table_reads_only_its_columns_and_an_opened_row_in_full(env):
    at = lookup(run_app(), "download invoices")
    at = ok(at.switch_page("appui/pages/traces.py").run())
    columns = set(at.dataframe(key="tr_table").value.columns)
    assert "retrieval_details" not in columns and "result" not in columns
    at = ok(select(at, "tr_table", 0))
    assert any("Trace in full: “download invoices”" in m.value for m in at.markdown)
    assert any(e.label.startswith("Raw row") for e in at.expander)


def test_the_run_filter_offers_the_newest_runs_first_and_at_most_a_bounded_number(env, monkeypatch):
    """A month of sweeps holds thousands of runs: the option list is bounded, newest first."""
    store = TraceStore(env["traces"])
    start = datetime(2026, 1, 5, tzinfo=timezone.utc)
    store.record_many([ToolInvocation("lookup_knowledge", f"q{i}", {}, "ok", 1.0, {}, {"retrieval_layer": "L1"},
                                      created_at=start + timedelta(minutes=i), run_id=f"run-{i:03d}")
                       for i in range(12)])
    store.flush()
    monkeypatch.setattr(data, "RUN_OPTIONS", 5)
    options = data.distinct_values(store)["run_id"]
    assert options == [f"run-{i:03d}" for i in (11, 10, 9, 8, 7)]


def test_a_recorded_dense_setting_reads_as_a_changed_setting_and_its_models_do_not(index, store):
    config = LookupConfig(l1_dense_model="hash:32", l1_dense_weight=2.0, rerank_model="hash")
    result = lookup_knowledge("rotate an API token", index=index, config=config, recorder=store)
    row = store.query("SELECT config, arguments FROM tool_invocation WHERE id = ?",
                      [result.invocation_id]).iloc[0].to_dict()
    assert set(json.loads(row["config"])["models"]) == {"dense", "rerank"}  # recorded beside the settings
    assert traces_data.settings_label(row["config"]) == "l1_dense_model=hash:32, l1_dense_weight=2.0, rerank_model=hash"
    recorded, _ = traces_data.recorded_settings(row)  # what a replay or "why not" of this call runs with
    assert recorded == config
