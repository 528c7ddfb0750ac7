"""The Compare page's hole loop (AppTest): the run card's Judged@10, the judging queue of two runs grouped by
question with the judgement buttons, and the conclusions before and after the marks once a page is judged."""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

from eval import judgements
from retrieval import TraceStore
from tests.app_helpers import ok, page_text


def _marks(traces) -> dict[tuple[str, str], int]:
    frame = judgements.latest(TraceStore(traces))
    return {(q, s): int(g) for q, s, g in zip(frame["query"], frame["source"], frame["grade"], strict=True)}


def _open(at) -> int:
    """How many pages the queue says carry no judgement."""
    sentence = next(c.value for c in at.caption if "carry no judgement" in c.value)
    return int(re.search(r"; (\d+) page\(s\) in those top 10s", sentence).group(1))


def _conclusions(at):
    """The table "Conclusions before and after the new marks" (a plain dataframe: found by its columns)."""
    return next(d.value for d in at.dataframe if "changed?" in d.value.columns)


def test_the_run_card_says_judged_at_10(holes_app, hole_runs):
    shown = hole_runs["b"].diagnostics["judged_at_10"]
    assert f"Judged@10: {shown:.2f} (the share of each question's top 10" in page_text(holes_app)


def test_the_queue_groups_unjudged_pages_by_question_with_both_ranks(holes_app):
    text = page_text(holes_app)
    assert "**Judging queue**" in text
    assert "8 of 8 paired question(s) changed their top 10" in text
    assert "**q1**: “how do I rotate an API token”" in text
    assert any(c.value.endswith("· rank in A — · rank in B 2") for c in holes_app.caption)
    assert "Conclusions before and after" not in text  # no mark yet


def test_judging_a_page_from_the_queue_keeps_the_mark_and_shows_the_conclusions(holes_app, hole_runs):
    first = next(c.value for c in holes_app.caption if c.value.endswith("rank in B 2")).split("`")[1]
    waiting = _open(holes_app)
    at = ok(holes_app.button(key="holes_0_judge_1_0").click().run())  # q1's page at B's rank 2: not relevant
    assert _marks(hole_runs["traces"]) == {("how do I rotate an API token", first): 0}
    assert _open(at) == waiting - 1  # judged: out of the queue
    table = _conclusions(at)
    assert table.columns.tolist()[:5] == ["metric", "delta before", "p before", "delta after", "p after"]
    assert set(table["changed?"]) == {"no"}  # a page judged not relevant changes no metric
    assert any("No conclusion changed" in c.value for c in at.caption)


def test_judging_bs_second_pages_relevant_flips_a_tie(holes_app, hole_runs):
    at = holes_app
    for number in range(8):  # each question's first hole, B's rank 2, judged relevant
        at = ok(at.button(key=f"holes_{number}_judge_1_1").click().run())
    assert len(_marks(hole_runs["traces"])) == 8
    table = _conclusions(at).set_index("metric")
    assert table.loc["recall@10", "changed?"] == "yes"
    assert table.loc["recall@10", "before"] == "no difference"
    assert table.loc["recall@10", "after"].startswith("B better, significant")
    assert any("changed the conclusion on" in w.value and "recall@10" in w.value for w in at.warning)


def test_the_queue_warns_when_the_runs_labels_cannot_be_read_again(holes_app, hole_runs):
    """Issue 49 item 5: the queue fell back to "stored relevant pages, each at grade 1" without a word."""
    assert not [w for w in holes_app.warning if "labels were not read again" in w.value]
    (Path(hole_runs["dataset"].path) / "queries.jsonl").unlink()  # the labelled set is gone since the runs
    st.cache_data.clear()  # the queue is cached per comparison and judgements' version
    at = ok(holes_app.run())
    warned = [w.value for w in at.warning if "labels were not read again" in w.value]
    assert warned and "each at grade 1" in warned[0]
