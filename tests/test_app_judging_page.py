"""The Judging page (issue 52 items 3-4, AppTest): the annotator's queue (only their pending pages, blind by
default, three grades, shrinking after a mark), assigning a queue from pages already marked or from the hole loop,
the Agreement view's figures (equal to eval.agreement.compute's), adjudication, and the Export page's rules."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from appui.widgets.annotator import ASK
from eval import agreement, annotation, judgements
from eval.compare import compare_runs
from eval.holes import judging_queue
from retrieval import TraceStore
from tests.app_helpers import APP, named, ok, page_text

JUDGING = "appui/pages/judging.py"


def _judging(name: str | None = "ana") -> AppTest:
    at = ok(AppTest.from_file(APP, default_timeout=60).run())
    if name:
        at = named(at, name)
    return ok(at.switch_page(JUDGING).run())


def _progress(at: AppTest) -> str:
    return at.progress[0].text


def _card(at: AppTest) -> tuple[str, str]:
    """The (query, source) of the page the queue shows."""
    query = next(m.value for m in at.markdown if m.value.startswith("**Query:**")).split("“")[1].rstrip("”")
    source = next(c.value for c in at.caption if c.value.startswith("`")).split("`")[1]
    return query, source


def _mark_all(traces, grades: dict[str, list[int]], pages) -> None:
    """Each annotator's grades of `pages`, in order, recorded straight into the trace file."""
    store = TraceStore(traces)
    for who, row in grades.items():
        for (query, source), grade in zip(pages, row, strict=True):
            judgements.record(store, query, source, grade, who=who)


def test_the_queue_shows_only_the_annotators_pending_pages_and_shrinks_after_a_mark(audit_queue):
    store = TraceStore(audit_queue["traces"])
    annotation.assign(store, "carol only", [("escalation when nobody acknowledges", "alerting/routing.md")],
                      ["carol"], by="lead")
    order = [tuple(p) for p in annotation.pending(store, "ana")[["query", "source"]].values]
    assert sorted(order) == sorted(audit_queue["pages"])
    at = _judging("ana")
    assert _progress(at) == "0 of 3 judged"
    first = _card(at)
    assert first == order[0]
    assert "escalation when nobody acknowledges" not in page_text(at)  # carol's page is not ana's
    at = ok(at.button(key="jq_grade_2").click().run())
    marks = annotation.by_annotator(store)
    assert marks[["who", "query", "source", "grade"]].values.tolist() == [["ana", *first, 2]]
    assert _progress(at) == "1 of 3 judged" and _card(at) == order[1]
    assert len(annotation.pending(store, "ana")) == 2 and len(annotation.pending(store, "bob")) == 3
    for _ in range(2):
        at = ok(at.button(key="jq_grade_0").click().run())
    assert _progress(at) == "3 of 3 judged"
    assert any("Nothing left to judge for `ana`" in s.value for s in at.success)


def test_the_queue_is_blind_unless_turned_off(audit_queue):
    store = TraceStore(audit_queue["traces"])
    query, source = annotation.pending(store, "ana")[["query", "source"]].values[0]
    judgements.record(store, query, source, 1, who="bob")
    at = _judging("ana")
    assert _card(at) == (query, source)
    assert "bob: relevant" not in page_text(at) and "Other annotators" not in page_text(at)
    assert f"**Query:** “{query}”" in page_text(at)  # the query and the page, nothing of the system
    at = ok(at.toggle(key="jq_blind").set_value(False).run())
    assert "Other annotators: bob: relevant" in page_text(at)


def test_the_queue_without_a_name_asks_for_one(audit_queue):
    at = _judging(None)
    assert ASK in [w.value for w in at.warning]
    assert not at.progress


def test_assigning_from_marks_gives_others_the_same_pages(audit_queue):
    pages = audit_queue["pages"][:2]
    _mark_all(audit_queue["traces"], {"ana": [1, 0]}, pages)
    at = _judging("lead")
    at = ok(at.tabs[1].radio(key="ja_source").set_value("Pages already marked").run())
    at.text_input(key="ja_queue").set_value("second look")
    at = ok(at.multiselect(key="ja_marked_by").set_value(["ana"]).run())
    assert "2 page(s) marked by ana" in page_text(at)
    at.text_input(key="ja_others").set_value("bob, carol")
    at = ok(at.button(key="ja_assign").click().run())
    assert "4 assignment(s) added to queue “second look” for bob, carol." in [s.value for s in at.success]
    store = TraceStore(audit_queue["traces"])
    for who in ("bob", "carol"):
        assert sorted(map(tuple, annotation.pending(store, who, "second look")[["query", "source"]].values)) == \
            sorted(pages)
    table = next(d.value for d in at.dataframe if "pending" in d.value.columns)
    assert set(table["queue"]) == {"audit", "second look"}


def test_assigning_asks_for_annotators_and_a_queue_name(audit_queue):
    _mark_all(audit_queue["traces"], {"ana": [1]}, audit_queue["pages"][:1])
    at = _judging("lead")
    at = ok(at.radio(key="ja_source").set_value("Pages already marked").run())
    at = ok(at.multiselect(key="ja_marked_by").set_value(["ana"]).run())
    at = at.button(key="ja_assign").click().run()
    assert any("Name the queue first" in w.value for w in at.warning)
    at.text_input(key="ja_queue").set_value("q")
    at = at.button(key="ja_assign").click().run()
    assert any("at least one annotator" in w.value for w in at.warning)
    assert annotation.queue_names(TraceStore(audit_queue["traces"])) == ["audit"]


def test_the_hole_loop_is_assigned_to_annotators_from_the_compare_page(holes_app, hole_runs):
    at = holes_app
    at.text_input(key="holes_others").set_value("bob")
    at = ok(at.button(key="holes_assign").click().run())
    store = TraceStore(hole_runs["traces"])
    pending = annotation.pending(store, "bob")
    assert len(pending) > 0 and set(pending["queue"]) == {f"holes {hole_runs['a'].run_id} vs {hole_runs['b'].run_id}"}
    assert any(f"{len(pending)} assignment(s) added" in s.value for s in at.success)


THREE = {"ana": [2, 1, 0], "bob": [2, 0, 0], "carol": [1, 0, 1]}


def _agreement_tab(audit_queue, queue: str | None = None) -> AppTest:
    _mark_all(audit_queue["traces"], THREE, audit_queue["pages"])
    at = _judging("ana")
    if queue:
        at = ok(at.selectbox(key="jg_queue").set_value(queue).run())
    return at


def test_the_agreement_view_shows_the_figures_of_eval_agreement_compute(audit_queue):
    at = _agreement_tab(audit_queue)
    expected = agreement.compute(TraceStore(audit_queue["traces"]))
    assert expected.alpha is not None and len(expected.pairs) == 3
    metric = next(m for m in at.metric if m.label.startswith("Krippendorff's α"))
    assert metric.value == f"{expected.alpha:.3f}"
    assert expected.sentence() + "." in page_text(at)
    pairs = next(d.value for d in at.dataframe if "kappa" in d.value.columns)
    pd.testing.assert_frame_equal(pairs.reset_index(drop=True), expected.pairs_frame(), check_dtype=False)
    sets = next(d.value for d in at.dataframe if "set" in d.value.columns)
    assert sets["set"].tolist() == expected.sets_frame()["set"].tolist() == ["audit"]
    disputes = next(d.value for d in at.dataframe if "adjudicated" in d.value.columns and "query" in d.value.columns)
    assert len(disputes) == len(expected.disagreements) == 3


def test_the_agreement_of_one_queue(audit_queue):
    at = _agreement_tab(audit_queue, "audit")
    expected = agreement.compute(TraceStore(audit_queue["traces"]), queue="audit")
    assert next(m for m in at.metric if m.label.startswith("Krippendorff's α")).value == f"{expected.alpha:.3f}"


def test_adjudicating_a_disputed_page_records_the_annotators_grade(audit_queue):
    at = _agreement_tab(audit_queue)
    store = TraceStore(audit_queue["traces"])
    dispute = agreement.compute(store).disagreements[1]
    at = ok(at.selectbox(key="jg_dispute").set_value(1).run())
    at.text_input(key="jg_note").set_value("the page answers it")
    at = ok(at.button(key="jg_adjudicate_1").click().run())
    settled = agreement.adjudications(store)
    assert settled[["query", "source", "grade", "who"]].values.tolist() == [[dispute.query, dispute.source, 1, "ana"]]
    assert any("adjudicated by `ana`: relevant" in s.value for s in at.success)
    assert agreement.compute(store).adjudicated == 1
    assert "3 page(s) graded differently, 1 adjudicated" in page_text(at)


@pytest.mark.parametrize("rule", agreement.RULES)
def test_export_with_each_rule(audit_queue, rule):
    _mark_all(audit_queue["traces"], THREE, audit_queue["pages"])
    at = ok(AppTest.from_file(APP, default_timeout=60).run().switch_page("appui/pages/export.py").run())
    at = ok(at.radio(key="ex_what").set_value("Judgements").run())
    at = ok(at.radio(key="ex_consensus_rule").set_value(rule).run())
    expected = agreement.consensus(TraceStore(audit_queue["traces"]), rule)
    if expected.empty:  # adjudicated: every page is disputed and none settled
        assert rule == "adjudicated" and expected.attrs["left_out"] == 3
        assert any("3 disputed page(s) without adjudication are left out" in w.value for w in at.warning)
        return
    shown = next(d.value for d in at.dataframe if "grade" in d.value.columns)
    pd.testing.assert_frame_equal(shown.reset_index(drop=True)[["query", "source", "grade"]],
                                  expected.reset_index(drop=True), check_dtype=False)
    at = ok(at.radio(key="ex_judgement_format").set_value("qrels TSV").run())
    assert at.get("download_button")[0].label == "Download qrels.tsv"
    assert expected.attrs["note"] in page_text(at)


def test_the_hole_loop_says_which_verdicts_flip_with_the_annotator(holes_app, hole_runs):
    store = TraceStore(hole_runs["traces"])
    queue = judging_queue(store, hole_runs["a"].run_id, hole_runs["b"].run_id)
    firsts = [found[0] for found in queue.by_query().values()]
    assert not any("changes with the annotator" in w.value for w in holes_app.warning)
    for hole in firsts:  # ana finds B's second pages relevant, bob does not
        judgements.record(store, hole.query, hole.source, 1, who="ana")
        judgements.record(store, hole.query, hole.source, 0, who="bob")
    at = ok(holes_app.run())
    expected = agreement.flips(store, compare_runs(store, hole_runs["a"].run_id, hole_runs["b"].run_id))
    assert "recall@10" in expected.flipped()
    sentence = expected.sentence()
    assert any(w.value == sentence[0].upper() + sentence[1:] + "." for w in at.warning)
    assert any("recall@10: the verdict changes with the annotator" in m.value for m in at.markdown)


def test_assigning_the_hole_loop_of_two_runs_on_the_assign_tab(holes_app, hole_runs):
    run_a, run_b = hole_runs["a"].run_id, hole_runs["b"].run_id
    at = ok(holes_app.switch_page(JUDGING).run())
    at.text_input(key="ja_queue").set_value("week 12")
    at.selectbox(key="ja_run_a").set_value(run_a)
    at.selectbox(key="ja_run_b").set_value(run_b)
    at.text_input(key="ja_others").set_value("bob")
    at = ok(at.button(key="ja_assign").click().run())
    store = TraceStore(hole_runs["traces"])
    holes = judging_queue(store, run_a, run_b).holes
    assert sorted(map(tuple, annotation.pending(store, "bob", "week 12")[["query", "source"]].values)) == \
        sorted({(h.query, h.source) for h in holes})
    assert any(f"{len({(h.query, h.source) for h in holes})} assignment(s) added to queue “week 12”" in s.value
               for s in at.success)
