"""Issue 33's "Why not…?" in a real browser (Debian's Chromium via Playwright), on the Hugo docs: the footer-year
question never returns `functions/now.md`; asking why shows its stage and its score parts as bars beside the last
returned block's. The screenshot goes to docs/screenshots/why-not.png with UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import pytest

from retrieval import LookupConfig, explain_missing, open_index
from tests.browser_helpers import CHROMIUM, sync_api, visible

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}")]
QUESTION = "Footer copyright year should update by itself on every build instead of me editing it each January."
MISSING = "functions/now.md"


def test_why_not_on_the_hugo_docs_shows_the_stage_and_the_parts_beside_the_last_block(hugo_tab, tmp_path_factory):
    from tests.browser_helpers import screenshot_folder

    tab, kb = hugo_tab
    expected = explain_missing(QUESTION, [MISSING], index=open_index(kb), config=LookupConfig()).explanations[0]
    assert expected.stage != "returned" and expected.parts and expected.last_parts
    tab.locator(".st-key-lookup_query input").fill(QUESTION)
    tab.locator(".st-key-lookup_query input").press("Enter")
    visible(tab, tab.get_by_text("Evidence (", exact=False).first)
    picker = tab.locator(".st-key-lookup_why_not")
    picker.scroll_into_view_if_needed()
    picker.click()
    tab.keyboard.type(MISSING)
    tab.keyboard.press("Enter")
    answer = tab.get_by_test_id("stMarkdownContainer").filter(has_text=f"{MISSING} {expected.stage}")
    visible(tab, answer.first)
    assert expected.reason in answer.first.inner_text()
    bars = tab.get_by_test_id("stVegaLiteChart")
    sync_api.expect(bars.last).to_be_visible()
    cards = tab.get_by_test_id("stMarkdownContainer").filter(has_text="· score")
    assert bars.count() == cards.count() + 1  # a bar per card, and the why-not answer's pair
    shots = screenshot_folder(tmp_path_factory, "why-not-shots")
    box = tab.locator(".st-key-lookup_why_not_box")
    box.scroll_into_view_if_needed()
    box.screenshot(path=str(shots / "why-not.png"))
    assert (shots / "why-not.png").stat().st_size > 10_000
