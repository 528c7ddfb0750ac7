"""Results on screen belong to the knowledge base and configuration that produced them (AppTest)."""

from __future__ import annotations

import pytest

from tests.app_helpers import lookup, ok, page_text, run_app
from tests.kb_fixture import write_kb

pytestmark = pytest.mark.usefixtures("env")  # the tiny knowledge base and an empty trace file (tests/conftest.py)


def _has_result(at) -> bool:
    return any(m.value.startswith("### “") for m in at.markdown)


def test_switching_the_knowledge_base_clears_the_lookup(tmp_path):
    at = lookup(ok(run_app()), "download invoices")
    assert _has_result(at) and "fingerprint" in page_text(at)
    other = write_kb(tmp_path / "other-kb")
    (other / "extra.md").write_text("---\ntitle: Extra page\ncategory: Misc\n---\nSomething else entirely.\n")
    at = at.radio(key="kb_source").set_value("Folder path").run()
    at = ok(at.text_input(key="kb_path").set_value(str(other)).run())
    assert not _has_result(at)
    assert any("cleared because the knowledge base changed" in i.value for i in at.info)
    assert "lookup_result" not in at.session_state


def test_a_missing_knowledge_base_clears_the_lookup(tmp_path):
    at = lookup(ok(run_app()), "download invoices")
    at = at.radio(key="kb_source").set_value("Folder path").run()
    at = at.text_input(key="kb_path").set_value(str(tmp_path / "nowhere")).run()
    assert "knowledge base not found" in at.error[0].value
    assert not _has_result(at)


def test_changing_the_configuration_marks_the_lookup_stale():
    at = lookup(ok(run_app()), "download invoices")
    at = ok(at.number_input(key="cfg_top_k").set_value(3).run())
    assert _has_result(at)
    assert any("Stale" in w.value and "`top_k`" in w.value for w in at.warning)
    at = lookup(at, "download invoices")
    assert not any("Stale" in w.value for w in at.warning)


def test_compare_result_is_cleared_when_the_base_changes(tmp_path):
    at = ok(run_app().switch_page("appui/pages/compare.py").run())
    at.text_input(key="cmp_query").set_value("download invoices")
    at = ok(at.button(key="cmp_run").click().run())
    assert "cmp_result" in at.session_state
    other = write_kb(tmp_path / "other-kb")
    (other / "extra.md").write_text("---\ntitle: Extra page\ncategory: Misc\n---\nSomething else entirely.\n")
    at = at.radio(key="kb_source").set_value("Folder path").run()
    at = ok(at.text_input(key="kb_path").set_value(str(other)).run())
    assert "cmp_result" not in at.session_state
