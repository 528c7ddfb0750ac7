"""Issue 22 in a real browser (Debian's Chromium via Playwright): a very long title's chips stay inside their
column on the Lookup page and in the trace detail, and the sidebar's Excluded folders keep Hugo's release notes
out of a lookup. Screenshots `chips-long-title.png`, `chips-trace-detail.png` and `exclude-news.png` (into
docs/screenshots only with UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

import pytest

from tests.browser_helpers import (
    CHROMIUM,
    click_first_row,
    open_folder,
    open_page,
    screenshot,
    sync_api,
    visible,
    wait_for_app,
)
from tests.conftest import shared_path
from tests.kb_fixture import write_kb

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}")]
LONG_WORD = "Webhook_notification_endpoint_configuration_reference_for_enterprise_alert_routing_pipelines"
LONG_TITLE = f"Configuring the extraordinarily long named webhook notification endpoint {LONG_WORD}"
# every inline-code chip of the main area, with the right edge of the column (or main block) that holds it
CHIP_EDGES = """() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stMarkdownContainer'] code")]
    .map(code => {
        const holder = code.closest("[data-testid='stColumn']")
            || code.closest("[data-testid='stMainBlockContainer']");
        const chip = code.getBoundingClientRect(), box = holder.getBoundingClientRect();
        return {text: code.textContent, right: chip.right, holder: box.right, column: holder.dataset.testid};
    })"""


def _overflowing(page) -> tuple[list[dict], list[dict]]:
    """(every chip checked, the chips whose right edge passes their column's right edge)."""
    chips = page.evaluate(CHIP_EDGES)
    return chips, [c for c in chips if c["right"] > c["holder"] + 0.5]


def _lookup(page, query: str) -> None:
    page.locator(".st-key-lookup_query input").fill(query)
    page.locator(".st-key-lookup_run button").click()
    wait_for_app(page)
    visible(page, page.get_by_test_id("stMarkdownContainer").filter(has_text=f"“{query}”").first)


def test_a_very_long_title_chip_stays_inside_its_column(server, flow_page, flow_shots):
    kb = write_kb(server["root"] / "long-kb")
    (kb / "integrations" / "long-webhooks.md").write_text(
        f"---\ntitle: {LONG_TITLE}\ncategory: Integrations\nkeywords: [webhook notification endpoint]\n---\n"
        "Configure the webhook notification endpoint that receives alert routing events.\n")
    open_folder(flow_page, str(kb))
    _lookup(flow_page, "webhook notification endpoint configuration")
    chips, over = _overflowing(flow_page)
    long_chips = [c for c in chips if LONG_WORD in c["text"]]
    assert any(c["column"] == "stColumn" for c in long_chips), chips  # the title is a chip in a narrow column
    assert not over, over
    screenshot(flow_page, flow_shots, "chips-long-title")
    open_page(flow_page, "Traces")
    click_first_row(flow_page, flow_page.locator(".st-key-tr_table [data-testid='stDataFrameResizable']"))
    visible(flow_page, flow_page.get_by_text("Trace in full").first)
    chips, over = _overflowing(flow_page)
    assert any(LONG_WORD in c["text"] and c["column"] == "stColumn" for c in chips), chips
    assert not over, over
    screenshot(flow_page, flow_shots, "chips-trace-detail")
    open_page(flow_page, "Lookup")


def test_excluding_news_in_the_sidebar_keeps_release_notes_out_of_a_hugo_lookup(server, flow_page, flow_shots):
    hugo = shared_path("hugo_docs", "content", "en")
    open_folder(flow_page, str(hugo))
    _lookup(flow_page, "how do I add a menu")
    sync_api.expect(flow_page.get_by_text("news/0.14-relnotes/index.md").first).to_be_visible()
    flow_page.locator(".st-key-kb_exclude input").fill("news")
    flow_page.locator(".st-key-kb_exclude input").press("Enter")
    visible(flow_page, flow_page.get_by_text("excluding news").first)
    _lookup(flow_page, "how do I add a menu")
    sync_api.expect(flow_page.get_by_test_id("stMain").get_by_text("news/", exact=False)).to_have_count(0)
    sync_api.expect(flow_page.get_by_text("content-management/menus.md").first).to_be_visible()
    screenshot(flow_page, flow_shots, "exclude-news")
