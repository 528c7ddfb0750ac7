"""Issue 49 in the app: the words match the numbers. A question nothing answers is said plainly first (item 3); a
page's snippet shows its words, not its Markdown marks (item 10)."""

from __future__ import annotations

from pathlib import Path

from appui.data import trace_report
from retrieval import TraceStore, lookup_knowledge, open_index
from tests.app_helpers import lookup, ok, page_text, run_app
from tests.kb_fixture import write_kb

NOTHING = "what is the capital of France"


def test_a_question_nothing_answers_leads_with_the_plain_sentence(env):
    at = lookup(ok(run_app()), NOTHING)
    shown = [m.value for m in at.markdown]
    lead = shown[shown.index(f"### “{NOTHING}”") + 1]
    assert "does not seem to hold an answer" in lead and "nothing in it matches the question" in lead
    boxes = [i.value for i in at.info]
    assert not any("Fewer blocks" in b or "No evidence blocks" in b for b in boxes), boxes  # no fallback-like box
    text = page_text(at)
    assert "none vote" not in text and "without semantic support" not in text
    assert "Why no blocks:" in text  # the reason stays, as a footnote


def test_an_abstained_lookup_with_blocks_says_they_are_not_an_answer(env):
    at = lookup(ok(run_app()), "when is the deadline for filing my income taxes")
    assert at.session_state["lookup_result"]["relevance"]["abstain"]
    shown = [m.value for m in at.markdown]
    lead = shown[shown.index("### “when is the deadline for filing my income taxes”") + 1]
    assert "does not seem to hold an answer" in lead and "closest pages found, not an answer" in lead


BOLD_PAGE = """---
title: Billing settings
category: Billing
---
Billing is handled under **Settings > Billing**, visible to the _Owner_ and to users with the `Admin` role.
"""


def _with_bold_page(kb: Path) -> None:
    (kb / "billing" / "settings.md").write_text(BOLD_PAGE, encoding="utf-8")


def test_a_compact_cards_snippet_shows_the_pages_words_not_its_markdown_marks(env):
    """Issue 49, item 10: the Compare page's cards showed "**Settings > Billing**"."""
    _with_bold_page(env["kb"])
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at.text_input(key="cmp_query").set_value("where is billing handled")
    at = ok(at.button(key="cmp_run").click().run())
    snippets = [t.value for t in at.text if "Settings > Billing" in t.value]
    assert snippets and all("**" not in s and "`" not in s for s in snippets), snippets
    assert "handled under Settings > Billing, visible to the Owner and to users with the Admin role" in snippets[0]


def test_a_reports_preview_shows_the_pages_words_not_its_markdown_marks(tmp_path):
    """Issue 49, item 10: a trace report's "Preview:" line read "**Settings > Billing**"."""
    kb = write_kb(tmp_path / "kb")
    _with_bold_page(kb)
    with TraceStore(tmp_path / "traces.duckdb") as store:
        result = lookup_knowledge("where is billing handled", index=open_index(kb), recorder=store)
        store.flush()
        row = store.query("SELECT * FROM tool_invocation WHERE id = ?", [result.invocation_id]).iloc[0].to_dict()
    report = trace_report.single_trace(row, "Markdown").decode()
    previews = [line for line in report.splitlines() if "Preview:" in line and "Settings" in line]
    assert previews and "Settings > Billing" in previews[0].replace("&gt;", ">").replace("\\>", ">")
    assert "**" not in previews[0] and "\\*" not in previews[0]
