"""The app in a real browser: `streamlit run app.py` on a free port, driven by Debian's Chromium via Playwright.

One flow on the sample knowledge base: a lookup, a comparison with a labelled sweep, a trace row click,
a CSV download checked row by row, and a screenshot of each page (into docs/screenshots only when
UPDATE_SCREENSHOTS=1, else under tmp_path). Waits are on the `stApp` element's
`data-test-script-state=notRunning` and on expected elements, never on fixed sleeps.
"""

from __future__ import annotations

import pandas as pd
import pytest

from retrieval import TraceStore
from tests.browser_helpers import CHROMIUM, click_first_row, open_page, screenshot, sync_api, visible, wait_for_app

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM} "
                       "(apt-get install chromium; .ci/run installs it)"),
]


def test_lookup_compare_traces_and_export_in_a_real_browser(app_server, app_page, screenshots):
    app_page.goto(app_server["url"])
    wait_for_app(app_page)
    visible(app_page, app_page.get_by_test_id("stHeading").filter(has_text="Lookup").first)

    app_page.locator(".st-key-lookup_query input").fill("rotate an API token")
    app_page.locator(".st-key-lookup_query input").press("Enter")
    visible(app_page, app_page.get_by_test_id("stMetric").filter(has_text="Final blocks"))
    sync_api.expect(app_page.get_by_text("Filter decision:")).to_be_visible()
    sync_api.expect(app_page.get_by_text("api/api-tokens.md").first).to_be_visible()
    screenshot(app_page, screenshots, "lookup")

    open_page(app_page, "Compare settings")
    app_page.locator(".st-key-cfg_l0_filter label").click()  # A: no L0 filter; B keeps the default
    wait_for_app(app_page)
    app_page.locator(".st-key-cmp_query input").fill("download last month's invoice")
    app_page.locator(".st-key-cmp_run button").click()
    visible(app_page, app_page.get_by_text("What changed (A → B)"))
    screenshot(app_page, screenshots, "compare")

    app_page.get_by_role("tab", name="Labelled set").click()
    app_page.locator(".st-key-eval_mode").get_by_text("Sweep").click()
    visible(app_page, app_page.locator(".st-key-eval_grid textarea"))
    app_page.locator(".st-key-eval_start button").click()
    visible(app_page, app_page.get_by_text("Stored 2 run(s)"))
    pairs = app_page.locator(".st-key-eval_pairs [data-testid='stDataFrameResizable']")
    visible(app_page, pairs)
    click_first_row(app_page, pairs)
    visible(app_page, app_page.get_by_test_id("stHeading").filter(has_text="Run B:").first)
    screenshot(app_page, screenshots, "compare-runs")

    open_page(app_page, "Traces")
    app_page.locator(".st-key-tr_run").click()
    app_page.get_by_role("option", name="(interactive lookups)").click()
    visible(app_page, app_page.get_by_text("3 trace(s)"))
    click_first_row(app_page, app_page.locator(".st-key-tr_table [data-testid='stDataFrameResizable']"))
    opened = app_page.get_by_text("Trace in full")
    visible(app_page, opened)
    sync_api.expect(opened).to_contain_text("download last month's invoice")  # the newest row, clicked
    screenshot(app_page, screenshots, "traces")

    open_page(app_page, "Export")
    button = app_page.locator(".st-key-ex_download button")
    visible(app_page, button)
    with app_page.expect_download() as download:
        button.click()
    saved = app_server["root"] / "traces.csv"
    download.value.save_as(saved)
    rows = pd.read_csv(saved)
    stored = TraceStore(app_server["traces"]).query("SELECT id FROM tool_invocation WHERE run_id IS NULL")
    assert sorted(rows["id"]) == sorted(stored["id"])  # exactly the Traces page's filtered rows
    assert sorted(rows["query"]) == ["download last month's invoice"] * 2 + ["rotate an API token"]
    assert set(rows["l1_status"]) == {"ok"}
    screenshot(app_page, screenshots, "export")
