"""Issue 49, item 2 in a real browser (Debian's Chromium via Playwright): pressing Enter in the Lookup box on the
same question after a page of the knowledge base was edited looks it up again and shows the edited page."""

from __future__ import annotations

import shutil

import pytest

from retrieval.paths import PROJECT_ROOT
from tests.browser_helpers import CHROMIUM, open_folder, sync_api, visible

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}")]
QUESTION = "which bird delivers invoices on Tuesdays"
ADDED = ("\n## Pigeon delivery of invoices\n\n"
         "On Tuesdays every paper invoice is delivered by Percival, the billing team's carrier pigeon, "
         "to the billing contacts' office.\n")


def _fingerprint(page) -> str:
    """The fingerprint the shown result names ("From `…` · fingerprint `…`")."""
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="fingerprint").first
    return caption.inner_text().rsplit("fingerprint", 1)[1].strip()


def test_enter_after_a_page_edit_shows_the_edited_page(server, flow_page):
    kb = shutil.copytree(PROJECT_ROOT / "data" / "kb", server["root"] / "kb-copy")
    open_folder(flow_page, str(kb))
    box = flow_page.locator(".st-key-lookup_query input")
    box.fill(QUESTION)
    box.press("Enter")
    visible(flow_page, flow_page.get_by_test_id("stMarkdownContainer").filter(has_text=f"“{QUESTION}”").first)
    main = flow_page.get_by_test_id("stMain")
    sync_api.expect(main.get_by_text("Pigeon delivery of invoices")).to_have_count(0)
    before = _fingerprint(flow_page)

    with (kb / "billing" / "invoices.md").open("a") as page_file:
        page_file.write(ADDED)
    box.press("Enter")  # the same text: no change in the box, only Enter
    visible(flow_page, main.get_by_text("Pigeon delivery of invoices").first)
    assert _fingerprint(flow_page) != before
    sync_api.expect(main.get_by_text("it was cleared because")).to_have_count(0)  # a fresh result, not a note
