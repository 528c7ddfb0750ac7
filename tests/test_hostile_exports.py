"""Exports carry hostile text as text: no spreadsheet formulas, no broken or HTML-carrying Markdown tables."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from appui.data import trace_export, trace_report
from appui.data import traces as data
from retrieval import ToolInvocation, TraceStore, lookup_knowledge
from retrieval.export import (
    FORMULA_STARTS,
    Section,
    csv_cell,
    csv_safe,
    markdown_cell,
    markdown_document,
    markdown_table,
)
from tests.markdown_helpers import render_markdown

INJECTIONS = ["[click](javascript:alert(1))", "*bold* and _under_", "`code` ~~gone~~", "# heading", "- item",
              "+ item", "1. item", "3) item", "<img src=x onerror=alert(1)>", "<https://evil.example>",
              "![img](x.png)", "&lt;already&gt; &amp;", "a \\| b \\", "what is C# #tag", "    indented code"]
FORMULAS = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]


@pytest.mark.parametrize("text", FORMULAS)
def test_csv_formula_cells_are_neutralised(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["plain", "a=b", "", 3, -4.5, None])
def test_ordinary_csv_cells_are_unchanged(value):
    assert csv_cell(value) == value


def test_csv_safe_covers_cells_and_column_names_and_keeps_numbers():
    frame = pd.DataFrame({"query": FORMULAS, "=cmd": [1] * len(FORMULAS), "score": [-1.5] * len(FORMULAS)})
    safe = csv_safe(frame)
    assert all(v.startswith("'") for v in safe["query"]) and list(safe.columns) == ["query", "'=cmd", "score"]
    assert safe["score"].tolist() == [-1.5] * len(FORMULAS)
    assert frame["query"].tolist() == FORMULAS  # the input frame is not changed


def test_app_csv_export_has_no_cell_starting_like_a_formula(tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    store.record_many([ToolInvocation("lookup_knowledge", text, {}, "ok", 1.0, {}, {}, error=text)
                       for text in FORMULAS])
    exported = pd.read_csv(io.BytesIO(trace_export.download_bytes(store, data.TraceFilters(), "CSV")),
                           keep_default_na=False)
    assert sorted(exported["query"]) == sorted("'" + text for text in FORMULAS)
    assert not [v for column in ("query", "error") for v in exported[column] if str(v).startswith(FORMULA_STARTS)]


@pytest.mark.parametrize(("value", "expected"), [
    ("a|b", "a\\|b"), ("a\\|b", "a\\\\\\|b"), ("line\r\nnext\rthird\nfourth", "line next third fourth"),
    ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"), ("a & b", "a &amp; b"),
    (None, "—"), (float("nan"), "—")])
def test_markdown_cells_are_escaped(value, expected):
    assert markdown_cell(value) == expected


@pytest.mark.parametrize("text", INJECTIONS)
def test_markdown_injection_renders_as_the_typed_text_in_headings_lines_and_cells(text):
    page = markdown_document([Section(text, (text,), table=pd.DataFrame({"query": [text], "n": [1]}))])
    shown, typed = render_markdown(page), text.strip()  # leading spaces dropped, so no indented code block
    assert shown.headings == [(1, typed)] and shown.items == [typed]
    assert shown.table("query") == [{"query": typed, "n": "1"}]
    assert not shown.tags & {"a", "em", "strong", "code", "img", "ol", "pre", "h2", "blockquote", "del", "script"}
    assert shown.tags >= {"h1", "ul", "li", "table"} and len(shown.tables) == 1


def test_markdown_export_keeps_one_row_per_trace_and_no_raw_html():
    frame = pd.DataFrame({"query": ["a | b\r\nc", "x \\| y", "<img src=x onerror=alert(1)>"], "status": ["ok"] * 3})
    table = markdown_table(frame)
    rows = table.split("\n")
    assert len(rows) == 2 + 3 and "<img" not in table
    assert all(_unescaped_pipes(row) == 3 for row in rows[2:])


def _unescaped_pipes(row: str) -> int:
    count, escaped = 0, False
    for char in row:
        if char == "|" and not escaped:
            count += 1
        escaped = char == "\\" and not escaped
    return count


def test_report_markdown_tables_escape_cells_too():
    table = markdown_table(pd.DataFrame({"query": ["a|b\rc <b>x</b>"], "ndcg@10": [0.5]}))
    assert "<b>" not in table and "a\\|b c" in table and len(table.split("\n")) == 3


def test_a_hostile_query_stays_text_in_a_trace_report(store, index):
    query = "<script>alert(1)</script> [x](javascript:alert(1)) *download* `invoices` # now"
    result = lookup_knowledge(query, index=index, recorder=store)
    row = store.query("SELECT * FROM tool_invocation WHERE id = ?", [result.invocation_id]).iloc[0].to_dict()
    shown = render_markdown(trace_report.single_trace(row, "Markdown").decode())
    assert shown.headings[0] == (1, f"Lookup trace: {query}") and f"Query: {query}" in shown.items
    assert not shown.tags & {"a", "em", "code", "script", "img"}
    page = trace_report.single_trace(row, "HTML").decode()
    assert "<script" not in page and "&lt;script&gt;" in page
