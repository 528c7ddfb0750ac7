"""Named annotators and blind judging on the result cards (issue 52 item 3, AppTest): a mark records the annotator
(the typed name, or the signed-in email), a mark without a name asks for one and records nothing, and blind mode
hides the system's rank, score, relevance and other annotators' marks."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from appui.widgets.annotator import ASK
from eval import annotation, judgements
from retrieval import TraceStore
from tests.app_helpers import APP, AUTH, lookup, named, ok, page_text


def _app() -> AppTest:
    return ok(AppTest.from_file(APP, default_timeout=60).run())


def _marks(traces) -> list[tuple[str, str, int]]:
    frame = annotation.by_annotator(TraceStore(traces))
    return [(w, s, int(g)) for w, s, g in zip(frame["who"], frame["source"], frame["grade"], strict=True)]


def _first_source(at: AppTest) -> str:
    return next(c.value.split("`")[1] for c in at.caption if c.value.startswith("`"))


def test_a_mark_records_the_typed_annotator_name(env):
    at = lookup(named(_app(), "ana"), "rotate an API token")
    source = _first_source(at)
    ok(at.button(key="lookup_judge_1_1").click().run())
    assert _marks(env["traces"]) == [("ana", source, 1)]
    assert "Annotator: `ana`" in page_text(at)


def test_a_signed_in_user_marks_as_their_email_and_has_no_name_field(env):
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets.update({"auth": AUTH, "access": {"allowed_domains": ["example.com"]}})  # the gate admits bo
    at.user = {"is_logged_in": True, "email": "Bo@Example.com", "email_verified": True}
    at = ok(at.run())
    assert "annotator_name" not in [t.key for t in at.text_input]  # the signed-in email cannot be changed
    assert "Annotator: `bo@example.com` (signed in)" in page_text(at)
    at = lookup(at, "rotate an API token")
    ok(at.button(key="lookup_judge_1_0").click().run())
    assert [(w, g) for w, _, g in _marks(env["traces"])] == [("bo@example.com", 0)]


def test_a_mark_without_a_name_asks_for_one_and_records_nothing(env):
    at = lookup(_app(), "rotate an API token")
    assert "Annotator: none yet" in page_text(at)
    at = at.button(key="lookup_judge_1_1").click().run()
    assert [w.value for w in at.warning] == [ASK]
    assert _marks(env["traces"]) == []


def test_clearing_takes_back_only_the_annotators_own_mark(env):
    at = lookup(named(_app(), "ana"), "rotate an API token")
    source = _first_source(at)
    judgements.record(TraceStore(env["traces"]), "rotate an API token", source, 0, who="bob")
    at = ok(at.button(key="lookup_judge_1_1").click().run())
    at = ok(at.button(key="lookup_judge_1_clear").click().run())
    assert _marks(env["traces"]) == [("bob", source, 0)]


def _blind(at: AppTest, on: bool) -> AppTest:
    return ok(at.toggle(key="blind_judging").set_value(on).run())


def test_blind_mode_hides_rank_score_relevance_and_other_annotators_marks(env):
    at = lookup(named(_app(), "ana"), "rotate an API token")
    source = _first_source(at)
    judgements.record(TraceStore(env["traces"]), "rotate an API token", source, 1, who="bob")
    at = _blind(at, True)
    text = page_text(at)
    for hidden in ("score `", "**Relevance:", "**1. ", "bob: relevant", "**L0 hints**", "**Timings (ms)**",
                   "Filter decision"):
        assert hidden not in text, hidden
    assert "Blind judging: the system's rank, scores" in text
    assert f"`{source}`" in text  # the pages themselves are shown, with their buttons
    at = ok(at.button(key="lookup_judge_1_1").click().run())
    assert ("ana", 1) in [(w, g) for w, _, g in _marks(env["traces"])]


def test_with_blind_mode_off_the_card_shows_rank_score_and_other_marks(env):
    at = lookup(named(_app(), "ana"), "rotate an API token")
    source = _first_source(at)
    judgements.record(TraceStore(env["traces"]), "rotate an API token", source, 1, who="bob")
    at = _blind(_blind(at, True), False)
    text = page_text(at)
    for shown in ("score `", "**Relevance:", "**1. ", ":blue-badge[bob: relevant]"):
        assert shown in text, shown


def test_blind_mode_keeps_the_page_order_from_telling_the_rank(env):
    at = lookup(named(_app(), "ana"), "rotate an API token")
    ranked = [c.value.split("`")[1] for c in at.caption if c.value.startswith("`")]
    blind = [c.value.split("`")[1] for c in _blind(at, True).caption if c.value.startswith("`")]
    assert sorted(blind) == sorted(ranked) and len(ranked) >= 2
    from appui.widgets.views import blind_order
    assert blind == [b["source"] for b in blind_order([{"source": s} for s in ranked])]


def test_the_blind_trace_on_the_traces_page_hides_scores(env):
    from tests.app_helpers import select
    at = lookup(named(_app(), "ana"), "download invoices")
    at = _blind(ok(select(ok(at.switch_page("appui/pages/traces.py").run()), "tr_table", 0)), True)
    text = page_text(at)
    assert "Trace in full" in text and "score `" not in text and "**Relevance:" not in text
    at = ok(at.button(key="tr_row_judge_1_1").click().run())
    assert [w for w, _, _ in _marks(env["traces"])] == ["ana"]


def test_the_hole_loop_hides_the_ranks_in_a_and_b_when_blind(holes_app):
    assert any("rank in A" in c.value for c in holes_app.caption)
    at = _blind(holes_app, True)
    assert not any("rank in A" in c.value for c in at.caption)
