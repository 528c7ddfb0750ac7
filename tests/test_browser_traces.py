"""The Traces page's fallback-rate chart in a real browser (Debian's Chromium via Playwright): its time axis, as
drawn, reads 24-hour UTC labels that match the times in the table, whatever the browser's own time zone.

The chart is drawn as SVG, so its tick labels are text in the page; the table's cells are read from the data
grid's accessible table. Screenshot: `traces-fallback-axis.png` (into docs/screenshots only with UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

import re

import pytest

from tests.browser_helpers import CHROMIUM, open_page, screenshot_folder, visible, wait_for_app

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}")]
CLOCK = re.compile(r"([01]\d|2[0-3]):[0-5]\d")  # 24-hour HH:MM

AXIS_LABELS = """title => Array.from(document.querySelectorAll('[data-testid=stVegaLiteChart] g.role-axis'))
    .filter(axis => Array.from(axis.querySelectorAll('g.role-axis-title text'))
        .some(t => t.textContent.startsWith(title)))
    .flatMap(axis => Array.from(axis.querySelectorAll('g.role-axis-label text')).map(t => t.textContent))"""
TABLE_TIMES = """() => Array.from(document.querySelectorAll('.st-key-tr_table [role=gridcell]'))
    .map(cell => cell.textContent).filter(text => /^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}/.test(text))"""


def test_the_fallback_chart_reads_24_hour_utc_labels_matching_the_table(evening_server, kolkata_tab,
                                                                         tmp_path_factory):
    page = kolkata_tab
    page.goto(evening_server["url"])
    wait_for_app(page)
    open_page(page, "Traces")
    chart = page.get_by_test_id("stColumn").filter(has_text="Fallback rate over time")
    visible(page, chart.locator("svg g.role-axis-title").filter(has_text="time (UTC, 24-hour, per minute)"))
    page.locator(".st-key-tr_table [role=gridcell]").first.wait_for(state="attached")  # the grid's hidden a11y table

    labels = page.evaluate(AXIS_LABELS, "time (UTC")
    table = page.evaluate(TABLE_TIMES)
    assert sorted(table) == ["2026-01-05 17:22:10", "2026-01-05 17:23:10", "2026-01-05 17:25:10",
                             "2026-01-05 17:25:10"]  # the times the writer recorded, as the table shows them
    assert labels and all(CLOCK.fullmatch(label) for label in labels), labels  # not 05:22, not ":15"
    minutes = {time[11:16] for time in table}
    assert minutes <= set(labels), (minutes, labels)  # every call's minute is a tick, in UTC (not 22:52 local)
    assert min(labels) == min(minutes) and max(labels) <= "17:26"  # the axis spans the calls and no more

    shots = screenshot_folder(tmp_path_factory, "traces-axis")
    page.mouse.move(0, 0)
    path = shots / "traces-fallback-axis.png"
    chart.screenshot(path=str(path))
    assert path.stat().st_size > 5_000
