"""Issue 22's score parts in a real browser (Debian's Chromium via Playwright): on the sample knowledge base,
two cards' score parts add up to their scores as rendered, and the two-block comparison names the gap.
The screenshots go to docs/screenshots/score-parts*.png with UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import re

import pytest

from tests.browser_helpers import CHROMIUM, screenshot, sync_api, visible

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}")]
TERM = re.compile(r"([A-Za-z0-9 ]+?) (-?\d+\.\d{3}) \((-?\d+\.\d{3}) × ([\d.]+)\)")


def test_score_parts_on_two_cards_add_up_to_their_scores_in_the_browser(server, flow_page, flow_shots):
    flow_page.locator(".st-key-lookup_query input").fill("how do I rotate an API token")
    flow_page.locator(".st-key-lookup_query input").press("Enter")
    lines = flow_page.get_by_test_id("stCaptionContainer").filter(has_text=re.compile(r"^score \d"))
    visible(flow_page, lines.first)
    texts = lines.all_inner_texts()
    assert len(texts) >= 2, texts
    for text in texts[:2]:
        total, terms = re.match(r"score (\d+\.\d{3}) = (.*)", text.strip()).groups()
        parts = TERM.findall(terms)
        assert {name.strip() for name, *_ in parts} >= {"L1 lexical", "page"}, text
        assert abs(sum(float(c) for _n, c, _v, _w in parts) - float(total)) <= 0.001 * len(parts), text
    flow_page.get_by_text("Compare two blocks' scores").click()
    gap = flow_page.get_by_test_id("stMarkdownContainer").filter(has_text=re.compile(r"^#1 scores \d"))
    visible(flow_page, gap.first)
    assert re.match(r"#1 scores \d+\.\d{3} above #2; by part: ", gap.first.inner_text())
    panel = flow_page.get_by_test_id("stExpander").filter(has_text="Compare two blocks' scores")
    sync_api.expect(panel.get_by_test_id("stDataFrame")).to_be_visible()
    screenshot(flow_page, flow_shots, "score-parts")
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=str(flow_shots / "score-parts-compare.png"))
