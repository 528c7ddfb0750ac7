"""Issue 34, item 3: TREC in and out. An external system's run file (BM25 from rank-bm25, written here in TREC
format as any other tool would) imports, scores as pytrec_eval scores the same files, and compares with a
lookup run; our run written as a TREC file and imported back keeps its metrics; the analysts' marks come out
as TREC qrels; bad files are refused with the file, the line and what a line needs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from rank_bm25 import BM25Okapi

from eval import cli, runs
from eval.compare import compare_runs
from eval.datasets import load_dataset, load_query_set
from eval.imported import import_run
from eval.judgements import query_id, record
from eval.reports import render
from eval.trec import TrecFormatError, read_qrels, read_run, run_lines
from eval.trec_export import judgements_file, run_file
from retrieval import LookupConfig
from retrieval.kb import load_knowledge_base
from retrieval.paths import PROJECT_ROOT

SAMPLE = PROJECT_ROOT / "data"
pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier (a dev extra) is not installed")

METRICS = ["ndcg@10", "recall@10", "recall@100", "mrr@10", "map@100", "hit@10", "p@10"]
TREC_MEASURES = {"ndcg@10": "ndcg_cut_10", "recall@10": "recall_10", "recall@100": "recall_100",
                 "map@100": "map_cut_100", "hit@10": "success_10", "p@10": "P_10"}


def _bm25_run_file(dataset, path, depth=100):
    """What another tool would write: rank-bm25 over the sample base's pages, top `depth`, TREC format."""
    kb = load_knowledge_base(dataset.kb_path)
    sources = [e.source for e in kb.entries]
    engine = BM25Okapi([f"{e.title} {' '.join(c.text for c in e.chunks)}".lower().split() for e in kb.entries])
    lines = []
    for query in dataset.queries:
        scores = engine.get_scores(query.text.lower().split())
        top = sorted(range(len(sources)), key=lambda i: -scores[i])[:depth]
        lines += [f"{query.id} Q0 {sources[i]} {rank} {scores[i]:.4f} bm25-script" for rank, i in enumerate(top, 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _pytrec(run_path, dataset):
    """pytrec_eval's means over the dataset's answerable questions, on the file as written."""
    run = {}
    for line in run_path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    qrels = {q.id: {d: int(g) for d, g in q.qrels.items()} for q in dataset.queries if q.answerable}
    scored = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES.values())).evaluate(run)
    means = {ours: sum(v[measure] for v in scored.values()) / len(qrels) for ours, measure in TREC_MEASURES.items()}
    top10 = {q: dict(sorted(docs.items(), key=lambda kv: (-kv[1], tuple(-b for b in kv[0].encode()) + (1,)))[:10])
             for q, docs in run.items()}  # MRR@10 is recip_rank over each query's first 10 in trec_eval's order
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    means["mrr@10"] = sum(v["recip_rank"] for v in rr.values()) / len(qrels)
    return means


def test_an_external_bm25_run_imports_and_scores_as_pytrec_eval_scores_it(sample_set, store, tmp_path):
    path = _bm25_run_file(sample_set, tmp_path / "bm25.run")
    imported = import_run(store, sample_set, path, name="BM25 script", metrics=METRICS)
    expected = _pytrec(path, sample_set)
    for name in METRICS:
        assert imported.metrics[name] == pytest.approx(expected[name], abs=1e-4), name  # means stored at 4 places
    assert imported.run_id.startswith("import-bm25-script-")
    assert imported.diagnostics["imported"]["questions_not_ranked"] == 0
    assert imported.config["system"] == "external" and imported.overrides == {"system": "BM25 script"}
    report = render(imported, "markdown")
    assert "- system: BM25 script, imported from " in report and "settings changed" not in report
    assert "filter_applied_rate" not in report and "an imported run made no lookups" in report  # no lookup figures
    assert 0 < imported.diagnostics["judged_at_10"] <= 1  # each question's relevant pages are judged


def test_an_imported_run_compares_with_a_lookup_run_on_the_same_dataset(sample_set, store, tmp_path):
    lookup = runs.run_evaluation(sample_set, LookupConfig(svd_dims=8), store=store, metrics=METRICS, oracle=False,
                                 baseline=False, attribute=False)
    path = _bm25_run_file(sample_set, tmp_path / "bm25.run")
    imported = import_run(store, sample_set, path, name="bm25", metrics=METRICS)
    comparison = compare_runs(store, imported.run_id, lookup.run_id, permutations=500)
    assert comparison.unpaired == {"only_in_a": 0, "only_in_b": 0}
    assert comparison.metrics["ndcg@10"]["n"] == len(lookup.per_query)
    assert comparison.config_diff == {"system": ["external bm25", "lookup"]}
    assert comparison.kb_fingerprints[0] == comparison.kb_fingerprints[1] is not None  # one base: the app groups them


def test_an_imported_run_is_offered_beside_the_lookup_runs_of_its_base(sample_set, store, tmp_path):
    """The Compare page's pickers offer the runs of one group (dataset and base): an imported run is in the
    lookup run's group though it made no lookup, and its label names the system."""
    from appui.data import runs as runs_data

    lookup = runs.run_evaluation(sample_set, LookupConfig(svd_dims=8), store=store, metrics=["ndcg@10"],
                                 oracle=False, baseline=False, attribute=False)
    imported = import_run(store, sample_set, _bm25_run_file(sample_set, tmp_path / "b.run"), name="prod ranker")
    table = runs_data.run_table(store, runs.list_runs(store)).set_index("run_id")
    assert table.loc[imported.run_id, "group"] == table.loc[lookup.run_id, "group"]
    assert "base not recorded" not in table.loc[imported.run_id, "group"]
    assert table.loc[imported.run_id, "overrides"] == {"system": "prod ranker"}


def test_a_round_trip_of_our_run_through_the_trec_format_keeps_its_metrics(sample_set, store, tmp_path):
    ours = runs.run_evaluation(sample_set, LookupConfig(svd_dims=8), store=store, metrics=METRICS, oracle=False,
                               baseline=False, attribute=False)
    path = tmp_path / "ours.run"
    path.write_text(run_file(store, ours.run_id), encoding="utf-8")
    back = import_run(store, sample_set, path, name="round trip", metrics=METRICS)
    assert back.metrics == ours.metrics
    assert back.per_query["query_id"].tolist() == ours.per_query["query_id"].tolist()
    for name in METRICS:
        assert back.per_query[name].tolist() == pytest.approx(ours.per_query[name].tolist())
    assert _pytrec(path, sample_set)["ndcg@10"] == pytest.approx(ours.metrics["ndcg@10"], abs=1e-4)  # trec_eval agrees


def test_report_format_trec_writes_every_question_in_order_with_decreasing_scores(sample_set, store, tmp_path):
    ours = runs.run_evaluation(sample_set, LookupConfig(svd_dims=8), store=store, metrics=["ndcg@10"], oracle=False,
                               baseline=False, attribute=False)
    out = tmp_path / "run.trec"
    assert cli.main(["report", ours.run_id, "--format", "trec", "--traces", str(store.path), "--output",
                     str(out)]) == 0
    lines = [line.split() for line in out.read_text().splitlines()]
    assert {fields[5] for fields in lines} == {ours.run_id} and {f[1] for f in lines} == {"Q0"}
    first = [f for f in lines if f[0] == ours.per_query["query_id"][0]]
    assert [f[2] for f in first][:10] == ours.per_query["top_sources"][0]
    assert [int(f[3]) for f in first] == list(range(1, len(first) + 1))
    scores = [float(f[4]) for f in first]
    assert all(a > b for a, b in zip(scores, scores[1:], strict=False))
    assert {f[0] for f in lines} == {q.id for q in sample_set.queries}  # unanswerable questions' rankings too


def test_reading_a_run_orders_ties_as_trec_eval_does(tmp_path):
    path = tmp_path / "tied.run"
    path.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq1 Q0 c 3 1.0 t\nq1 Q0 ab 4 1.0 t\n", encoding="utf-8")
    assert read_run(path).ranked("q1") == ["a", "c", "b", "ab"]  # score, then docid descending; rank ignored
    qrels = {"q1": {"ab": 1}}
    run = {"q1": {"a": 2.0, "b": 1.0, "c": 1.0, "ab": 1.0}}
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q1"]["recip_rank"] == 0.25


def test_writing_a_run_keeps_our_order_when_scores_tie_or_are_missing():
    text = run_lines([("q1", ["x", "a", "m", "z"], [0.5, 0.5, None, 0.7])], "my run!")
    fields = [line.split() for line in text.splitlines()]
    assert [f[2] for f in fields] == ["x", "a", "m", "z"] and {f[5] for f in fields} == {"my_run_"}
    scores = [float(f[4]) for f in fields]
    assert scores[0] == 0.5 and all(a > b for a, b in zip(scores, scores[1:], strict=False))


@pytest.mark.parametrize(("content", "said"), [
    ("q1 Q0 a 1 0.5\n", "5 fields"),
    ("q1 Q0 a one 0.5 t\n", "rank 'one'"),
    ("q1 Q0 a 1 high t\n", "score 'high'"),
    ("q1 Q0 a 1 nan t\n", "score 'nan'"),
    ("q1 Q0 a 1 0.5 t\nq1 Q0 a 2 0.4 t\n", "listed twice"),
    ("\n\n", "is empty"),
])
def test_a_bad_run_file_is_refused_with_its_line_and_what_a_line_needs(tmp_path, content, said):
    path = tmp_path / "bad.run"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(TrecFormatError, match=said) as caught:
        read_run(path)
    assert str(path) in str(caught.value)


def test_qrels_are_read_in_trec_and_beir_layouts_and_conflicts_refused(tmp_path):
    trec = tmp_path / "q.trec"
    trec.write_text("1 0 d1 2\n1 0 d2 0\n2 0 d3 1\n", encoding="utf-8")
    assert read_qrels(trec) == {"1": {"d1": 2.0, "d2": 0.0}, "2": {"d3": 1.0}}
    beir = tmp_path / "q.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n", encoding="utf-8")
    assert read_qrels(beir) == {"1": {"d1": 1.0}}
    trec.write_text("1 0 d1 2\n1 0 d1 1\n", encoding="utf-8")
    with pytest.raises(TrecFormatError, match="line 2: document 'd1' of query '1' is graded 1 here and 2"):
        read_qrels(trec)


def test_an_import_of_another_datasets_run_is_refused(sample_set, store, tmp_path):
    path = tmp_path / "other.run"
    path.write_text("PLAIN-1 Q0 MED-10 1 3.0 x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="none of the 1 query ids"):
        import_run(store, sample_set, path, name="other")
    path.write_text(f"{sample_set.queries[0].id} Q0 MED-10 1 3.0 x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="none of the 1 documents"):
        import_run(store, sample_set, path, name="other")
    assert store.query("SELECT count(*) AS n FROM eval_run")["n"][0] == 0  # nothing stored


def test_questions_the_file_does_not_rank_score_zero_and_are_named(sample_set, store, tmp_path):
    first = sample_set.queries[0]
    relevant = next(d for d, g in first.qrels.items() if g > 0)
    path = tmp_path / "one.run"
    path.write_text(f"{first.id} Q0 {relevant} 1 1.0 x\nnot-a-question Q0 {relevant} 1 1.0 x\n", encoding="utf-8")
    result = import_run(store, sample_set, path, name="one", metrics=["hit@10"])
    notes = result.diagnostics["imported"]
    answerable = [q for q in sample_set.queries if q.answerable]
    assert result.metrics["hit@10"] == pytest.approx(round(1 / len(answerable), 4))
    assert notes["questions_not_ranked"] == len(sample_set.queries) - 1
    assert notes["queries_not_in_dataset_examples"] == ["not-a-question"]


def test_the_import_run_command_prints_the_metrics_and_how_to_compare(sample_set, store, tmp_path, capsys):
    path = _bm25_run_file(sample_set, tmp_path / "bm25.run")
    code = cli.main(["import-run", str(path), "--name", "bm25", "--dataset", str(SAMPLE), "--traces",
                     str(store.path), "--metrics", "ndcg@10,mrr@10"])
    out = capsys.readouterr().out
    assert code == 0 and "ndcg@10" in out and "python -m eval compare RUN import-bm25-" in out
    assert cli.main(["import-run", str(tmp_path / "missing.run"), "--name", "x", "--dataset", str(SAMPLE),
                     "--traces", str(store.path)]) == 2
    assert "no run file" in capsys.readouterr().err


def test_judgements_format_trec_writes_the_marks_as_qrels(store, tmp_path):
    record(store, "how do I install", "getting-started/install-linux.md", 1, who="ana")
    record(store, "how do I install", "alerting/overview.md", 0, who="ana")
    text = judgements_file(store, "trec")
    qid = query_id("how do I install")
    assert sorted(text.splitlines()) == [f"{qid} 0 alerting/overview.md 0",
                                         f"{qid} 0 getting-started/install-linux.md 1"]
    out = tmp_path / "marks.qrels"
    done = subprocess.run([sys.executable, "-m", "eval", "judgements", "--format", "trec", "--traces",
                           str(store.path), "--output", str(out)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert read_qrels(out) == {qid: {"alerting/overview.md": 0.0, "getting-started/install-linux.md": 1.0}}
    assert json.loads(judgements_file(store, "jsonl").splitlines()[0])["relevant"] == [
        "getting-started/install-linux.md"]


def _qrels_file(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_trec_qrels_label_a_query_file_instead_of_its_relevant_field(sample_set, tmp_path):
    first, second = sample_set.queries[0], sample_set.queries[1]
    path = _qrels_file(tmp_path / "mine.qrels", [f"{first.id} 0 alerting/overview.md 2",
                                                 f"{first.id} 0 getting-started/install-linux.md 0",
                                                 f"{second.id} 0 nowhere.md 0"])
    dataset = load_dataset(SAMPLE, qrels_file=path)
    assert [q.id for q in dataset.queries] == [first.id, second.id]  # the questions the qrels judge, in file order
    assert dict(dataset.queries[0].qrels) == {"alerting/overview.md": 2.0, "getting-started/install-linux.md": 0.0}
    assert not dataset.queries[1].answerable  # judged, none relevant: unanswerable, graded not ranked
    assert dataset.name == "data+mine.qrels" and dataset.notes["qrels_file"] == str(path)
    assert dataset.queries[0].text == first.text
    in_place = load_query_set(SAMPLE / "kb", SAMPLE / "queries.jsonl", qrels_file=path)
    assert [dict(q.qrels) for q in in_place.queries] == [dict(q.qrels) for q in dataset.queries]


def test_trec_qrels_label_a_beir_folder_instead_of_its_split(tmp_path):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"D{i}", "title": f"page {i}", "text": f"text {i}"})
                                               + "\n" for i in range(3)), encoding="utf-8")
    (root / "queries.jsonl").write_text('{"_id": "1", "text": "first"}\n{"_id": "2", "text": "second"}\n',
                                        encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\tD0\t1\n", encoding="utf-8")
    path = _qrels_file(tmp_path / "other.qrels", ["2 0 D2 3", "3 0 D1 1"])
    dataset = load_dataset(root, qrels_file=path)
    assert [(q.id, dict(q.qrels)) for q in dataset.queries] == [("2", {"D2": 3.0})]
    assert dataset.notes["unlabelled_or_missing_queries"] == 1  # query 3 has no text


def test_the_qrels_flag_runs_and_imports_on_the_same_labels(sample_set, store, tmp_path, capsys):
    lines = [f"{q.id} 0 {d} 1" for q in sample_set.queries for d, g in q.qrels.items() if g > 0]
    path = _qrels_file(tmp_path / "same.qrels", lines)
    flags = ["--dataset", str(SAMPLE), "--qrels", str(path), "--traces", str(store.path), "--metrics", "ndcg@10"]
    assert cli.main(["run", *flags, "--no-progress", "--no-oracle", "--no-baseline", "--set", "svd_dims=8"]) == 0
    assert cli.main(["import-run", str(_bm25_run_file(sample_set, tmp_path / "b.run")), "--name", "bm25",
                     *flags]) == 0
    names = store.query("SELECT DISTINCT dataset FROM eval_run")["dataset"].tolist()
    assert names == ["data+same.qrels"]
    capsys.readouterr()
    bad = _qrels_file(tmp_path / "bad.qrels", ["1 0 D1 high"])
    assert cli.main(["run", "--dataset", str(SAMPLE), "--qrels", str(bad), "--traces", str(store.path)]) == 2
    assert "line 1: grade 'high'" in capsys.readouterr().err


def test_an_imported_run_takes_its_place_in_the_leaderboard_labelled_by_its_system(sample_set, store, tmp_path):
    from eval.leaderboard import leaderboard

    runs.run_evaluation(sample_set, LookupConfig(svd_dims=8), store=store, metrics=["ndcg@10"], oracle=False,
                        baseline=False, attribute=False)
    runs.run_evaluation(sample_set, LookupConfig(svd_dims=8, l0_filter=False), store=store, metrics=["ndcg@10"],
                        oracle=False, baseline=False, attribute=False, overrides={"l0_filter": False})
    imported = import_run(store, sample_set, _bm25_run_file(sample_set, tmp_path / "b.run"), name="bm25",
                          metrics=["ndcg@10"])
    board = leaderboard(store, sample_set.name)
    assert board.settings == ("l0_filter",)  # the lookup runs' difference; the imported run has no settings of ours
    row = board.rows.set_index("run_id").loc[imported.run_id]
    assert row["label"] == "system=bm25" and row["l0_filter"] is None
    assert row["ndcg@10"] == pytest.approx(imported.metrics["ndcg@10"])
