"""Excluded folders in the sidebar: the index the app opens leaves them out, as `--exclude` does in eval."""

from __future__ import annotations

import json
import re

from streamlit.testing.v1 import AppTest

from retrieval import TraceStore
from tests.app_helpers import APP, lookup, ok, page_text
from tests.conftest import shared_path

MENU_QUERY = "how do I add a menu"


def _card_sources(at: AppTest) -> list[str]:
    """The sources the evidence cards show (each card's caption starts with its source as a chip)."""
    return [m.group(1) for c in at.caption if (m := re.match(r"`([^`]+)`( ›|$)", c.value))]


def _open_folder(at: AppTest, folder: str) -> AppTest:
    at = at.radio(key="kb_source").set_value("Folder path").run()
    return ok(at.text_input(key="kb_path").set_value(folder).run())


def _exclude(at: AppTest, text: str) -> AppTest:
    return at.text_input(key="kb_exclude").set_value(text).run()


def test_a_hugo_lookup_with_news_excluded_from_the_sidebar_shows_no_release_notes(env):
    hugo = shared_path("hugo_docs", "content", "en")
    at = _open_folder(AppTest.from_file(APP, default_timeout=180).run(), str(hugo))
    at = lookup(at, MENU_QUERY)
    before = _card_sources(at)
    assert any(s.startswith("news/") for s in before), before  # release notes rank without the exclusion
    at = ok(_exclude(at, "news"))
    assert "excluding `news`" in page_text(at)
    assert any("cleared because the excluded folders changed" in i.value for i in at.info)
    at = lookup(at, MENU_QUERY)
    after = _card_sources(at)
    assert after and not any(s.startswith("news/") for s in after), after
    assert "content-management/menus.md" in after


def test_excluding_a_folder_leaves_its_pages_out_and_survives_a_page_switch(env):
    at = ok(_exclude(ok(AppTest.from_file(APP, default_timeout=60).run()), "billing/"))
    assert "excluding `billing`" in page_text(at)
    at = lookup(at, "download invoices")
    assert _card_sources(at) and not any(s.startswith("billing/") for s in _card_sources(at))
    settings = TraceStore(env["traces"]).query("SELECT index_settings FROM tool_invocation")["index_settings"]
    assert [json.loads(s)["excluded_paths"] for s in settings] == [["billing"]]  # the trace names what was left out
    at = ok(at.switch_page("appui/pages/traces.py").run())
    at = ok(at.switch_page("appui/pages/lookup.py").run())
    assert at.text_input(key="kb_exclude").value == "billing/"
    assert "excluding `billing`" in page_text(at)


def test_a_bad_excluded_folder_is_named_and_no_index_opens(env):
    at = _exclude(AppTest.from_file(APP, default_timeout=60).run(), "/etc")
    errors = [e.value for e in at.error]
    assert any("Excluded folders: exclude prefix '/etc' is absolute" in e for e in errors), errors
    assert any(e.startswith("Cannot open the knowledge base: fix the excluded folders") for e in errors), errors
    assert not at.exception
    at = _exclude(at, "news/*")
    assert any("'news/*' is a glob pattern" in e.value for e in at.error), [e.value for e in at.error]
    at = _exclude(at, "../other")
    assert any("contains '..'" in e.value for e in at.error), [e.value for e in at.error]
    at = ok(_exclude(at, ""))
    assert "excluding" not in page_text(at)


def test_an_excluded_folder_that_names_nothing_is_warned(env):
    at = ok(_exclude(AppTest.from_file(APP, default_timeout=60).run(), "biling"))
    assert any("Nothing in this knowledge base is under `biling`" in w.value for w in at.warning)
    assert "Folders: `alerting` `api` `billing`" in page_text(at)
