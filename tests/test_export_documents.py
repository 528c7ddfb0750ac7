"""retrieval.export: one Markdown and HTML renderer (hostile titles, lines, cells stay text), JSON helpers."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from appui.data import traces as data
from retrieval.export import (
    STYLESHEET,
    Section,
    cell_text,
    html_document,
    html_table,
    json_lines,
    json_object,
    markdown_document,
)

HOSTILE = "<script>alert(1)</script>\r\nnext | line"


def _sections() -> list[Section]:
    table = pd.DataFrame({"query": [HOSTILE], "score": [0.123456], "hit": [True], "missing": [None]})
    return [Section(HOSTILE, (HOSTILE, "top_k: 5")), Section("Table", table=table), Section("Empty", table=table[:0])]


@pytest.mark.parametrize(("value", "expected"), [
    (0.123456, "0.1235"), (12.0, "12"), (-3.5, "-3.5"), (math.inf, "inf"), (7, "7"), (True, "True"),
    (None, ""), (math.nan, ""), (pd.NA, ""), (pd.NaT, ""), (["a", "b"], "a, b"), (("x",), "x")])
def test_cell_text_is_what_a_table_shows(value, expected):
    assert cell_text(value) == expected


def test_markdown_document_keeps_headings_and_lines_on_one_line_without_html():
    page = markdown_document(_sections())
    assert "<script" not in page and page.startswith("# &lt;script&gt;alert(1)&lt;/script&gt; next | line\n\n")
    assert "\n- &lt;script&gt;alert(1)&lt;/script&gt; next | line\n- top_k: 5\n\n## Table\n\n| query |" in page
    assert "| &lt;script&gt;alert(1)&lt;/script&gt; next \\| line | 0.1235 | True |  |" in page
    assert page.endswith("## Empty\n\n_none_\n")


def test_html_document_escapes_every_text_and_carries_the_one_stylesheet():
    page = html_document(_sections())
    assert page.count("<script") == 0 and page.count("&lt;script&gt;") == 4  # title, h1, li, td
    assert f"<style>{STYLESHEET}</style>" in page and "http" not in page and "src=" not in page
    assert '<td class="num">0.1235</td><td>True</td><td></td>' in page  # numbers right-aligned, not bools
    assert page.endswith("<h2>Empty</h2>\n<p><em>none</em></p>\n</body></html>\n")


def test_the_app_trace_export_is_the_shared_renderer():
    frame = pd.DataFrame({"query": [HOSTILE], "status": ["ok"]})
    page = data.export_traces(frame, "HTML", title="t").decode()
    shown = frame[["status", "query"]]  # in the Traces table's order (data.SUMMARY_COLUMNS)
    assert page == html_document([Section("t", ("1 rows",), table=shown)])
    assert html_table(shown) in page


def test_json_object_and_json_lines():
    assert json_object('{"a": 1}') == {"a": 1} and json_object({"b": 2}) == {"b": 2}
    assert json_object(None) == {} and json_object("[1, 2]") == {} and json_object(3) == {}
    text = json_lines([{"q": "é", "at": pd.Timestamp("2024-01-02")}, {"q": "x"}])
    assert text == '{"q": "é", "at": "2024-01-02 00:00:00"}\n{"q": "x"}\n'
    assert json_lines([]) == ""
