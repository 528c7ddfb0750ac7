"""Issue 52 item 5: a comparison scored again under each annotator's marks says when its verdict flips with the
annotator, in eval.agreement.flips, in `python -m eval compare` and in the reports (with the agreement figures)."""

from __future__ import annotations

import json

from eval import agreement, holes, judgements
from eval.cli import main
from eval.compare import compare_runs
from eval.reports import render
from eval.runs import load_run

PERMUTATIONS = 2000


def _plant(hole_runs: dict) -> None:
    """ana judges B's second page of every changed question relevant, bob judges it not relevant."""
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    for found in holes.judging_queue(store, a, b).by_query().values():
        judgements.record(store, found[0].query, found[0].source, 2, who="ana")
        judgements.record(store, found[0].query, found[0].source, 0, who="bob")


def test_a_verdict_that_flips_with_the_annotator_is_reported(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    _plant(hole_runs)
    comparison = compare_runs(store, a, b, permutations=PERMUTATIONS)
    found = agreement.flips(store, comparison, permutations=PERMUTATIONS)
    assert found.annotators == ("ana", "bob") and "recall@10" in found.flipped()
    recall = next(m for m in found.metrics if m.metric == "recall@10")
    verdicts = {v.who: v.outcome for v in recall.verdicts}
    assert recall.before == "tie" and verdicts == {"ana": "B better", "bob": "tie"}
    assert any(line.startswith("recall@10: the verdict changes with the annotator: ana B better") for line in
               found.lines())
    assert "the conclusion depends on who judged" in found.sentence()
    assert json.loads(json.dumps(found.to_dict()))["flipped"] == found.flipped()


def test_one_annotator_cannot_flip_a_verdict(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    first = holes.judging_queue(store, a, b).holes[0]
    judgements.record(store, first.query, first.source, 1, who="ana")
    comparison = compare_runs(store, a, b, permutations=PERMUTATIONS)
    found = agreement.flips(store, comparison, permutations=PERMUTATIONS)
    assert found.metrics == () and "only ana marked the paired questions" in found.sentence()
    assert "Annotator agreement" not in render(comparison, "markdown", store=store)


def test_annotators_who_agree_keep_every_verdict(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    for found in holes.judging_queue(store, a, b).by_query().values():
        for who in ("ana", "bob"):
            judgements.record(store, found[0].query, found[0].source, 1, who=who)
    comparison = compare_runs(store, a, b, permutations=PERMUTATIONS)
    found = agreement.flips(store, comparison, permutations=PERMUTATIONS)
    assert found.flipped() == [] and found.lines() == [] and "every metric keeps its verdict" in found.sentence()


def test_eval_compare_says_which_verdicts_flip_with_the_annotator(hole_runs, capsys):
    a, b, traces = hole_runs["a"].run_id, hole_runs["b"].run_id, str(hole_runs["traces"])
    _plant(hole_runs)
    assert main(["compare", a, b, "--traces", traces, "--permutations", str(PERMUTATIONS), "--no-facets"]) == 0
    out = capsys.readouterr().out
    assert "## Verdicts by annotator" in out and "## Annotator agreement" in out
    assert "recall@10: the verdict changes with the annotator: ana B better" in out
    assert main(["compare", a, b, "--traces", traces, "--permutations", str(PERMUTATIONS), "--no-facets",
                 "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert "recall@10" in found["annotator_flips"]["flipped"]
    assert found["annotator_agreement"]["annotators"] == ["ana", "bob"]


def test_reports_carry_the_agreement_when_two_annotators_marked_the_questions(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    plain = render(load_run(store, b), "markdown", store=store)
    assert "Annotator agreement" not in plain
    _plant(hole_runs)
    report = render(load_run(store, b), "markdown", store=store)
    assert "## Annotator agreement" in report and "Verdicts by annotator" not in report  # a run has no verdict
    expected = agreement.compute(store, queries=list(load_run(store, b).per_query["query"]))
    assert len(expected.disagreements) > 0 and f"disagreements: {len(expected.disagreements)} page(s)" in report
    comparison = compare_runs(store, a, b, permutations=PERMUTATIONS, facets=[])
    html = render(comparison, "html", store=store)
    assert "Annotator agreement" in html and "Verdicts by annotator" in html
