"""The app's "Why this domain" panel: vote evidence, the outcome in plain words, widening, and old traces."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from appui.panels import domain_view
from retrieval import TraceStore
from tests.index_helpers import WIDEN_KB

APP = str(Path(__file__).resolve().parents[1] / "app.py")
GOLDEN = Path(__file__).resolve().parent / "golden"



def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def _lookup(query: str, **widgets: Any) -> AppTest:
    at = _ok(AppTest.from_file(APP, default_timeout=60).run())
    for key, value in widgets.items():
        widget = at.toggle(key=key) if isinstance(value, bool) else at.number_input(key=key)
        widget.set_value(value)
    at.text_input(key="lookup_query").set_value(query)
    return _ok(at.button(key="lookup_run").click().run())


def _why(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if "Why this domain" in m.value]


def _table(at: AppTest):
    """The evidence table (plain st.dataframe elements keep no key in AppTest, so found by its columns)."""
    return next(d.value for d in at.dataframe if "vote share" in d.value.columns)


def _text(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def test_applied_filter_shows_the_evidence_table_and_names_the_domain(env):
    at = _lookup("download invoices")
    table = _table(at)
    assert table.columns.tolist() == domain_view.COLUMNS
    billing = table.set_index("domain").loc["billing"]
    assert billing["accepted"] == "yes" and "Invoices and payment" in billing["supporting pages"]
    assert billing["vote share"].endswith("%") and int(billing["vote share"][:-1]) >= 90
    line = _why(at)[0]
    assert line.startswith("**Why this domain:** One domain carried (billing, ") and line.endswith("→ filter applied")
    assert "Rule: the top 3 pages of the unfiltered ranking vote" in _text(at) and "min share 10%" in _text(at)


def test_applied_filter_says_what_it_changed_next_to_the_decision(env):
    at = _lookup("download invoices")
    notes = [c.value for c in at.caption if c.value.startswith("The filter changed")]
    assert len(notes) == 1
    effect = at.session_state["lookup_result"]["retrieval_details"]["filter_effect"]
    assert notes[0] == domain_view.effect_note({"filter_effect": effect})


def test_effect_note_in_words_for_a_change_and_for_none():
    moved = {"filter_effect": {"changed": True, "first_changed_rank": 2, "removed": 1, "added": 0}}
    assert domain_view.effect_note(moved) == ("The filter changed the results from rank 2: 1 source(s) from other "
                                              "categories left them and 0 came in.")
    same = {"filter_effect": {"changed": False, "first_changed_rank": None, "removed": 0, "added": 0}}
    assert domain_view.effect_note(same).startswith("The filter changed nothing returned")
    assert domain_view.effect_note({"filter_effect": None}) is None and domain_view.effect_note({}) is None


def test_ambiguous_lookup_says_ambiguous_and_no_filter(env):
    at = _lookup("rotate an API token")
    assert _why(at) == ["**Why this domain:** Two domains carried (api, security) → ambiguous, no filter"]
    accepted = _table(at).set_index("domain")["accepted"]
    assert accepted.to_dict() == {"api": "yes", "security": "yes"}


def test_no_filter_under_an_l1_failure_says_l1_did_not_run(env):
    text = _text(_lookup("rotate an API token", cfg_simulate_l1_failure=True))
    assert "No filter: L1 failed: no search ran" in text
    assert "L1 searched every category" not in text


def test_widened_lookup_warns_with_both_best_scores(tmp_path, monkeypatch):
    for source, body in WIDEN_KB.items():
        (tmp_path / "kb" / source).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "kb" / source).write_text(body, encoding="utf-8")
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_KB", str(tmp_path / "kb"))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(tmp_path / "traces.duckdb"))
    at = _lookup("widget reset", cfg_filter_widen_ratio=0.9)
    stored = TraceStore(tmp_path / "traces.duckdb").query("SELECT retrieval_details FROM tool_invocation")
    best = json.loads(stored["retrieval_details"][0])["filter"]["best_scores"]
    expected = (f"The filter to billing was sent first, but its best score ({best['filtered']:.3f}) was below 0.9 × "
                f"the unfiltered best ({best['unfiltered']:.3f}), so the lookup widened to every category.")
    assert [w.value for w in at.warning] == [expected]
    assert "(then widened: L1 answered from every category)" in _text(at)


def test_compact_views_show_the_outcome_on_both_sides_of_a_comparison(env):
    at = _ok(AppTest.from_file(APP, default_timeout=60).run().switch_page("appui/pages/compare.py").run())
    at.toggle(key="cmpb_l0_filter").set_value(False)
    at.text_input(key="cmp_query").set_value("download invoices")
    at = _ok(at.button(key="cmp_run").click().run())
    lines = [m.value for m in at.markdown if m.value.startswith("Why this domain: ")]
    assert len(lines) == 2 and "One domain carried (billing, " in lines[0]
    assert lines[1] == "Why this domain: L0 filter disabled → no filter"
    assert any("`billing`" in c.value and "✓" in c.value for c in at.caption)


def _render(details: dict, mode: str) -> None:
    """AppTest script: one view of `details` (imports inside, as AppTest runs the function's source)."""
    import json

    from appui.widgets import views

    if mode == "full":
        views.lookup_result({"query": "q", "relevance": {"level": "low"}, "retrieval_details": details,
                             "evidence_blocks": []})
    elif mode == "compact":
        views.compact_details(details, title="Old run")
    else:
        views.trace_in_full({"id": "t1", "query": "q", "retrieval_details": json.dumps(details)})


def _old_details() -> dict:
    details = json.loads((GOLDEN / "retrieval_details_applied_filter.json").read_text())
    old = copy.deepcopy(details)
    for key in ("domain_evidence", "match_domains"):
        old["l0"].pop(key, None)
    return old


@pytest.mark.parametrize("mode", ["full", "compact", "trace"])
@pytest.mark.parametrize("details", [_old_details(), {}, {"l0": None, "filter": None, "l1": None}],
                         ids=["before-the-vote", "empty", "nulls"])
def test_old_details_without_domain_evidence_render_without_exception(details, mode):
    at = AppTest.from_function(_render, kwargs={"details": details, "mode": mode}, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    if details and details["filter"]:
        assert any("One domain carried (alerting) → filter applied" in line for line in _why(at))
    if mode == "full":
        assert "No domain evidence in this trace (recorded before the domain vote)." in _text(at)


@pytest.mark.parametrize(("decision", "evidence", "line"), [
    ({"decision": "skipped_no_domain", "l0_domains": []}, {"basis": "ranking", "min_share": 0.1,
     "uncategorised_share": 0.45, "domains": []}, "Pages without a category hold 45% of the vote → no domain carried"),
    ({"decision": "skipped_no_domain", "l0_domains": []}, {"basis": "none", "domains": []},
     "Nothing voted (no ranked pages, no L0 matches) → no domain carried"),
    ({"decision": "caller", "l0_domains": ["billing"], "applied": {"category": "api"}}, None,
     'Caller\'s category wins → filter `{"category": "api"}`'),
    ({"decision": "disabled", "l0_domains": ["billing"]}, None, "L0 filter disabled → no filter"),
    ({"decision": "applied", "l0_domains": ["billing"], "applied": {"category": "billing"}},
     {"min_coverage": 0.8, "domains": [{"domain": "billing", "share": 0.216, "l0_coverage": 1.0, "accepted": True}]},
     "One domain carried (billing, 22% of the vote; an L0 match covers 100% of the query) → filter applied"),
    ({"decision": "applied", "l0_domains": ["functions"], "applied": {"category": "functions"}},
     {"domains": [{"domain": "functions", "share": 1.0, "accepted": True,
                   "supporting": [{"source": "functions/a.md", "score": 0.27}, {"source": "functions/b.md",
                                                                                "score": 0.12}]}]},
     "One domain carried (functions, 100% of the vote, best page score 0.27) → filter applied"),  # how weak
])
def test_outcome_line_names_what_decided(decision, evidence, line):
    assert domain_view.outcome_line({"filter": decision, "l0": {"domain_evidence": evidence}}) == line


def test_no_widen_note_unless_the_guard_fired():
    assert domain_view.widen_note({"decision": "applied", "applied": {"category": "billing"}}) is None
