"""Every page's address opens it in a real browser (Debian's Chromium via Playwright), without Streamlit's
"Page not found" dialog: `/lookup` too, which Streamlit does not serve for the default page by itself."""

from __future__ import annotations

import pytest

from tests.browser_helpers import CHROMIUM, sync_api, visible

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}")]


@pytest.mark.parametrize(("path", "heading"), [("lookup", "Lookup"), ("", "Lookup"), ("compare", "Compare settings"),
                                               ("traces", "Traces"), ("export", "Export"),
                                               ("judging", "Judging"), ("trends", "Trends")])
def test_each_pages_address_opens_it_without_a_page_not_found_dialog(app_server, app_page, path, heading):
    app_page.goto(f"{app_server['url'].rstrip('/')}/{path}")
    visible(app_page, app_page.get_by_test_id("stHeading").filter(has_text=heading).first)
    sync_api.expect(app_page.get_by_text("Page not found")).to_have_count(0)
