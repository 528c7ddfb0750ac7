"""The Judging page in a real browser (issue 52 items 3-4; Debian's Chromium via Playwright): two annotators,
their names typed in the sidebar, judge the same assigned page differently from their queues; the Agreement tab
lists it as a disagreement, and an adjudicator's grade resolves it. The screenshot goes to
docs/screenshots/judging.png with UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import pytest

from eval import agreement, annotation
from retrieval import TraceStore
from tests.browser_helpers import (
    CHROMIUM,
    browser_tab,
    open_page,
    screenshot,
    screenshot_folder,
    sync_api,
    visible,
    wait_for_app,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}")]


def _as(tab, name: str) -> None:
    """Type `name` as the annotator in the sidebar."""
    field = tab.locator(".st-key-annotator_name input")
    field.fill(name)
    field.press("Enter")
    wait_for_app(tab)
    visible(tab, tab.get_by_test_id("stSidebar").get_by_text(f"Annotator: {name}"))


def _grade(tab, grade: int) -> None:
    tab.locator(f".st-key-jq_grade_{grade} button").click()
    wait_for_app(tab)


def test_two_annotators_disagree_and_an_adjudicator_resolves_it(judging_server, tmp_path_factory):
    query, source = judging_server["page"]
    store = TraceStore(judging_server["traces"])
    with browser_tab({"width": 1400, "height": 1000}) as tab:
        tab.goto(judging_server["url"])
        wait_for_app(tab)
        _as(tab, "ana")
        open_page(tab, "Judging")
        card = tab.locator(".st-key-jq_card")
        sync_api.expect(card).to_contain_text(f"Query: “{query}”")
        sync_api.expect(card).to_contain_text(source)
        sync_api.expect(tab.get_by_text("0 of 1 judged")).to_be_visible()
        _grade(tab, 2)  # ana: highly relevant
        visible(tab, tab.get_by_text("Nothing left to judge for ana"))
        _as(tab, "bob")
        sync_api.expect(card).to_contain_text(f"Query: “{query}”")
        sync_api.expect(card).not_to_contain_text("ana")  # blind: the other annotator's mark is not shown
        _grade(tab, 0)  # bob: not relevant
        visible(tab, tab.get_by_text("Nothing left to judge for bob"))
        marks = annotation.by_annotator(store)
        assert sorted(zip(marks["who"], marks["grade"], strict=True)) == [("ana", 2), ("bob", 0)]

        _as(tab, "lead")
        tab.get_by_role("tab", name="Agreement").click()
        wait_for_app(tab)
        visible(tab, tab.get_by_text("1 page(s) graded differently, 0 adjudicated"))
        sync_api.expect(tab.locator(".st-key-jg_sentence")).to_contain_text("2 annotators (ana, bob)")
        assert source in tab.locator(".st-key-jg_dispute").aria_snapshot()  # the disputed page, to adjudicate
        shots = screenshot_folder(tmp_path_factory, "judging-shots")
        screenshot(tab, shots, "judging")
        tab.locator(".st-key-jg_adjudicate_1 button").click()  # lead: relevant
        wait_for_app(tab)
        visible(tab, tab.get_by_text("1 page(s) graded differently, 1 adjudicated"))
        settled = agreement.adjudications(store)
        assert settled[["query", "source", "grade", "who"]].values.tolist() == [[query, source, 1, "lead"]]
        assert agreement.consensus(store, "adjudicated")[["source", "grade"]].values.tolist() == [[source, 1]]
