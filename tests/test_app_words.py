"""Words that say what is true, and the polish: L1 reasons, relevance basis, the drill, the category picker,
messages phrased for the page, chips that do not wrap."""

from __future__ import annotations

import re
from types import SimpleNamespace

from streamlit.testing.v1 import AppTest

from appui.panels import domain_view
from appui.widgets import wording
from retrieval import LookupConfig, lookup_knowledge
from retrieval.lookup.relevance import assess
from tests.app_helpers import APP, ok


def test_l1_reasons_give_lexical_and_lsa_parts(index):
    result = lookup_knowledge("how do I silence an alert", index=index, config=LookupConfig(l1_static_weight=0.0))
    reasons = [r.reason for b in result.evidence_blocks for r in b.hit_reasons if r.layer == "L1"]
    assert reasons and all(re.fullmatch(r"L1 match: lexical \d\.\d\d, LSA -?\d\.\d\d in '.*'", r) for r in reasons)
    assert not any("semantic" in r for r in reasons)


def test_l1_reasons_give_the_static_part_and_what_it_added(index):
    result = lookup_knowledge("how do I silence an alert", index=index)
    reasons = [r.reason for b in result.evidence_blocks for r in b.hit_reasons if r.layer == "L1"]
    pattern = r"L1 match: lexical \d\.\d\d, LSA -?\d\.\d\d, static -?\d\.\d\d \([+-]\d\.\d{3}\) in '.*'"
    assert reasons and all(re.fullmatch(pattern, r) for r in reasons)


def test_relevance_basis_agrees_with_the_l0_count():
    assert "L0 matched nothing" in assess((), SimpleNamespace(match_count=0), "empty").basis
    basis = assess((), SimpleNamespace(match_count=1), "failed").basis
    assert "L0 matched nothing" not in basis and "none of L0's 1 match(es) was kept" in basis


def test_the_drill_says_l1_failed_no_search_ran():
    assert domain_view.filter_sent({"applied": None}, {"status": "failed"}) == "No filter: L1 failed: no search ran"
    sent = domain_view.filter_sent({"applied": {"category": "billing"}}, {"status": "failed"})
    assert sent.endswith("not used: L1 failed: no search ran")


def test_caller_category_is_a_picker_of_the_bases_domains(env):
    at = ok(AppTest.from_file(APP, default_timeout=60).run())
    options = at.selectbox(key="lookup_category").options
    assert options[0].startswith("(any") and {"billing", "security", "alerting"} <= set(options)
    at.text_input(key="lookup_query").set_value("rotate an API token")
    at.selectbox(key="lookup_category").set_value("billing")  # one form: both are sent with Look up
    at = ok(at.button(key="lookup_run").click().run())
    assert at.session_state["lookup_result"]["retrieval_details"]["filter"]["applied"] == {"category": "billing"}


def test_messages_are_phrased_for_the_page(env):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at = at.radio(key="kb_source").set_value("Folder path").run()
    at = at.text_input(key="kb_path").set_value(str(env["root"] / "nowhere")).run()
    message = at.error[0].value
    assert "knowledge base not found" in message and "--" not in message and "Folder field" in message
    assert wording.for_page("pass --kb-root relative; or --known-item FIELD") == \
        "set the knowledge-base root relative; or a known-item field"


def test_chips_are_whole_boxes_no_wider_than_their_column(env):
    """The style only; tests/test_browser_sidebar_and_chips.py measures a long title's chip in Chromium."""
    at = ok(AppTest.from_file(APP, default_timeout=60).run())
    styles = [h.proto.body for h in at.get("html")]
    assert any(all(rule in body for rule in ("display: inline-block", "max-width: 100%", "overflow-wrap: anywhere"))
               for body in styles), styles
