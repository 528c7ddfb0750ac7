"""Issue 7, the evaluation that shows the headroom: --kb/--queries/--exclude, the oracle filter, per-domain
filter precision and harm, the confusion table, and the eval_query migration. Everything under tmp_path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from eval import cli, runs
from eval.datasets import DatasetError, load_dataset, load_query_set
from eval.diagnostics import summarize
from eval.reports import render
from retrieval import LookupConfig, TraceStore
from tests.headroom_helpers import PAGES, ROWS, write_kb, write_queries

ROOT = Path(__file__).resolve().parents[1]

CONFIG = LookupConfig(svd_dims=8, l1_static_weight=0.0)  # the constructed ranking is lexical
METRICS = ("mrr@10", "hit@1")


def _cli(args, capsys):
    code = cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# query sets over a docs folder ------------------------------------------------------------------------

def test_query_file_categories_become_query_categories_normalised(paths):
    queries = {q.id: q for q in load_query_set(paths["kb"], paths["queries"]).queries}
    assert (queries["q1"].categories, queries["q1"].categories_labelled) == (("alerting",), True)
    assert (queries["q2"].categories, queries["q2"].categories_labelled) == ((), True)  # stated: none
    assert queries["q3"].categories == ("news", "billing")
    assert (queries["q4"].categories, queries["q4"].categories_labelled) == ((), False)


def test_comma_separated_category_string_lists_several(paths, tmp_path):
    file = write_queries(tmp_path / "q.jsonl", [{"_id": "a", "text": "t", "relevant": ["api/tokens.md"],
                                                 "category_of_first": "Templates, Fundamentals"}])
    assert load_query_set(paths["kb"], file).queries[0].categories == ("templates", "fundamentals")


def test_relevant_paths_under_an_excluded_prefix_are_counted_not_dropped(paths):
    dataset = load_query_set(paths["kb"], paths["queries"], exclude_paths="news/")
    info = dataset.describe()
    assert info["kb_path"] == str(paths["kb"]) and info["exclude_paths"] == ["news"]
    assert info["relevant_not_in_kb"] == 1 and info["relevant_not_in_kb_examples"] == ["news/release.md"]
    assert info["queries_without_relevant_in_kb"] == 0  # q3 still has billing/widget.md
    q3 = next(q for q in dataset.queries if q.id == "q3")
    assert "news/release.md" in q3.qrels  # still a label: a miss the metrics count


def test_bad_exclude_prefix_is_a_dataset_error(paths):
    with pytest.raises(DatasetError, match="contains '..'"):
        load_query_set(paths["kb"], paths["queries"], exclude_paths=["../secrets"])


def test_dataset_exclude_paths_reach_the_index(paths, tmp_path):
    root = tmp_path / "set"
    write_kb(root / "kb")
    write_queries(root / "queries.jsonl")
    dataset = load_dataset(root, exclude_paths=["news"])
    index = runs.open_dataset_index(dataset, 8)
    assert index.kb.entry("news/release.md") is None and index.kb.entry("billing/widget.md") is not None


# the oracle filter ----------------------------------------------------------------------------------

def test_oracle_filter_recovers_the_answer_an_unfiltered_lookup_ranks_second(paths):
    store = TraceStore(paths["traces"])
    rows = [ROWS[0]]
    dataset = load_query_set(paths["kb"], write_queries(paths["queries"], rows))
    result = runs.run_evaluation(dataset, CONFIG, store=store, metrics=METRICS, baseline=False)
    oracle = result.diagnostics["oracle"]
    assert result.per_query["filter_decision"].tolist()[0] in ("skipped_no_domain", "skipped_ambiguous")
    assert result.metrics["hit@1"] == 0.0 and oracle["metrics"]["hit@1"] == 1.0
    assert result.metrics["mrr@10"] < 1.0  # the billing page outranks the answer without the filter
    assert oracle["headroom"] == {"mrr@10": round(1.0 - result.metrics["mrr@10"], 4), "hit@1": 1.0}
    assert (oracle["queries_with_category"], oracle["queries_unfiltered"]) == (1, 0)
    assert oracle["category_rule"] == "first relevant page's category"
    stored = store.query("SELECT metric, value FROM eval_query_metric WHERE run_id = ? AND system = 'oracle' "
                         "ORDER BY metric", [result.run_id])
    assert stored.to_dict(orient="records") == [{"metric": "hit@1", "value": 1.0}, {"metric": "mrr@10", "value": 1.0}]
    assert result.per_query["oracle:hit@1"].tolist() == [1.0]


def test_oracle_lookups_are_not_recorded_as_the_runs_lookups(paths):
    store = TraceStore(paths["traces"])
    dataset = load_query_set(paths["kb"], paths["queries"])
    result = runs.run_evaluation(dataset, CONFIG, store=store, metrics=METRICS)
    assert store.count() == len(dataset.queries)
    recorded = store.query("SELECT DISTINCT run_id FROM tool_invocation")["run_id"].tolist()
    assert recorded == [result.run_id]


def test_queries_without_a_category_run_unfiltered_and_are_counted(paths):
    dataset = load_query_set(paths["kb"], paths["queries"])
    result = runs.run_evaluation(dataset, CONFIG, store=TraceStore(paths["traces"]), metrics=METRICS)
    categories = dict(zip(result.per_query["query_id"], result.per_query["categories"], strict=True))
    assert categories["q2"] == [] and categories["q4"] == ["security"]  # stated none / derived from the page
    oracle = result.diagnostics["oracle"]
    assert (oracle["queries_with_category"], oracle["queries_unfiltered"]) == (3, 1)


def test_oracle_is_skipped_with_a_note_when_no_query_has_a_category(paths, tmp_path):
    pages = {s: (t, "", b) for s, (t, _, b) in PAGES.items()}
    kb = write_kb(tmp_path / "flat", pages)
    file = write_queries(tmp_path / "flat.jsonl", [{"_id": "q1", "text": "reset the widget",
                                                    "relevant": ["alerting/widget.md"]}])
    store = TraceStore(paths["traces"])
    result = runs.run_evaluation(load_query_set(kb, file), CONFIG, store=store, metrics=METRICS)
    assert "no query has a category" in result.diagnostics["oracle"]["skipped"]
    assert store.query("SELECT count(*) AS n FROM eval_query_metric WHERE system = 'oracle'")["n"][0] == 0


def test_no_oracle_skips_the_oracle_lookups(paths, capsys):
    code, out, _ = _cli(["run", "--kb", paths["kb"], "--queries", paths["queries"], "--traces", paths["traces"],
                         "--json", "--no-progress", "--no-oracle", "--set", "svd_dims=8"], capsys)
    assert code == 0 and json.loads(out)["diagnostics"]["oracle"] == {"skipped": "switched off (--no-oracle)"}


def test_run_report_shows_oracle_filter_and_headroom_beside_bm25(paths):
    result = runs.run_evaluation(load_query_set(paths["kb"], paths["queries"]), CONFIG,
                                 store=TraceStore(paths["traces"]), metrics=METRICS)
    markdown = render(result, "markdown")
    assert "| metric | lookup | bm25 baseline | delta | oracle filter | headroom |" in markdown
    assert "oracle filter: each query again with its true category" in markdown
    assert "oracle filter" in render(result, "html")


# CLI ------------------------------------------------------------------------------------------------

def test_cli_runs_a_query_file_against_a_docs_folder_with_excluded_prefixes(paths, capsys):
    code, out, _ = _cli(["run", "--kb", paths["kb"], "--queries", paths["queries"], "--exclude", "news,showcase",
                         "--traces", paths["traces"], "--json", "--no-progress", "--set", "svd_dims=8"], capsys)
    result = json.loads(out)
    assert code == 0 and result["dataset"]["exclude_paths"] == ["news", "showcase"]
    assert result["dataset"]["kb_path"] == str(paths["kb"]) and result["dataset"]["relevant_not_in_kb"] == 1
    assert {"metrics", "headroom", "queries_with_category"} <= set(result["diagnostics"]["oracle"])
    assert {"filter_by_domain", "filter_confusion", "filter_widened_rate", "filter_harm_effective"} <= set(
        result["diagnostics"])


def test_cli_summary_prints_oracle_filter_next_to_bm25(paths, capsys):
    code, out, _ = _cli(["run", "--kb", paths["kb"], "--queries", paths["queries"], "--traces", paths["traces"],
                         "--no-progress", "--metrics", "mrr@10", "--set", "svd_dims=8"], capsys)
    assert code == 0
    line = next(t for t in out.splitlines() if t.strip().startswith("mrr@10"))
    assert "(bm25 " in line and ", oracle filter " in line
    assert "oracle filter: headroom mrr@10" in out


def test_cli_exclude_works_with_dataset_too(paths, tmp_path, capsys):
    root = tmp_path / "set"
    write_kb(root / "kb")
    write_queries(root / "queries.jsonl")
    code, out, _ = _cli(["run", "--dataset", root, "--exclude", "news", "--traces", paths["traces"], "--json",
                         "--no-progress", "--no-baseline", "--set", "svd_dims=8"], capsys)
    assert code == 0 and json.loads(out)["dataset"]["exclude_paths"] == ["news"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--dataset", "{kb}", "--kb", "{kb}"],
     "give exactly one of --dataset DIR or --kb DIR (with --queries FILE); got both"),
    ([], "give exactly one of --dataset DIR or --kb DIR (with --queries FILE); got neither"),
    (["--kb", "{kb}"], "--kb needs --queries FILE"),
    (["--kb", "{kb}", "--queries", "{queries}", "--exclude", "/abs"], "is absolute"),
    (["--kb", "{kb}", "--queries", "{queries}", "--exclude", "news/*"], "is a glob pattern"),
])
@pytest.mark.parametrize("command", ["run", "sweep"])
def test_cli_needs_exactly_one_of_dataset_and_kb(paths, capsys, command, extra, message):
    args = [a.replace("{kb}", str(paths["kb"])).replace("{queries}", str(paths["queries"])) for a in extra]
    grid = ["--grid", "l0_filter=true,false"] if command == "sweep" else []
    code, _, err = _cli([command, *args, *grid, "--traces", paths["traces"], "--no-progress"], capsys)
    assert code == 2 and err.startswith("error: ") and message in err and err.count("\n") == 1


# per-domain filter precision, harm and confusion ----------------------------------------------------

def test_widened_flag_is_read_from_the_filter_details_and_defaults_to_false(frame):
    assert frame["filter_widened"].tolist() == [False, True, False, False, False]


def test_filter_precision_and_harm_per_applied_domain(frame):
    assert summarize(frame)["filter_by_domain"] == {
        "alerting": {"applied": 1, "correct": 1, "precision": 1.0, "harm": 0},
        "billing": {"applied": 3, "correct": 1, "precision": 0.3333, "harm": 2},
    }


def test_confusion_pairs_the_chosen_category_with_the_queries_first_category(frame):
    assert summarize(frame)["filter_confusion"] == [
        {"chosen": "alerting", "true": "alerting", "count": 1},
        {"chosen": "billing", "true": "(none)", "count": 1},
        {"chosen": "billing", "true": "alerting", "count": 1},
        {"chosen": "billing", "true": "billing", "count": 1},
    ]


def test_effective_harm_leaves_out_widened_queries(frame):
    summary = summarize(frame)
    assert summary["filter_harm"] == {"count": 2, "rate": 0.4, "missed": 2, "query_ids": ["q2", "q3"]}
    assert summary["filter_harm_effective"] == {"count": 1, "rate": 0.2, "missed": 1, "query_ids": ["q3"]}
    assert summary["filter_widened_rate"] == 0.2


def test_frame_without_the_widened_column_counts_nothing_as_widened(frame):
    summary = summarize(frame.drop(columns=["filter_widened"]))
    assert summary["filter_widened_rate"] == 0.0 and summary["filter_harm_effective"]["count"] == 2


# storage migration ----------------------------------------------------------------------------------

def test_old_trace_file_gains_the_new_eval_query_column_and_keeps_its_runs(paths):
    """A v2 file whose evaluation tables were made before `filter_widened` (and the run status columns)
    existed: opening it applies the file's migrations, which add them and keep the old rows."""
    import duckdb

    from retrieval.traces.schema import MIGRATIONS

    first_eval_schema = [
        """CREATE TABLE eval_run (run_id VARCHAR PRIMARY KEY, created_at TIMESTAMP NOT NULL, sweep_id VARCHAR,
            dataset VARCHAR NOT NULL, dataset_kind VARCHAR, dataset_path VARCHAR, split VARCHAR, n_queries INTEGER,
            top_k INTEGER, seconds DOUBLE, config JSON, overrides JSON, metrics JSON, baseline JSON,
            diagnostics JSON, dataset_info JSON, metric_names JSON)""",
        """CREATE TABLE eval_query (run_id VARCHAR NOT NULL, query_id VARCHAR NOT NULL, position INTEGER,
            query VARCHAR, n_relevant INTEGER, relevant JSON, categories JSON, invocation_id VARCHAR,
            first_relevant_rank INTEGER, top_sources JSON, filter_decision VARCHAR, filter_category VARCHAR,
            filter_correct BOOLEAN, filter_harm BOOLEAN, filter_harm_missed BOOLEAN, retrieval_layer VARCHAR,
            l1_status VARCHAR, candidate_count INTEGER, duplicates_merged INTEGER, evidence_count INTEGER,
            latency_ms DOUBLE, PRIMARY KEY (run_id, query_id))""",
        """CREATE TABLE eval_query_metric (run_id VARCHAR NOT NULL, query_id VARCHAR NOT NULL,
            system VARCHAR NOT NULL, metric VARCHAR NOT NULL, value DOUBLE,
            PRIMARY KEY (run_id, query_id, system, metric))""",
    ]
    with duckdb.connect(str(paths["traces"])) as con:
        con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TIMESTAMP)")
        for version, statements in MIGRATIONS[:2]:
            for statement in statements:
                con.execute(statement)
            con.execute(f"INSERT INTO schema_version VALUES ({version}, now()::TIMESTAMP)")
        for statement in first_eval_schema:
            con.execute(statement)
        con.execute("INSERT INTO eval_run (run_id, created_at, dataset, metrics, diagnostics, dataset_info, "
                    "metric_names, top_k, seconds) VALUES ('run-old', now(), 'old', '{}', '{}', '{}', '[]', 10, 1)")
        con.execute("INSERT INTO eval_query (run_id, query_id, position, query, relevant, categories, top_sources) "
                    "VALUES ('run-old', 'q1', 0, 'old query', '[]', '[]', '[]')")
    store = TraceStore(paths["traces"])
    dataset = load_query_set(paths["kb"], paths["queries"])
    new = runs.run_evaluation(dataset, CONFIG, store=store, metrics=METRICS, baseline=False)
    columns = store.query("DESCRIBE eval_query")["column_name"].tolist()
    assert columns.count("filter_widened") == 1
    old = runs.load_run(store, "run-old").per_query
    assert old["query"].tolist() == ["old query"] and pd.isna(old["filter_widened"][0])
    assert new.per_query["filter_widened"].tolist() == [False] * len(dataset.queries)
    assert TraceStore(paths["traces"]).query("DESCRIBE eval_query")["column_name"].tolist() == columns  # once


def test_negative_headroom_is_explained_with_the_metrics_where_the_oracle_is_below():
    from eval.oracle import negative_headroom_note

    note = negative_headroom_note({"ndcg@10": 0.02, "recall@100": -0.05})
    assert note is not None and "recall@100 -0.050" in note and "ndcg@10" not in note
    assert "relevant pages in other categories" in note
    assert negative_headroom_note({"ndcg@10": 0.02, "mrr@10": 0.0}) is None


def test_unanswerable_questions_are_graded_not_dropped(tmp_path):
    """data/queries.jsonl has 84 questions; 4 name no relevant page: the run scores 80 by rank and grades the 4."""
    traces = tmp_path / "t.duckdb"
    out = subprocess.run([sys.executable, "-m", "eval", "run", "--dataset", str(ROOT / "data"), "--traces",
                          str(traces), "--no-oracle", "--no-baseline", "--no-progress"], capture_output=True,
                         text=True, cwd=ROOT, check=True).stdout
    assert "84 queries (80 scored by rank, 4 unanswerable graded)" in out
    assert "answerability: 4 unanswerable question(s); graded high" in out and "not scored" not in out
