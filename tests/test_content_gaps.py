"""Issue 53 item 4: content gaps, the questions the knowledge base did not answer, grouped into topics.

On a real trace file over the sample base (tests/gaps_helpers.py) with a PLANTED topic, 300 anomaly-detection
questions in the last week (the base has no page on it) among noise topics, one-off questions, answered
questions, an evaluation run's unanswered rows and older rows: the planted topic comes first, named by its
terms, with its size and "new this window"; the nearest pages are the base's own; answered and run rows never
appear; two runs give the same report."""

from __future__ import annotations

import html
from dataclasses import replace
from datetime import timedelta

import duckdb
import pytest

from retrieval.traces.changes import ReportSection, changes
from retrieval.traces.gaps import (
    ContentGaps,
    GapTopic,
    NearestPage,
    content_gaps,
    normalised,
    trend_words,
)
from tests.gaps_helpers import NOISE_TOPICS, PLANTED_TERMS, UNTIL, WEEK, planted_rows


def _planted_in_window() -> list[str]:
    return [r.query for r in planted_rows() if "anomal" in r.query.lower() and r.run_id is None
            and UNTIL - WEEK <= r.created_at < UNTIL]


def _topic_of(gaps: ContentGaps, word: str) -> GapTopic:
    found = [t for t in gaps.topics if any(word in term for term in t.terms)]
    assert found, f"no topic named by {word!r}: {[t.label for t in gaps.topics]}"
    return found[0]


def test_the_planted_topic_comes_first(planted_gaps):
    first = planted_gaps.topics[0]
    assert all("anomal" in q.lower() for q in first.examples), first.examples
    assert first.size == max(t.size for t in planted_gaps.topics)


def test_the_planted_topic_is_named_by_its_terms(planted_gaps):
    first = planted_gaps.topics[0]
    assert " ".join(PLANTED_TERMS) in first.terms, first.terms
    assert " ".join(PLANTED_TERMS) in first.label


def test_the_planted_topic_has_the_right_size(planted_gaps):
    planted = _planted_in_window()
    first = planted_gaps.topics[0]
    assert first.size == len(planted) == 300
    assert first.distinct == len({normalised(q) for q in planted})


def test_the_planted_topic_is_new_this_window(planted_gaps):
    first = planted_gaps.topics[0]
    assert first.size_before == 0  # its older rows (five weeks back) are in neither window
    assert first.trend_words == "new this window"


def test_a_topic_that_grew_or_fell_says_so(planted_gaps):
    _, before, now = NOISE_TOPICS["ansible"]
    assert _topic_of(planted_gaps, "ansible").trend_words == f"grew from {before} to {now}"
    _, before, now = NOISE_TOPICS["dark mode"]
    assert _topic_of(planted_gaps, "dark").trend_words == f"fell from {before} to {now}"
    _, before, now = NOISE_TOPICS["gdpr"]
    assert _topic_of(planted_gaps, "gdpr").trend_words == f"steady ({before} before, {now} now)"


def test_nearest_pages_are_real_sources_of_the_knowledge_base(planted_gaps, gaps_index):
    for topic in planted_gaps.topics:
        assert 1 <= len(topic.nearest_pages) <= 3
        scores = [p.score for p in topic.nearest_pages]
        assert scores == sorted(scores, reverse=True) and all(0 < s <= 1.0001 for s in scores)
        for page in topic.nearest_pages:
            entry = gaps_index.kb.entry(page.source)
            assert entry is not None and page.title == entry.title
    assert _topic_of(planted_gaps, "ansible").nearest_pages[0].source == "getting-started/install-agent.md"


def test_answered_questions_never_appear(planted_gaps, planted_traces):
    with duckdb.connect(str(planted_traces), read_only=True) as con:
        answered_ids = {r[0] for r in con.execute("SELECT id FROM tool_invocation WHERE relevance_level IN "
                                                  "('high', 'medium')").fetchall()}
        answered = {normalised(r[0]) for r in con.execute("SELECT query FROM tool_invocation WHERE "
                                                          "relevance_level IN ('high', 'medium')").fetchall()}
        unanswered = con.execute("SELECT count(*) FROM tool_invocation WHERE run_id IS NULL AND created_at >= ? "
                                 "AND created_at < ? AND (abstained OR relevance_level IN ('low', 'none'))",
                                 [UNTIL - WEEK, UNTIL]).fetchone()[0]
    assert answered_ids and answered
    for topic in planted_gaps.topics:
        assert not answered_ids & set(topic.invocation_ids)
        assert not answered & {normalised(q) for q in topic.examples}
    assert planted_gaps.questions == unanswered


def test_evaluation_run_rows_never_appear(planted_gaps):
    words = " ".join(term for topic in planted_gaps.topics for term in topic.terms + topic.examples).lower()
    assert "quantum" not in words and "flux" not in words


def test_counts_add_up_and_repeats_weigh_as_many_questions(planted_gaps):
    gaps = planted_gaps
    assert gaps.clustered + gaps.unclustered == gaps.questions
    assert gaps.clustered == sum(t.size for t in gaps.topics) + gaps.more_questions
    assert gaps.distinct < gaps.questions  # planted questions are asked several times each
    first = gaps.topics[0]
    assert first.distinct < first.size and max(first.example_counts) > 1
    assert gaps.questions_before == sum(1 for r in planted_rows() if r.run_id is None and r.abstained
                                        and UNTIL - 2 * WEEK <= r.created_at < UNTIL - WEEK)


def test_topics_are_sorted_by_size(planted_gaps):
    sizes = [t.size for t in planted_gaps.topics]
    assert sizes == sorted(sizes, reverse=True)


def test_examples_are_the_topics_own_questions_and_ids_lead_to_them(planted_gaps, planted_traces):
    first = planted_gaps.topics[0]
    assert 1 <= len(first.examples) <= 5 and len(first.examples) == len(first.example_counts)
    with duckdb.connect(str(planted_traces), read_only=True) as con:
        asked = {r[0] for r in con.execute(f"SELECT query FROM tool_invocation WHERE id IN "
                                           f"({', '.join('?' * len(first.invocation_ids))})",
                                           list(first.invocation_ids)).fetchall()}
    assert asked and all("anomal" in q.lower() for q in asked)


def test_two_runs_give_the_same_report(planted_gaps, planted_traces, gaps_index):
    again = content_gaps(planted_traces, gaps_index, window=timedelta(days=7), until=UNTIL)
    assert again.to_dict() == planted_gaps.to_dict()
    assert again == planted_gaps


def test_max_topics_shows_the_largest_and_counts_the_others(planted_gaps, planted_traces, gaps_index):
    two = content_gaps(planted_traces, gaps_index, window="7d", until=UNTIL, max_topics=2)
    assert two.topics == planted_gaps.topics[:2]
    assert two.more_topics == len(planted_gaps.topics) - 2 + planted_gaps.more_topics
    assert two.more_questions == sum(t.size for t in planted_gaps.topics[2:]) + planted_gaps.more_questions
    assert "not shown" in two.to_markdown()


def test_no_unanswered_question_in_the_window_says_so(quiet_traces, gaps_index):
    gaps = content_gaps(quiet_traces, gaps_index, window="7d", until=UNTIL)
    assert gaps.topics == () and gaps.questions == 0
    assert gaps.empty_reason.startswith("no unanswered questions: all ")
    assert gaps.empty_reason in gaps.to_markdown()


def test_no_production_lookup_in_the_window_says_so(planted_traces, gaps_index):
    gaps = content_gaps(planted_traces, gaps_index, window="7d", until=UNTIL + 10 * WEEK)
    assert gaps.empty_reason == "no production lookups in the window" and gaps.topics == ()


@pytest.mark.parametrize("window", ["7x", "0d", "-3d", "week", ""])
def test_a_bad_window_is_refused_naming_the_flag(planted_traces, gaps_index, window):
    with pytest.raises(ValueError, match="--window takes"):
        content_gaps(planted_traces, gaps_index, window=window, until=UNTIL)


def test_a_bad_until_or_max_topics_is_refused(planted_traces, gaps_index):
    with pytest.raises(ValueError, match="--until takes"):
        content_gaps(planted_traces, gaps_index, window="7d", until="yesterday")
    with pytest.raises(ValueError, match="--max-topics takes"):
        content_gaps(planted_traces, gaps_index, window="7d", until=UNTIL, max_topics=0)


def test_a_base_without_l1_is_refused(planted_traces, gaps_index):
    with pytest.raises(ValueError, match="has no L1 index"):
        content_gaps(planted_traces, replace(gaps_index, l1=None, l1_unavailable_reason="too small"), window="7d")


def test_json_shape(planted_gaps):
    data = planted_gaps.to_dict()
    assert {"since", "until", "window", "definition", "kb", "questions", "distinct", "clustered", "unclustered",
            "questions_before", "topics", "more_topics", "more_questions", "empty_reason", "parameters"} <= set(data)
    topic = data["topics"][0]
    assert set(topic) == {"label", "terms", "size", "distinct", "size_before", "trend", "examples", "nearest_pages",
                          "invocation_ids"}
    assert set(topic["examples"][0]) == {"question", "count"}
    assert set(topic["nearest_pages"][0]) == {"source", "title", "score"}
    assert data["window"] == "7 days" and data["parameters"]["random_state"] == 0


def test_markdown_names_each_topic_its_trend_and_pages(planted_gaps):
    text = planted_gaps.to_markdown()
    first = planted_gaps.topics[0]
    assert text.startswith("## Content gaps\n")
    assert f"| 1 | {first.label} | 300 (" in text and "new this window" in text
    assert first.nearest_pages[0].title in text
    assert f"{planted_gaps.unclustered} in no topic" in text


def test_html_escapes_every_text(planted_gaps):
    hostile = replace(planted_gaps.topics[0], label="<script>x</script>", examples=("a <b>bold</b> & co",),
                      example_counts=(2,), nearest_pages=(NearestPage("x.md", "<i>T</i>", 0.5),))
    page = replace(planted_gaps, topics=(hostile,)).to_html()
    assert "<script>" not in page and html.escape("<script>x</script>") in page
    assert "a &lt;b&gt;bold&lt;/b&gt; &amp; co" in page and "&lt;i&gt;T&lt;/i&gt;" in page


def test_as_section_is_a_report_section_of_the_same_report(planted_gaps):
    section = planted_gaps.as_section()
    assert isinstance(section, ReportSection) and section.title == "Content gaps"
    assert section.markdown.startswith("### Content gaps") and section.data == planted_gaps.to_dict()
    assert "<h3>Content gaps</h3>" in section.html


def test_the_changes_report_takes_the_gaps_as_a_section(planted_gaps, planted_traces):
    report = changes(planted_traces, window="7d", until=UNTIL).with_sections([planted_gaps.as_section()])
    assert "### Content gaps" in report.to_markdown() and "<h3>Content gaps</h3>" in report.to_html()
    assert planted_gaps.topics[0].label in report.to_markdown()


@pytest.mark.parametrize(("now", "before", "words"), [(5, 0, "new this window"), (30, 20, "grew from 20 to 30"),
                                                      (10, 15, "fell from 15 to 10"),
                                                      (12, 10, "steady (10 before, 12 now)")])
def test_trend_words(now, before, words):
    assert trend_words(now, before) == words


def test_a_topic_lists_its_questions_most_asked_first_for_the_drill_down(planted_gaps):
    topic = planted_gaps.topics[0]
    counts = [count for _, count in topic.questions]
    assert len(topic.questions) == min(topic.distinct, 200) and counts == sorted(counts, reverse=True)
    assert sum(counts) == topic.size or len(topic.questions) == 200  # every question of the window, repeats counted
    assert set(topic.examples) <= {question for question, _ in topic.questions}
