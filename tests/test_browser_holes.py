"""The hole loop of issue 34 item 4 in a real browser (Debian's Chromium via Playwright): the Compare page on
two runs whose top 10s differ lists the pages nobody judged; judging them from the queue shows the conclusions
before and after the marks, and the tie on recall@10 becoming a significant win for B. The screenshot goes to
docs/screenshots/holes.png with UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import pytest

from eval import judgements
from retrieval import TraceStore
from tests.browser_helpers import CHROMIUM, browser_tab, open_page, screenshot_folder, sync_api, visible, wait_for_app

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}")]
QUESTIONS = 8


def test_judging_the_queue_shows_the_conclusions_before_and_after(holes_server, tmp_path_factory):
    with browser_tab({"width": 1400, "height": 1000}) as tab:
        tab.goto(holes_server["url"])
        wait_for_app(tab)
        tab.locator(".st-key-annotator_name input").fill("ana")  # every mark names its annotator
        tab.locator(".st-key-annotator_name input").press("Enter")
        wait_for_app(tab)
        open_page(tab, "Compare settings")
        tab.get_by_role("tab", name="Labelled set").click()
        panel = tab.locator(".st-key-holes_panel")
        visible(tab, panel.get_by_text("Judging queue").first)
        sync_api.expect(panel).to_contain_text(f"{QUESTIONS} of {QUESTIONS} paired question(s) changed their top 10")
        sync_api.expect(panel).not_to_contain_text("Conclusions before and after")
        for number in range(QUESTIONS):  # each question's first unjudged page (B's rank 2): relevant
            button = tab.locator(f".st-key-holes_{number}_judge_1_1 button:visible").first
            button.scroll_into_view_if_needed()
            button.click()
            wait_for_app(tab)
            visible(tab, panel.get_by_text("Conclusions before and after the new marks").first)
        assert len(judgements.latest(TraceStore(holes_server["traces"]))) == QUESTIONS
        warning = panel.get_by_text("The marks changed the conclusion on", exact=False)
        visible(tab, warning)
        assert "recall@10" in warning.inner_text()
        table = panel.get_by_test_id("stDataFrame").first
        sync_api.expect(table).to_be_visible()
        shots = screenshot_folder(tmp_path_factory, "holes-shots")
        tab.mouse.move(0, 0)  # no hover tooltips in the picture
        tab.set_viewport_size({"width": 1400, "height": 1400})
        panel.evaluate("e => e.scrollIntoView({block: 'start'})")  # the panel's top under the app's header
        tab.evaluate("() => document.querySelector('[data-testid=stMain]').scrollBy(0, -70)")
        tab.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        box = panel.bounding_box()
        tab.screenshot(path=str(shots / "holes.png"),
                       clip={"x": box["x"] - 10, "y": box["y"] - 10, "width": box["width"] + 20, "height": 1150})
        assert (shots / "holes.png").stat().st_size > 10_000
