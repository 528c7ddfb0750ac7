"""The Trends page in a real browser (Debian's Chromium via Playwright) on the planted trace file: the charts are
drawn (SVG), the picked window is the shaded band and follows the Window picker, and the content-gap table's
first topic drills down to the Traces page showing that topic's questions. Screenshots: `trends.png`,
`trends-changes.png`, `trends-gaps.png` (into docs/screenshots only with UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

import pytest

from tests.browser_helpers import CHROMIUM, click_first_row, screenshot, sync_api, visible, wait_for_app
from tests.trendsui_helpers import TEAMS_WORD

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}")]

CHART = "[data-testid='stVegaLiteChart']"
BAND = f"{CHART} svg g.window_marks path"  # the shaded window: Vega names the layer's marks after it
CELLS = """key => Array.from(document.querySelectorAll(`.st-key-${key} [role=gridcell]`))
    .map(cell => cell.textContent)"""


def _band_widths(page) -> list[float]:
    """The drawn width (px) of the shaded window in each chart."""
    return [box["width"] for box in (band.bounding_box() for band in page.locator(BAND).all()) if box]


def _pick(page, key: str, option: str) -> None:
    page.locator(f".st-key-{key}").click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_for_app(page)


def test_the_trends_page_draws_its_charts_with_the_window_shaded(trends_server, app_page, screenshots):
    app_page.goto(f"{trends_server['url']}/trends")
    visible(app_page, app_page.get_by_test_id("stHeading").filter(has_text="Trends").first)
    sync_api.expect(app_page.locator(f"{CHART} svg")).to_have_count(5)
    sync_api.expect(app_page.locator(BAND)).to_have_count(5)
    week = _band_widths(app_page)
    assert all(width > 20 for width in week)
    screenshot(app_page, screenshots, "trends")
    app_page.get_by_role("tab", name="What changed").click()
    visible(app_page, app_page.get_by_text("abstentions rose from", exact=False).first)
    screenshot(app_page, screenshots, "trends-changes")
    app_page.get_by_role("tab", name="Trends", exact=True).click()
    wait_for_app(app_page)
    sync_api.expect(app_page.locator(BAND)).to_have_count(5)
    _pick(app_page, "trn_window", "Last 24 hours")
    sync_api.expect(app_page.get_by_text("(1 day) shaded", exact=False)).to_be_visible()
    day = _band_widths(app_page)
    assert len(day) == 5 and all(d < w / 3 for d, w in zip(day, week, strict=True))  # the band follows the pick


def test_a_content_gap_opens_its_questions_on_the_traces_page(trends_server, app_page, screenshots):
    app_page.goto(f"{trends_server['url']}/trends")
    visible(app_page, app_page.get_by_test_id("stHeading").filter(has_text="Trends").first)
    app_page.get_by_role("tab", name="Content gaps").click()
    wait_for_app(app_page)
    grid = app_page.locator(".st-key-trn_gaps_table [data-testid='stDataFrame']")
    visible(app_page, grid)
    app_page.locator(".st-key-trn_gaps_table [role=gridcell]").first.wait_for(state="attached")  # the a11y table
    assert TEAMS_WORD.lower() in app_page.evaluate(CELLS, "trn_gaps_table")[0].lower()  # row 1's topic
    click_first_row(app_page, grid)
    button = app_page.locator(".st-key-trn_gap_q_0 button")
    visible(app_page, button)
    question = app_page.get_by_test_id("stText").first.inner_text().split("  ·  asked ")[0].strip()
    assert TEAMS_WORD.lower() in question.lower()
    screenshot(app_page, screenshots, "trends-gaps")
    button.click()
    visible(app_page, app_page.get_by_test_id("stHeading").filter(has_text="Traces").first)
    sync_api.expect(app_page.locator(".st-key-tr_search input")).to_have_value(question)
    app_page.locator(".st-key-tr_table [role=gridcell]").first.wait_for(state="attached")
    queries = [cell for cell in app_page.evaluate(CELLS, "tr_table") if TEAMS_WORD.lower() in cell.lower()]
    assert queries and all(question.lower() in q.lower() for q in queries)  # only that question's traces
