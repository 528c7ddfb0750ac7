"""retrieval.export: one Markdown and HTML renderer (hostile titles, lines, cells stay text; values read as
text, rounded), JSON helpers. Markdown is checked as a CommonMark renderer shows it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from appui.data import trace_export
from appui.data import traces as data
from retrieval.export import (
    MISSING,
    STYLESHEET,
    Section,
    cell_text,
    html_document,
    html_table,
    json_lines,
    json_object,
    markdown_document,
)
from retrieval.lookup.invocation import ToolInvocation
from tests.markdown_helpers import render_markdown

HOSTILE = "<script>alert(1)</script>\r\nnext | line"


def _sections() -> list[Section]:
    table = pd.DataFrame({"query": [HOSTILE], "score": [0.123456], "hit": [True], "missing": [None]})
    return [Section(HOSTILE, (HOSTILE, "top_k: 5")), Section("Table", table=table), Section("Empty", table=table[:0])]


@pytest.mark.parametrize(("value", "expected"), [
    (0.123456, "0.123"), (12.0, "12"), (-3.5, "-3.500"), (-0.0001, "0.000"), (math.inf, "inf"), (7, "7"),
    (True, "True"), (None, "—"), (math.nan, "—"), (pd.NA, "—"), (pd.NaT, "—"), (["a", "b"], "a, b"), (("x",), "x"),
    ([], "none"), ({}, "none"), (pd.Timestamp("2026-12-04 17:22:05.123456"), "2026-12-04 17:22:05"),
    ({"applied": 38, "skipped_ambiguous": 20}, "applied 38, skipped_ambiguous 20"),
    ({"count": 2, "rate": 0.0298507, "query_ids": ["q1", "q2"], "missed": None},
     "count 2, rate 0.030, query_ids (q1, q2), missed —"),
    ({"latency_ms": {"p50": 16.253418999895075, "p95": 3.3456}}, "latency_ms (p50 16.3, p95 3.3)")])
def test_cell_text_reads_as_text_rounded_with_missing_as_a_dash(value, expected):
    assert cell_text(value) == expected and MISSING == "—"


def test_milliseconds_round_to_one_decimal_and_scores_to_three():
    assert cell_text(16.253418999895075, ms=True) == "16.3" and cell_text(16.253418999895075) == "16.253"
    page = markdown_document([Section("t", table=pd.DataFrame({"latency_ms": [16.253418999895075],
                                                               "score": [1.5652349]}))])
    assert render_markdown(page).table("latency_ms", "score") == [{"latency_ms": "16.3", "score": "1.565"}]


def test_markdown_document_keeps_headings_and_lines_on_one_line_without_html():
    page = markdown_document(_sections())
    assert "<script" not in page and page.startswith("# &lt;script&gt;alert(1)&lt;/script&gt; next | line\n\n")
    assert "\n- &lt;script&gt;alert(1)&lt;/script&gt; next | line\n- top_k: 5\n\n## Table\n\n| query |" in page
    assert "| &lt;script&gt;alert(1)&lt;/script&gt; next \\| line | 0.123 | True | — |" in page
    assert page.endswith("## Empty\n\n_none_\n")


def test_markdown_document_renders_through_commonmark_to_its_headings_lists_and_tables():
    shown = render_markdown(markdown_document(_sections()))
    typed = "<script>alert(1)</script> next | line"  # the hostile text on one line, shown as typed
    assert shown.headings == [(1, typed), (2, "Table"), (2, "Empty")]
    assert shown.items == [typed, "top_k: 5"] and "script" not in shown.tags
    assert shown.table("query", "score") == [{"query": typed, "score": "0.123", "hit": "True", "missing": "—"}]
    assert "none" in shown.text and len(shown.tables) == 1  # the empty table says so, and is no table


def test_section_levels_nest_headings_in_markdown_and_html():
    sections = [Section("Report"), Section("Trace", level=2), Section("Hints", level=3), Section("Block", level=4)]
    assert render_markdown(markdown_document(sections)).headings == [(1, "Report"), (2, "Trace"), (3, "Hints"),
                                                                     (4, "Block")]
    assert "<h3>Hints</h3>" in html_document(sections) and "<h4>Block</h4>" in html_document(sections)


def test_html_document_escapes_every_text_and_carries_the_one_stylesheet():
    page = html_document(_sections())
    assert page.count("<script") == 0 and page.count("&lt;script&gt;") == 4  # title, h1, li, td
    assert f"<style>{STYLESHEET}</style>" in page and "http" not in page and "src=" not in page
    assert '<td class="num">0.123</td><td>True</td><td>—</td>' in page  # numbers right-aligned, not bools
    assert page.endswith("<h2>Empty</h2>\n<p><em>none</em></p>\n</body></html>\n")


def test_the_app_trace_export_is_the_shared_renderer(store):
    store.record(ToolInvocation("lookup_knowledge", HOSTILE, {}, "ok", 1.0, {}, {"retrieval_layer": "L0"}))
    filters = data.TraceFilters()
    page = trace_export.report_bytes(store, filters, "HTML", title="t").decode()
    first = store.query("SELECT * FROM tool_invocation")
    shown = first[[c for c in data.SUMMARY_COLUMNS if c in first.columns]]  # in the Traces table's order
    assert page.startswith(html_document([Section("t")]).split("<h1>")[0]) and page.count(STYLESHEET) == 1
    assert html_table(shown) in page and page.count("<script") == 0


def test_json_object_and_json_lines():
    assert json_object('{"a": 1}') == {"a": 1} and json_object({"b": 2}) == {"b": 2}
    assert json_object(None) == {} and json_object("[1, 2]") == {} and json_object(3) == {}
    text = json_lines([{"q": "é", "at": pd.Timestamp("2024-01-02")}, {"q": "x"}])
    assert text == '{"q": "é", "at": "2024-01-02 00:00:00"}\n{"q": "x"}\n'
    assert json_lines([]) == ""
