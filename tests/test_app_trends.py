"""The Trends page (AppTest, on trace files of four weeks of production lookups, tests/trendsui_helpers.py): its
charts draw the core's figures with the picked window shaded, What changed says the planted change in the core's
words, the content gaps list the planted topic first and open its questions on the Traces page, and each empty
state says what is missing."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

from streamlit import dataframe_util
from streamlit.testing.v1 import AppTest

from appui.data import trends as data
from appui.widgets import trend_reads
from retrieval import LookupConfig, TraceStore, open_index
from retrieval.lookup.invocation import ToolInvocation
from retrieval.paths import SAMPLE_KB
from retrieval.traces.changes import changes
from retrieval.traces.gaps import content_gaps
from retrieval.traces.trends import trends
from tests.app_helpers import APP, ok, page_text
from tests.trendsui_helpers import TEAMS_WORD, build

PAGE = "appui/pages/trends.py"


def trends_page() -> AppTest:
    return ok(ok(AppTest.from_file(APP, default_timeout=120).run()).switch_page(PAGE).run())


def charts(at: AppTest) -> list[dict]:
    """Each chart on the page: its Vega-Lite spec and its rows (the data the browser draws)."""
    drawn = []
    for chart in at.get("vega_lite_chart"):
        rows = [dataframe_util.convert_arrow_bytes_to_pandas_df(d.data.data) for d in chart.proto.datasets]
        drawn.append({"spec": json.loads(chart.proto.spec), "rows": rows[0]})
    return drawn


def until(at: AppTest) -> datetime:
    """The moment the page's span and window end (naive UTC, the current minute when it rendered)."""
    return at.session_state["trends_picks"].until


def gaps_tab(at: AppTest) -> AppTest:
    at.session_state["trn_tab"] = "Content gaps"
    return ok(at.run())


def changes_tab(at: AppTest) -> AppTest:
    at.session_state["trn_tab"] = "What changed"
    return ok(at.run())


def test_the_page_charts_every_figure_group_with_the_picked_window_shaded(planted_env):
    at = trends_page()
    assert not [m.value for m in at.markdown if m.value.startswith("- **")]  # What changed waits for its tab
    drawn = charts(at)
    assert len(drawn) == len(data.CHARTS) == 5
    for chart in drawn:
        shade, marks, *_ = chart["spec"]["layer"]
        assert shade["name"] == "window" and shade["mark"]["type"] == "rect"
        spans = chart["rows"]["window_end"] - chart["rows"]["window_start"]
        assert (spans == timedelta(days=7)).all()  # the default window: the last 7 days
    text = page_text(at)
    assert f"{planted_env.rows:,} production lookups from" in text and "(7 days) shaded" in text


def test_the_figures_drawn_equal_the_trends_api(planted_env):
    at = trends_page()
    drawn = {tuple(dict.fromkeys(chart["rows"]["name"])): chart["rows"] for chart in charts(at)}
    assert set(drawn) == {figures for _, figures, _, _ in data.CHARTS}
    end = until(at)
    expected = trends(TraceStore(planted_env.path), since=end - timedelta(days=30), until=end, by="day").frame()
    lookups = drawn[("lookups",)].sort_values("bucket")
    assert lookups["value"].tolist() == expected["lookups"].tolist()
    assert lookups["bucket"].dt.tz_convert(None).tolist() == expected["bucket"].tolist()
    shares = drawn[("abstain_share", "empty_share", "l1_failed_share", "fallback_share")]
    abstain = shares[shares["name"] == "abstain_share"].sort_values("bucket")
    assert abstain["value"].round(12).tolist() == expected["abstain_share"].round(12).tolist()
    assert abstain["figure"].iloc[0] == "abstentions"  # the figure's label (FIGURES), not its name
    latency = drawn[("p50_ms", "p95_ms")]
    p95 = latency[latency["name"] == "p95_ms"].sort_values("bucket")
    assert p95["value"].round(9).tolist() == expected["p95_ms"].round(9).tolist()


def test_what_changed_says_the_planted_abstentions_in_the_cores_words(planted_env):
    at = changes_tab(trends_page())
    expected = changes(TraceStore(planted_env.path), window="7d", until=until(at))
    abstain = next(f for f in expected.figures if f.name == "abstain_share")
    assert abstain.significant and abstain.words.startswith("abstentions rose from")
    shown = [m.value for m in at.markdown if m.value.startswith("- **")]
    assert f"- **{abstain.words}**" in shown
    significant = [f"- **{f.words}**" for f in data.ordered(expected.figures) if f.significant]
    assert shown == significant  # every significant change, and only those, in bold, smallest p first
    assert "The queries driving the change in abstentions" in [e.label for e in at.expander]
    assert [b.label for b in at.get("download_button")] == ["Download the report (Markdown)",
                                                            "Download the report (HTML)"]


def test_a_file_without_a_planted_change_shows_no_significant_change(steady_env):
    at = changes_tab(trends_page())
    assert any(i.value == "No figure changed significantly in this window." for i in at.info)
    assert not [m.value for m in at.markdown if m.value.startswith("- **")]


def test_the_report_holds_the_changes_and_the_content_gaps(planted_env):
    at = changes_tab(trends_page())
    window = at.session_state["trends_picks"].window
    store = TraceStore(planted_env.path)
    found = changes(store, window="7d", until=window.end)
    index = open_index(SAMPLE_KB, svd_dims=LookupConfig().svd_dims)
    markdown = trend_reads.report(store, found, index, window, "markdown")
    html = trend_reads.report(store, found, index, window, "html")
    abstain = next(f for f in found.figures if f.name == "abstain_share")
    said = abstain.words.split(" (p")[0]  # "abstentions rose from 3.3% to 44.1%, significant"
    assert said in markdown and said in html and TEAMS_WORD.lower() in markdown.lower()
    assert html.lstrip().lower().startswith("<!doctype html") and TEAMS_WORD.lower() in html.lower()
    assert "Content gaps" in markdown and "Content gaps" in html
    assert "Content gaps" not in trend_reads.report(store, found, None, window, "markdown")
    at.checkbox(key="trn_report_gaps").uncheck()  # the report without the gaps: no index needed
    ok(at.run())
    assert {"trn_report_md", "trn_report_html"} <= {b.key for b in at.get("download_button")}


def test_the_content_gaps_list_the_planted_topic_first(planted_env):
    at = gaps_tab(trends_page())
    table = at.dataframe(key="trn_gaps_table").value
    assert list(table.columns) == data.GAP_COLUMNS
    expected = content_gaps(TraceStore(planted_env.path), open_index(SAMPLE_KB, svd_dims=LookupConfig().svd_dims),
                            window="7d", until=until(at))
    assert table["topic"].tolist() == [t.label for t in expected.topics]  # the core's topics, in its order
    assert table["questions"].tolist() == [t.size for t in expected.topics]
    first = table.iloc[0]
    assert all(TEAMS_WORD.lower() in example.lower() for example in first["examples"].split(" · "))
    assert first["questions"] >= 100 and first["questions"] == table["questions"].max()
    assert first["before"] * 10 < first["questions"] and first["trend"].startswith(("new", "grew"))
    nearest = re.findall(r"\(([^,()]+\.md), [0-9.]+\)", first["nearest pages"])
    assert nearest and all((SAMPLE_KB / source).is_file() for source in nearest)  # pages the base does have


def test_picking_a_topic_lists_its_questions_and_opens_their_traces(planted_env):
    at = gaps_tab(trends_page())
    at.session_state["trn_gaps_table"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at = ok(at.run())
    listed = [t.value.split("  ·  asked ")[0] for t in at.text]
    assert listed and all(TEAMS_WORD.lower() in q.lower() for q in listed)
    at = ok(at.button(key="trn_gap_q_0").click().run())
    assert at.title[0].value == "Traces"
    assert at.text_input(key="tr_search").value == listed[0]
    queries = at.dataframe(key="tr_table").value["query"].tolist()
    assert queries and all(listed[0].lower() in q.lower() for q in queries)


def test_a_topic_opens_on_the_traces_page_by_its_term(planted_env):
    at = gaps_tab(trends_page())
    at.session_state["trn_gaps_table"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at = ok(ok(at.run()).button(key="trn_gap_open_topic").click().run())
    term = at.text_input(key="tr_search").value
    queries = at.dataframe(key="tr_table").value["query"].tolist()
    assert term and len(queries) >= 100 and all(term.lower() in q.lower() for q in queries)


def test_a_picked_range_of_days_is_the_window(planted_env):
    at = trends_page()
    at = ok(at.selectbox(key="trn_window").set_value(data.PICKED).run())
    last = planted_env.now.date() - timedelta(days=1)
    at = ok(at.date_input(key="trn_range").set_value((last - timedelta(days=2), last)).run())
    rows = charts(at)[0]["rows"]
    assert (rows["window_end"] - rows["window_start"] == timedelta(days=3)).all()
    assert "(3 days) shaded" in page_text(at)
    assert "the last 3d" in page_text(changes_tab(at))  # What changed compares the picked days too
    at.session_state["trn_tab"] = "Trends"
    at = ok(at.date_input(key="trn_range").set_value(last).run())  # only the first day picked so far
    assert any("Pick the window's last day too" in i.value for i in at.info) and not charts(at)


def test_per_category_and_weekly_buckets_draw_a_panel_per_group(planted_env):
    at = trends_page()
    at = ok(at.selectbox(key="trn_span").set_value("Last 90 days").run())
    at = ok(at.selectbox(key="trn_by").set_value("week").run())
    at = ok(at.selectbox(key="trn_per").set_value("category").run())
    drawn = charts(at)
    assert len(drawn) == 5 and all("facet" in chart["spec"] for chart in drawn)
    assert set(drawn[0]["rows"]["group"]) == {"Alerting", "Billing", "Security"}
    assert "a panel per category" in page_text(at)


def test_no_traces_yet_is_said(env):
    TraceStore(env["traces"]).close()
    at = trends_page()
    assert any(i.value.startswith("No traces yet") for i in at.info) and not charts(at)


def test_no_production_lookups_in_the_span_is_said(tmp_path, monkeypatch):
    traces = tmp_path / "traces.duckdb"
    build(traces, now=datetime.now(timezone.utc) - timedelta(days=10))  # the newest lookup: 10 days ago
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_KB", str(SAMPLE_KB))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(traces))
    at = trends_page()
    assert len(charts(at)) == 5  # the last 30 days hold them
    at = ok(at.selectbox(key="trn_span").set_value("Last 24 hours").run())
    info = [i.value for i in at.info]
    assert any(i.startswith("No production lookups to chart: no production lookups") for i in info)
    assert not charts(at)


def test_an_old_file_is_charted_up_to_its_newest_production_lookup(tmp_path, monkeypatch):
    old = tmp_path / "old.duckdb"
    built = build(old, now=datetime(2020, 1, 1))  # four weeks of lookups, years before the longest span
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_KB", str(SAMPLE_KB))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(old))
    at = trends_page()
    newest = TraceStore(old).query("SELECT max(created_at) AS t FROM tool_invocation")["t"][0]
    said = f"No production lookups in the last 90 days: the newest was at {newest:%Y-%m-%d %H:%M} UTC"
    assert any(i.value.startswith(said) for i in at.info)
    assert len(charts(at)) == 5 and until(at) == data.now_minute(newest.to_pydatetime()) + timedelta(minutes=1)
    assert until(at) <= built.now


def test_a_file_of_evaluation_runs_only_says_it_holds_no_production_lookup(env):
    with TraceStore(env["traces"]) as store:
        store.record_many([ToolInvocation("lookup_knowledge", "q", {}, "ok", 1.0, {}, {}, run_id="run-1")])
    at = trends_page()
    assert any(i.value.startswith("No production lookups in this trace file") for i in at.info)
    assert not charts(at)


def test_no_unanswered_questions_is_said(answered_env):
    at = gaps_tab(trends_page())
    assert any(i.value.startswith("No unanswered questions in the window") for i in at.info)
    assert not at.get("dataframe") or "trn_gaps_table" not in {d.key for d in at.get("dataframe")}
