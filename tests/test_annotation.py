"""Issue 52 item 3: every mark names its annotator, each annotator's latest mark is theirs, and queues of pages
(the hole loop's included) are assigned to annotators, with what each has left to judge."""

from __future__ import annotations

import json

import duckdb
import pytest

from eval import annotation, holes, judgements
from eval.cli import main
from retrieval import TraceStore
from retrieval.traces import pack
from retrieval.traces.schema import SCHEMA_VERSION

PAGES = [("rotate a token", "api/tokens.md"), ("rotate a token", "security/sso.md"), ("pay", "billing/invoices.md")]


def test_record_refuses_a_mark_without_its_annotator(store):
    for who in ("", "   ", None):
        with pytest.raises(ValueError, match="needs the annotator who made it"):
            judgements.record(store, "q", "a.md", 1, who=who)
    with pytest.raises(TypeError):
        judgements.record(store, "q", "a.md", 1)  # who is required
    judgements.record(store, "q", "a.md", 2, who="  ana@example.com ")
    assert judgements.latest(store)[["grade", "who"]].values.tolist() == [[2, "ana@example.com"]]


def test_by_annotator_keeps_each_annotators_latest_mark_of_each_page(store):
    judgements.record(store, "q", "a.md", 0, who="ana")
    judgements.record(store, "q", "a.md", 2, who="bob")
    judgements.record(store, "q", "a.md", 1, who="ana")  # ana changed her mind
    judgements.record(store, "q", "b.md", 0, who="bob")
    frame = annotation.by_annotator(store)
    assert frame.columns.tolist() == ["query", "source", "who", "grade", "created_at"]
    assert frame[["source", "who", "grade"]].values.tolist() == [["a.md", "ana", 1], ["a.md", "bob", 2],
                                                                  ["b.md", "bob", 0]]
    assert judgements.latest(store)[["source", "grade"]].values.tolist() == [["a.md", 1], ["b.md", 0]]
    assert annotation.annotators(store) == ["ana", "bob"]


def test_marks_made_before_annotators_had_names_read_as_unnamed(store):
    with store.connect() as con:  # a mark as the app kept it before: no name
        con.execute("INSERT INTO judgement VALUES ('q', 'a.md', 1, '', now()::TIMESTAMP, NULL, NULL)")
    judgements.record(store, "q", "a.md", 0, who="ana")
    assert annotation.by_annotator(store)["who"].tolist() == ["(unnamed)", "ana"]


def test_clearing_one_annotators_marks_keeps_the_others(store):
    judgements.record(store, "q", "a.md", 1, who="ana")
    judgements.record(store, "q", "a.md", 0, who="bob")
    assert judgements.clear(store, "q", "a.md", who="ana") == 1
    assert annotation.by_annotator(store)["who"].tolist() == ["bob"]
    assert store.query("SELECT who FROM judgement_cleared")["who"].tolist() == ["ana"]
    with pytest.raises(ValueError, match="needs their name"):
        judgements.clear(store, "q", "a.md", who=" ")


def test_assigning_again_adds_nothing(store):
    assert annotation.assign(store, "week-1", PAGES, ["ana", "bob"], by="lead") == 6
    assert annotation.assign(store, "week-1", PAGES, ["ana", "bob"], by="lead") == 0
    assert annotation.assign(store, "week-1", [*PAGES, ("pay", "billing/plans.md")], ["bob", "cy"], by="lead") == 5
    assert annotation.assign(store, "week-2", PAGES[:1], ["ana"], by="lead") == 1  # another queue: its own rows
    table = annotation.queues(store)
    assert table.columns.tolist() == annotation.QUEUE_COLUMNS
    assert table[["queue", "annotator", "assigned"]].values.tolist() == [
        ["week-1", "ana", 3], ["week-1", "bob", 4], ["week-1", "cy", 4], ["week-2", "ana", 1]]
    assert annotation.queue_names(store) == ["week-1", "week-2"]


def test_assign_refuses_bad_input(store):
    with pytest.raises(ValueError, match="a queue needs a name"):
        annotation.assign(store, " ", PAGES, ["ana"], by="lead")
    with pytest.raises(ValueError, match="at least one annotator"):
        annotation.assign(store, "q", PAGES, [], by="lead")
    with pytest.raises(ValueError, match="an annotator needs a name"):
        annotation.assign(store, "q", PAGES, ["ana", ""], by="lead")
    with pytest.raises(ValueError, match="a page needs a query and a source"):
        annotation.assign(store, "q", [("q", " ")], ["ana"], by="lead")
    with pytest.raises(ValueError, match="who assigns"):
        annotation.assign(store, "q", PAGES, ["ana"], by="")
    assert annotation.queues(store).empty


def test_pending_shrinks_as_marks_are_made(store):
    annotation.assign(store, "week-1", PAGES, ["ana", "bob"], by="lead")
    assert sorted(annotation.pending(store, "ana")[["query", "source"]].apply(tuple, axis=1)) == sorted(PAGES)
    judgements.record(store, *PAGES[0], 1, who="ana")
    judgements.record(store, *PAGES[1], 0, who="bob")  # bob's mark does not take a page off ana's list
    left = annotation.pending(store, "ana", "week-1")
    assert left.columns.tolist() == ["query", "source", "queue"]
    assert sorted(left[["query", "source"]].apply(tuple, axis=1)) == sorted(PAGES[1:])
    assert len(annotation.pending(store, "bob")) == 2
    counts = annotation.queues(store).set_index("annotator")
    assert counts.loc["ana", ["judged", "pending"]].tolist() == [1, 2]
    for page in PAGES[1:]:
        judgements.record(store, *page, 2, who="ana")
    assert annotation.pending(store, "ana").empty
    with pytest.raises(ValueError, match="unknown queue 'week-9'"):
        annotation.pending(store, "ana", "week-9")


def test_assign_holes_takes_the_hole_loops_pages(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    queue = holes.judging_queue(store, a, b)
    assert queue.holes
    added = annotation.assign_holes(store, a, b, "holes", ["ana", "bob"], by="lead")
    assert added == 2 * len(queue.holes)
    wanted = [(h.query, h.source) for h in queue.holes]
    assert sorted(annotation.pending(store, "bob")[["query", "source"]].apply(tuple, axis=1)) == sorted(wanted)
    assert annotation.assign_holes(store, a, b, "holes", ["ana", "bob"], by="lead") == 0


def test_eval_assign_takes_a_pages_file_or_the_holes(hole_runs, tmp_path, capsys):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    traces = str(hole_runs["traces"])
    pages = tmp_path / "pages.tsv"
    pages.write_text("query\tsource\n" + "".join(f"{q}\t{s}\n" for q, s in PAGES), encoding="utf-8")
    assert main(["assign", "--traces", traces, "--queue", "file", "--annotators", "ana,bob", "--pages", str(pages),
                 "--by", "lead"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("queue file: 6 new assignment(s)") and "ana" in out and "bob" in out
    assert main(["assign", "--traces", traces, "--queue", "holes", "--annotators", "cy", "--holes", a, b,
                 "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["added"] == len(holes.judging_queue(store, a, b).holes) == done["annotators"][0]["pending"]
    pages.write_text("only a query\n", encoding="utf-8")
    assert main(["assign", "--traces", traces, "--queue", "file", "--annotators", "ana", "--pages", str(pages)]) == 2
    assert "line 1: expected `query<TAB>source`" in capsys.readouterr().err


def test_a_schema_13_file_upgrades_to_the_annotator_tables(tmp_path):
    path = tmp_path / "t.duckdb"
    with TraceStore(path) as store:
        judgements.record(store, "q", "a.md", 1, who="ana")
    pack(path, timeout=30.0)
    con = duckdb.connect(str(path))
    con.execute("DROP TABLE judgement_assignment")
    con.execute("DROP TABLE judgement_adjudication")
    con.execute("DELETE FROM schema_version WHERE version > 13")
    con.close()
    store = TraceStore(path)
    assert annotation.assign(store, "week-1", [("q", "a.md")], ["ana", "bob"], by="lead") == 2
    assert store.query("SELECT max(version) AS v FROM schema_version")["v"][0] == SCHEMA_VERSION
    assert annotation.pending(store, "bob")["source"].tolist() == ["a.md"]
    assert annotation.by_annotator(store)["who"].tolist() == ["ana"]  # the old mark is still there
    assert store.query("SELECT count(*) AS n FROM judgement_adjudication")["n"][0] == 0
