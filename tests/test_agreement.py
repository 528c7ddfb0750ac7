"""Issue 52 item 4: how far named annotators agree (Cohen's κ per pair, Krippendorff's α across all, with bootstrap
intervals, per question set), the disputed pages and their adjudication, and qrels by a stated rule. The
coefficients are checked against the `krippendorff` package and scikit-learn on marks made through record()."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from eval import agreement, annotation, judgements
from eval.cli import main
from retrieval import TraceStore
from tests.fixtures.annotation_fixtures import ANNOTATORS, GRADES, QUEUE, QUEUED
from tests.kb_fixture import write_kb

TOLERANCE = 1e-9


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`python -m eval ARGS` in a real process (no trace file named by the environment)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LOOKUP_KNOWLEDGE_TRACES", "LOOKUP_KNOWLEDGE_KB")}
    return subprocess.run([sys.executable, "-m", "eval", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def _sklearn_kappa(matrix: np.ndarray, i: int, j: int) -> float:
    both = ~np.isnan(matrix[i]) & ~np.isnan(matrix[j])
    return float(cohen_kappa_score(matrix[i, both].astype(int), matrix[j, both].astype(int)))


def _check_against_the_libraries(found: dict, matrix: np.ndarray) -> None:
    """`found` (Agreement.to_dict(), or the CLI's JSON) equals krippendorff's α and scikit-learn's κ to 1e-9."""
    expected_alpha = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    assert found["alpha"] == pytest.approx(expected_alpha, abs=TOLERANCE)
    assert found["annotators"] == list(ANNOTATORS)
    pairs = {(p["a"], p["b"]): p for p in found["pairs"]}
    assert len(pairs) == 3
    for i in range(3):
        for j in range(i + 1, 3):
            pair = pairs[(ANNOTATORS[i], ANNOTATORS[j])]
            assert pair["kappa"] == pytest.approx(_sklearn_kappa(matrix, i, j), abs=TOLERANCE)
            assert pair["n"] == int((~np.isnan(matrix[i]) & ~np.isnan(matrix[j])).sum())


def test_eval_agreement_on_three_annotators_equals_krippendorff_and_sklearn(three_annotators, tmp_path):
    """The acceptance test: α (ordinal) and every pair's κ, through the API and through `python -m eval
    agreement --json` in a real process, equal the `krippendorff` package's and scikit-learn's to 1e-9."""
    store, matrix = three_annotators["store"], three_annotators["matrix"]
    assert np.isnan(matrix).any() and set(np.unique(matrix[~np.isnan(matrix)])) == {0.0, 1.0, 2.0}
    found = agreement.compute(store)
    assert found.pages == len(GRADES) and found.metric == "ordinal"
    _check_against_the_libraries(found.to_dict(), matrix)
    store.close()
    done = _cli(["agreement", "--traces", str(three_annotators["traces"]), "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    _check_against_the_libraries(json.loads(done.stdout), matrix)


def test_the_text_output_shows_the_pairs_alpha_the_sets_and_how_to_adjudicate(three_annotators, tmp_path):
    store = three_annotators["store"]
    annotation.assign(store, QUEUE, QUEUED, ["ana", "bob"], by="lead")
    store.close()
    done = _cli(["agreement", "--traces", str(three_annotators["traces"])], tmp_path)
    assert done.returncode == 0, done.stderr
    alpha = krippendorff.alpha(reliability_data=three_annotators["matrix"], level_of_measurement="ordinal")
    assert f"Krippendorff's alpha (ordinal, all annotators): {alpha:.4f} (95% CI" in done.stdout
    for a, b in (("ana", "bob"), ("ana", "cy"), ("bob", "cy")):
        assert any(line.split()[:2] == [a, b] for line in done.stdout.splitlines())
    assert QUEUE in done.stdout and agreement.NO_QUEUE in done.stdout
    assert "python -m eval adjudicate --traces FILE" in done.stdout
    disputed = sum(len({g for g in grades if g is not None}) > 1 for _, grades in GRADES)
    assert f"disagreements: {disputed} page(s)" in done.stdout


def test_nominal_alpha_on_binary_marks_equals_krippendorffs(store):
    rows = [(1, 1, None), (0, 1, 0), (1, 1, 1), (0, 0, None), (1, 0, 1), (None, 1, 1), (0, 0, 0), (1, None, 0)]
    for page, grades in enumerate(rows):
        for who, grade in zip(ANNOTATORS, grades, strict=True):
            if grade is not None:
                judgements.record(store, "q", f"p{page}.md", grade, who=who)
    matrix = np.array([[np.nan if g[i] is None else g[i] for g in rows] for i in range(3)], dtype=float)
    found = agreement.compute(store, metric="nominal")
    assert found.alpha == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"),
                                        abs=TOLERANCE)
    assert agreement.krippendorff_alpha(matrix, "nominal") == pytest.approx(found.alpha, abs=TOLERANCE)


def test_our_alpha_equals_krippendorffs_on_random_matrices_with_missing_values():
    rng = np.random.default_rng(7)
    for _ in range(50):
        matrix = rng.integers(0, 3, size=(rng.integers(2, 6), rng.integers(3, 40))).astype(float)
        matrix[rng.random(matrix.shape) < 0.3] = np.nan
        if ((~np.isnan(matrix)).sum(axis=0) >= 2).sum() < 2 or len(np.unique(matrix[~np.isnan(matrix)])) < 2:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # krippendorff divides 0 by 0 when undefined
            for level in ("nominal", "ordinal", "interval"):
                expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
                ours = agreement.krippendorff_alpha(matrix, level)
                assert (ours is None) if np.isnan(expected) else ours == pytest.approx(expected, abs=TOLERANCE)


def test_intervals_contain_the_estimate_and_repeat_with_the_seed(three_annotators):
    store = three_annotators["store"]
    first = agreement.compute(store, seed=3, resamples=500)
    again = agreement.compute(store, seed=3, resamples=500)
    other = agreement.compute(store, seed=4, resamples=500)
    assert first.alpha_ci == again.alpha_ci and first.pairs == again.pairs
    assert first.alpha_ci != other.alpha_ci  # the seed decides the resamples
    assert first.alpha_ci[0] <= first.alpha <= first.alpha_ci[1]
    for pair in first.pairs:
        assert pair.ci_low <= pair.kappa <= pair.ci_high
    narrow = agreement.compute(store, seed=3, resamples=500, level=0.5)
    assert first.alpha_ci[0] <= narrow.alpha_ci[0] <= narrow.alpha_ci[1] <= first.alpha_ci[1]


def test_a_pair_with_no_common_page_has_no_kappa_and_says_why(store):
    judgements.record(store, "q", "a.md", 1, who="ana")
    judgements.record(store, "q", "a.md", 0, who="bob")
    judgements.record(store, "q", "b.md", 1, who="cy")
    judgements.record(store, "q", "b.md", 2, who="bob")
    found = agreement.compute(store)
    pair = next(p for p in found.pairs if (p.a, p.b) == ("ana", "cy"))
    assert pair.n == 0 and pair.kappa is None and pair.ci_low is None and "no page judged by both" in pair.reason
    assert "ana–cy undefined (undefined: no page judged by both)" in found.sentence()
    assert json.loads(json.dumps(found.to_dict()))["pairs"][1]["kappa"] is None  # JSON null, never NaN


def test_identical_marks_leave_kappa_and_alpha_undefined_with_a_reason(store):
    for page in ("a.md", "b.md", "c.md"):
        for who in ("ana", "bob"):
            judgements.record(store, "q", page, 1, who=who)
    found = agreement.compute(store)
    assert found.alpha is None and found.alpha_ci is None and "no disagreement to expect" in found.alpha_reason
    (pair,) = found.pairs
    assert pair.kappa is None and "agreement by chance is 1" in pair.reason
    assert found.disagreements == ()
    assert "NaN" not in json.dumps(found.to_dict())


def test_one_annotator_has_no_agreement_to_compute(store, tmp_path):
    judgements.record(store, "q", "a.md", 1, who="ana")
    judgements.record(store, "q", "b.md", 0, who="ana")
    found = agreement.compute(store)
    assert found.pairs == () and found.alpha is None and "only one annotator (ana)" in found.reason
    store.close()
    done = _cli(["agreement", "--traces", str(tmp_path / "traces.duckdb")], tmp_path)
    assert done.returncode == 0 and "only one annotator (ana) marked 2 page(s)" in done.stdout


def test_no_marks_says_so_and_exits_0(store, tmp_path):
    assert "no marks" in agreement.compute(store).reason
    store.close()
    done = _cli(["agreement", "--traces", str(tmp_path / "traces.duckdb"), "--json"], tmp_path)
    assert done.returncode == 0 and "no marks" in json.loads(done.stdout)["reason"]


@pytest.mark.parametrize(("args", "words"), [
    (["--traces", "missing.duckdb"], "no trace file missing.duckdb"),
    (["--queue", "nowhere"], "unknown queue 'nowhere'; queues in this trace file: week-1"),
    (["--level", "1.5"], "--level must be between 0 and 1"),
    (["--level", "0"], "--level must be between 0 and 1"),
    (["--level", "many"], "--level must be between 0 and 1"),
])
def test_bad_input_to_eval_agreement_exits_2_with_one_line(three_annotators, tmp_path, args, words):
    store = three_annotators["store"]
    annotation.assign(store, QUEUE, QUEUED, ["ana"], by="lead")
    store.close()
    base = ["--traces", str(three_annotators["traces"])] if "--traces" not in args else []
    done = _cli(["agreement", *base, *args], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and words in done.stderr


def test_bad_input_to_adjudicate_and_assign_exits_2_with_one_line(three_annotators, tmp_path, capsys, monkeypatch):
    """In this process (eval.cli.main, as `python -m eval` runs it): the acceptance test above runs the real
    process; six more interpreters would only add their start-up to the suite."""
    monkeypatch.chdir(tmp_path)
    traces = str(three_annotators["traces"])
    three_annotators["store"].close()
    (tmp_path / "pages.tsv").write_text("download invoices\tmisc/faq.md\n", encoding="utf-8")
    for args, words in ((["adjudicate", "--query", "q", "--source", "a.md", "--grade", "5", "--who", "lead"],
                         "grade must be one of [0, 1, 2]"),
                        (["adjudicate", "--query", "q", "--source", "a.md", "--grade", "1", "--who", "lead"],
                         "nobody has marked 'a.md' for 'q'"),
                        (["assign", "--queue", "w", "--annotators", "ana", "--pages", "none.tsv"], "no pages file"),
                        (["assign", "--queue", "w", "--annotators", " , ", "--pages", "pages.tsv"],
                         "assign the queue to at least one annotator"),
                        (["assign", "--queue", " ", "--annotators", "ana", "--pages", "pages.tsv"],
                         "a queue needs a name"),
                        (["assign", "--queue", "w", "--annotators", "ana", "--holes", "r1", "r2"], "r1")):
        status, err = main([*args, "--traces", traces]), capsys.readouterr().err
        assert status == 2, (args, err)
        assert err.count("\n") == 1 and words in err, (args, err)


def test_per_set_splits_the_pages_by_queue_and_no_queue(three_annotators):
    store, matrix = three_annotators["store"], three_annotators["matrix"]
    annotation.assign(store, QUEUE, QUEUED, ["ana", "bob", "cy"], by="lead")
    found = agreement.compute(store)
    assert [s.scope for s in found.per_set] == [QUEUE, agreement.NO_QUEUE]
    queued, rest = found.per_set
    assert queued.pages == 6 and rest.pages == len(GRADES) - 6
    expected = krippendorff.alpha(reliability_data=matrix[:, :6], level_of_measurement="ordinal")
    assert queued.alpha == pytest.approx(expected, abs=TOLERANCE)
    only = agreement.compute(store, queue=QUEUE)
    assert only.pages == 6 and only.alpha == pytest.approx(expected, abs=TOLERANCE)
    assert agreement.compute(store, question_set=agreement.NO_QUEUE).pages == len(GRADES) - 6
    with pytest.raises(ValueError, match="unknown question set"):
        agreement.compute(store, question_set="nope")
    assert found.sets_frame()["set"].tolist() == [QUEUE, agreement.NO_QUEUE]


def test_disagreements_list_each_annotators_grade_and_whether_adjudicated(three_annotators):
    store = three_annotators["store"]
    found = agreement.compute(store)
    disputed = {page: grades for page, grades in GRADES if len({g for g in grades if g is not None}) > 1}
    assert {(d.query, d.source) for d in found.disagreements} == set(disputed)
    first = found.disagreements[0]
    expected = {w: g for w, g in zip(ANNOTATORS, disputed[(first.query, first.source)], strict=True) if g is not None}
    assert dict(first.grades) == expected and not first.adjudicated
    agreement.adjudicate(store, first.query, first.source, 1, who="lead", note="read the page twice")
    agreement.adjudicate(store, first.query, first.source, 2, who="lead")  # the latest adjudication counts
    again = agreement.compute(store)
    settled = next(d for d in again.disagreements if (d.query, d.source) == (first.query, first.source))
    assert settled.adjudicated and settled.adjudicated_grade == 2 and again.adjudicated == 1
    assert agreement.adjudications(store)["note"].tolist() == [""]


def test_adjudication_refuses_bad_input(three_annotators):
    store = three_annotators["store"]
    with pytest.raises(ValueError, match="grade must be one of"):
        agreement.adjudicate(store, "download invoices", "misc/faq.md", 3, who="lead")
    with pytest.raises(ValueError, match="adjudicator's name"):
        agreement.adjudicate(store, "download invoices", "misc/faq.md", 1, who=" ")
    with pytest.raises(ValueError, match="nobody has marked"):
        agreement.adjudicate(store, "download invoices", "nowhere.md", 1, who="lead")


def _marks(store: TraceStore, pages: dict[str, tuple[int | None, ...]]) -> None:
    for source, grades in pages.items():
        for who, grade in zip(ANNOTATORS, grades, strict=True):
            if grade is not None:
                judgements.record(store, "q", source, grade, who=who)


def _grades(frame) -> dict[str, int]:
    return dict(zip(frame["source"], frame["grade"].astype(int), strict=True))


def test_consensus_latest_is_the_latest_mark_whoever_made_it(store):
    _marks(store, {"a.md": (0, 2, 1)})  # cy marked last
    frame = agreement.consensus(store, "latest")
    assert _grades(frame) == {"a.md": 1}
    assert frame.equals(judgements.latest(store)[["query", "source", "grade"]])


def test_consensus_adjudicated_keeps_agreed_and_adjudicated_pages_and_counts_the_rest(store):
    _marks(store, {"agreed.md": (1, 1, None), "disputed.md": (0, 2, None), "settled.md": (0, 2, 2),
                   "alone.md": (2, None, None)})
    agreement.adjudicate(store, "q", "settled.md", 1, who="lead")
    frame = agreement.consensus(store, "adjudicated")
    assert _grades(frame) == {"agreed.md": 1, "settled.md": 1, "alone.md": 2}
    assert frame.attrs["left_out"] == 1 and "1 disputed page(s) nobody adjudicated left out" in frame.attrs["note"]


def test_consensus_majority_takes_the_most_common_grade_and_a_tie_goes_to_the_lower(store):
    _marks(store, {"two-to-one.md": (2, 2, 0), "tie.md": (2, 1, None), "three-way.md": (0, 1, 2)})
    frame = agreement.consensus(store, "majority")
    assert _grades(frame) == {"two-to-one.md": 2, "tie.md": 1, "three-way.md": 0}
    assert "2 tie(s) went to the lower grade" in frame.attrs["note"]


def test_consensus_mean_rounds_half_up(store):
    _marks(store, {"half.md": (1, 2, None), "low.md": (0, 0, 1), "high.md": (2, 2, 1)})
    assert _grades(agreement.consensus(store, "mean")) == {"half.md": 2, "low.md": 0, "high.md": 2}


def test_an_adjudicated_grade_overrides_the_marks_under_every_rule_but_latest(store):
    _marks(store, {"a.md": (2, 2, 2)})
    agreement.adjudicate(store, "q", "a.md", 0, who="lead")
    for rule in ("adjudicated", "majority", "mean"):
        assert _grades(agreement.consensus(store, rule)) == {"a.md": 0}, rule
    assert _grades(agreement.consensus(store, "latest")) == {"a.md": 2}
    with pytest.raises(ValueError, match="unknown judgement rule 'vote'; known rules: latest, adjudicated"):
        agreement.consensus(store, "vote")


def test_eval_judgements_rule_exports_the_consensus_and_latest_stays_as_it_was(store, tmp_path, capsys):
    _marks(store, {"a.md": (2, 1, 1), "b.md": (0, 2, None)})
    traces = str(tmp_path / "traces.duckdb")
    assert main(["judgements", "--traces", traces]) == 0
    before = capsys.readouterr().out
    assert main(["judgements", "--traces", traces, "--rule", "latest"]) == 0
    assert capsys.readouterr().out == before
    qid = judgements.query_id("q")
    assert before.splitlines() == [f"{qid} 0 a.md 1", f"{qid} 0 b.md 2"]
    assert main(["judgements", "--traces", traces, "--rule", "majority"]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == [f"{qid} 0 a.md 1", f"{qid} 0 b.md 0"] and "1 tie(s)" in out.err
    assert main(["judgements", "--traces", traces, "--rule", "adjudicated", "--format", "jsonl"]) == 2
    assert "leaves no page" in capsys.readouterr().err


def _documented_annotator_commands() -> list[str]:
    """The ```sh lines of docs/evaluation.md's section on several annotators."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "evaluation.md").read_text(encoding="utf-8")
    section = text.split("## Several annotators: agreement and adjudication", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("python -m eval")]


def test_the_documented_annotator_commands_run_on_a_file_of_three_annotators(three_annotators, tmp_path):
    three_annotators["store"].close()  # the fixture's file is tmp_path/traces.duckdb, as the docs name it
    (tmp_path / "pages.tsv").write_text("".join(f"{q}\t{s}\n" for q, s in QUEUED), encoding="utf-8")
    commands = _documented_annotator_commands()
    assert len(commands) >= 4
    for command in commands:
        done = _cli(shlex.split(command)[3:], tmp_path)
        assert done.returncode == 0, (command, done.stderr)
    found = agreement.compute(TraceStore(tmp_path / "traces.duckdb"), queue=QUEUE)
    assert found.pages == len(QUEUED) and found.adjudicated == 1


def test_eval_run_takes_the_judgement_rule(tmp_path, capsys):
    kb = write_kb(tmp_path / "kb")
    marks = TraceStore(tmp_path / "marks.duckdb")
    for who, grade in (("ana", 1), ("bob", 0), ("cy", 0)):
        judgements.record(marks, "rotate an API token", "security/tokens.md", grade, who=who)
    judgements.record(marks, "download invoices", "billing/invoices.md", 1, who="ana")
    base = ["run", "--kb", str(kb), "--judgements", str(tmp_path / "marks.duckdb"), "--traces",
            str(tmp_path / "runs.duckdb"), "--no-progress", "--no-baseline", "--no-oracle", "--no-attribution",
            "--json"]
    assert main(base) == 0  # latest: cy's 0 came last, so only the invoices question is labelled
    latest = json.loads(capsys.readouterr().out)
    assert latest["dataset"]["queries"] == 1 and latest["dataset"]["name"] == "kb:judgements"
    assert main([*base, "--judgement-rule", "majority"]) == 0
    assert json.loads(capsys.readouterr().out)["dataset"]["name"] == "kb:judgements-majority"
    assert main([*base, "--judgement-rule", "vote"]) == 2
    assert "unknown judgement rule 'vote'" in capsys.readouterr().err
    assert main(["run", "--kb", str(kb), "--queries", "q.jsonl", "--judgement-rule", "mean", "--no-progress"]) == 2
    assert "--judgement-rule only applies with --judgements" in capsys.readouterr().err
