"""Issue 49 in the app: the words match the numbers. A question nothing answers is said plainly first (item 3)."""

from __future__ import annotations

from tests.app_helpers import lookup, ok, page_text, run_app

NOTHING = "what is the capital of France"


def test_a_question_nothing_answers_leads_with_the_plain_sentence(env):
    at = lookup(ok(run_app()), NOTHING)
    shown = [m.value for m in at.markdown]
    lead = shown[shown.index(f"### “{NOTHING}”") + 1]
    assert "does not seem to hold an answer" in lead and "nothing in it matches the question" in lead
    boxes = [i.value for i in at.info]
    assert not any("Fewer blocks" in b or "No evidence blocks" in b for b in boxes), boxes  # no fallback-like box
    text = page_text(at)
    assert "none vote" not in text and "without semantic support" not in text
    assert "Why no blocks:" in text  # the reason stays, as a footnote


def test_an_abstained_lookup_with_blocks_says_they_are_not_an_answer(env):
    at = lookup(ok(run_app()), "when is the deadline for filing my income taxes")
    assert at.session_state["lookup_result"]["relevance"]["abstain"]
    shown = [m.value for m in at.markdown]
    lead = shown[shown.index("### “when is the deadline for filing my income taxes”") + 1]
    assert "does not seem to hold an answer" in lead and "closest pages found, not an answer" in lead
