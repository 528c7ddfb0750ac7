"""The trace on screen downloads where it is shown: the Traces page's trace in full offers it as a Markdown or
HTML report and as JSON (the contents are tested in tests/test_trace_report.py)."""

from __future__ import annotations

from retrieval import TraceStore
from tests.app_helpers import lookup, ok, run_app, select

LABELS = {"md": "Download as Markdown", "html": "Download as HTML", "json": "Download as JSON"}


def _buttons(at, prefix: str) -> dict[str, str]:
    return {b.key.removeprefix(f"{prefix}_download_"): b.label for b in at.get("download_button")
            if b.key and b.key.startswith(f"{prefix}_download_")}


def test_a_clicked_trace_downloads_as_markdown_html_and_json(env):
    at = lookup(run_app(), "download invoices")
    at = ok(at.switch_page("appui/pages/traces.py").run())
    assert not _buttons(at, "tr_row")  # nothing to download before a trace is opened
    at = ok(select(at, "tr_table", 0))
    assert _buttons(at, "tr_row") == LABELS
    assert "tr_row_download_md" in str(at.get("download_button")[0].proto.id)


def test_a_trace_opened_from_elsewhere_downloads_too(env):
    at = lookup(run_app(), "download invoices")
    at.session_state["tr_open_id"] = TraceStore(env["traces"]).query("SELECT id FROM tool_invocation")["id"][0]
    at = ok(at.switch_page("appui/pages/traces.py").run())
    assert _buttons(at, "tr_opened") == LABELS
