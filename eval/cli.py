"""Command line: `python -m eval run|sweep|compare|report|runs|collect|import-run|judgements|agreement|assign|…`
— a thin layer over the eval library.

`run` and `sweep` take a labelled set as `--dataset DIR`, or as `--kb DIR --queries FILE` (a query
file run against a docs folder in place; `--kb DIR --known-item FIELD` works too); `--exclude
PREFIX,...` leaves path prefixes of the knowledge base out of the index with either.

`import-run FILE --name NAME` (with the dataset flags) stores an external system's TREC run as a run of ours;
`report RUN --format trec` writes a run as a TREC run file and `judgements --format trec` the analysts' marks as
TREC qrels; `--qrels FILE` gives a dataset TREC qrels as its labels.

`runs` lists every run with its status (complete, incomplete, running); `run --resume RUN_ID` finishes
an incomplete run and `runs --delete RUN_ID` removes one. `runs --dataset NAME --leaderboard` puts every
complete run of a dataset side by side: the settings that differ, every metric, sortable (`--sort`).

`run` and `sweep` take `--workers N|auto` (local worker processes) or `--dask ADDRESS` (an existing Dask
cluster); `collect RUN_ID` loads a Dask run's Parquet trace parts into the trace file.

`agreement` measures how far named annotators agree on their marks (Cohen's κ per pair, Krippendorff's α,
per queue), `adjudicate` settles a disputed page, `assign` gives annotators a queue of pages (`--holes RUN_A
RUN_B`: the hole loop's), and `judgements --rule` / `run --judgement-rule` choose how several annotators' marks
make one grade.

Bad input (unknown metric, setting, dataset, run id or format) prints one `error: ...` line on stderr
and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .defaults import DEFAULT_METRICS, FORMATS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m eval", description=" ".join(__doc__.split("\n\n")[0].split()))
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="evaluate one configuration on a dataset split")
    _dataset_flags(run)
    sweep = commands.add_parser("sweep", help="evaluate every combination of a grid of settings")
    _dataset_flags(sweep)
    sweep.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                       help="a setting and its values, e.g. --grid l0_filter=true,false (repeatable)")
    compare = commands.add_parser("compare", help="paired comparison of two runs (B against A)")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--metrics", default=None, help="comma-separated metric names (default: shared ones)")
    compare.add_argument("--permutations", type=int, default=10_000, help="randomisation-test resamples")
    compare.add_argument("--limit", type=int, default=10, help="per-query losses in --json output")
    compare.add_argument("--facets", default=None, metavar="FIELD,...",
                         help="break every metric down by these (category, or fields of the questions such as "
                              "style); default: category and every field with 2 to 30 values")
    compare.add_argument("--no-facets", action="store_true", help="no breakdown by category or field")
    compare.add_argument("--fail-on-regression", action="append", default=[], metavar="METRIC:TOLERANCE",
                         help="exit 1 when B is below A on METRIC by more than TOLERANCE and significantly "
                              "(p < 0.05), e.g. ndcg@10:0.01 (repeatable): a CI step")
    report = commands.add_parser("report", help="export a run's report")
    report.add_argument("run")
    for sub in (compare, report):
        sub.add_argument("--format", default="markdown" if sub is report else None, help=", ".join(FORMATS))
        sub.add_argument("--output", default=None, help="file to write (default: stdout)")
    run.add_argument("--resume", default=None, metavar="RUN_ID",
                     help="finish an incomplete run (same dataset flags and --set values): recorded lookups "
                          "are reused, the missing ones are run")
    collect = commands.add_parser("collect", help="load a Dask run's Parquet trace parts into the trace file")
    collect.add_argument("run")
    collect.add_argument("--parts", default=None, metavar="DIR",
                         help="the folder the Dask workers wrote parts to (default: <trace file>.parts)")
    runs = commands.add_parser("runs", help="list stored runs, newest first, with their status "
                                            "(complete, incomplete, running)")
    runs.add_argument("--incomplete", action="store_true", help="list only runs that are not complete")
    runs.add_argument("--delete", default=None, metavar="RUN_ID",
                      help="delete a run: its eval rows and its recorded lookups")
    runs.add_argument("--dataset", default=None, metavar="NAME",
                      help="only the runs of this dataset (its name, as the list shows it)")
    runs.add_argument("--split", default=None, help="with --dataset: only the runs of this split")
    runs.add_argument("--leaderboard", action="store_true",
                      help="with --dataset: every complete run side by side, the settings that differ, every "
                           "metric, and the sorted metric's trend over time")
    runs.add_argument("--sort", default=None, metavar="METRIC",
                      help="with --leaderboard: sort by this metric, best first (default: the runs' first "
                           "metric), or by `created`, newest first")
    imported = commands.add_parser("import-run", help="store an external system's TREC run file as a run of the "
                                                      "dataset (compare it like any other run)")
    imported.add_argument("file", help="a TREC run file: qid Q0 docid rank score tag")
    imported.add_argument("--name", required=True, help="the system's name, shown as the run's label")
    _dataset_source_flags(imported)
    imported.add_argument("--metrics", default=",".join(DEFAULT_METRICS), help="comma-separated metric names")
    marks = commands.add_parser("judgements", help="export the analysts' relevance marks (the latest per query and "
                                                   "page)")
    marks.add_argument("--format", default="trec", choices=("trec", "beir", "jsonl"),
                       help="trec: TREC qrels (qid 0 docid grade); beir: qrels TSV with a header; jsonl: "
                            "queries.jsonl rows with relevant pages")
    marks.add_argument("--output", default=None, help="file to write (default: stdout)")
    marks.add_argument("--rule", default="latest", metavar="RULE",
                       help="how several annotators' marks of a page make one grade: latest (the latest mark, "
                            "whoever made it; the default), adjudicated (the adjudicated grade, else the grade all "
                            "annotators agree on; disputed pages left out), majority (ties: the lower grade) or "
                            "mean (rounded half up)")
    agree = commands.add_parser("agreement", help="how far the annotators agree: Cohen's kappa per pair, "
                                                  "Krippendorff's alpha, per question set, and the disputed pages")
    agree.add_argument("--queue", default=None, metavar="Q", help="only the pages of this queue")
    agree.add_argument("--level", default="0.95", metavar="L", help="confidence level of the intervals, in (0, 1)")
    agree.add_argument("--resamples", default="1000", metavar="N", help="bootstrap resamples over pages")
    agree.add_argument("--seed", default="0", metavar="N", help="the bootstrap's seed (same seed, same intervals)")
    settle = commands.add_parser("adjudicate", help="settle a disputed page: the adjudicator's final grade")
    settle.add_argument("--query", required=True, help="the question's text, as marked")
    settle.add_argument("--source", required=True, help="the page, as marked")
    settle.add_argument("--grade", required=True, metavar="G", help="0 not relevant, 1 relevant, 2 highly relevant")
    settle.add_argument("--who", required=True, metavar="NAME", help="the adjudicator (a name or an email)")
    settle.add_argument("--note", default="", help="why (kept with the grade)")
    queue = commands.add_parser("assign", help="assign pages to annotators in a named queue (re-assigning adds "
                                               "nothing)")
    queue.add_argument("--queue", required=True, metavar="Q", help="the queue's name")
    queue.add_argument("--annotators", required=True, metavar="A,B,...", help="comma-separated annotators")
    pages = queue.add_mutually_exclusive_group(required=True)
    pages.add_argument("--holes", nargs=2, metavar=("RUN_A", "RUN_B"),
                       help="the hole loop's pages: the unjudged pages of the top 10s that changed from A to B")
    pages.add_argument("--pages", metavar="FILE.tsv", help="a TSV file of pages, one `query<TAB>source` a line")
    queue.add_argument("--by", default=None, metavar="NAME", help="who assigns (default: the system user)")
    for sub in (run, sweep, compare, report, collect, runs, imported, marks, agree, settle, queue):
        sub.add_argument("--traces", default=None, help="DuckDB trace file (default: traces.duckdb)")
        sub.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _dataset_flags(parser: argparse.ArgumentParser) -> None:
    _dataset_source_flags(parser)
    parser.add_argument("--unanswerable", default=None, metavar="FILE",
                        help='a JSONL file of questions the knowledge base should not answer ({"_id", "text"} '
                             "rows): looked up and their relevance grades scored beside the dataset's")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a LookupConfig setting, as in the lookup CLI (repeatable)")
    parser.add_argument("--metrics", default=",".join(DEFAULT_METRICS), help="comma-separated metric names")
    parser.add_argument("--sample", type=int, default=None, help="evaluate a fixed random sample of N queries")
    _run_flags(parser)


def _dataset_source_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that name a dataset: its questions, labels and knowledge base."""
    parser.add_argument("--dataset", default=None, help="BEIR folder, or folder with kb/ and queries.jsonl")
    parser.add_argument("--kb", default=None, metavar="DIR",
                        help="a Markdown docs folder to run --queries against in place (instead of --dataset)")
    parser.add_argument("--exclude", default="", metavar="PREFIX,...",
                        help="path prefixes relative to the knowledge-base root left out of the index, "
                             "e.g. news,showcase")
    parser.add_argument("--split", default=None, help="qrels split (BEIR); default: test or the only one")
    parser.add_argument("--known-item", default=None, metavar="FIELD",
                        help="known-item set: each page's front-matter FIELD is its query (FIELD not indexed)")
    parser.add_argument("--kb-root", default=None, help="Markdown root inside the dataset (default: kb/, content/en)")
    parser.add_argument("--queries", default=None,
                        help="JSONL query file (with --dataset: default queries.jsonl; with --kb: required, "
                             "relevant paths relative to --kb)")
    parser.add_argument("--judgements", default=None, metavar="TRACES_FILE",
                        help="with --kb: the relevance judgements made in the app, read from this trace file, "
                             "as the labelled set (instead of --queries)")
    parser.add_argument("--judgement-rule", default="latest", metavar="RULE",
                        help="with --judgements: how several annotators' marks of a page make its label: latest "
                             "(default), adjudicated, majority or mean (`python -m eval judgements --help`)")
    parser.add_argument("--qrels", default=None, metavar="FILE",
                        help="TREC qrels (qid 0 docid grade) as the questions' labels, instead of the labels in "
                             "--queries or the BEIR split's qrels")


def _run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of a run that looks its questions up."""
    parser.add_argument("--no-baseline", action="store_true", help="skip the BM25 baseline")
    parser.add_argument("--no-oracle", action="store_true",
                        help="skip the oracle filter diagnostic (each query again with its true category)")
    parser.add_argument("--no-attribution", action="store_true",
                        help="skip saying which stage of the lookup lost each missed relevant page")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--workers", default="1", metavar="N|auto",
                        help="look up in N local worker processes (auto: one per core); results equal --workers 1")
    parser.add_argument("--dask", default=None, metavar="ADDRESS",
                        help="look up on the workers of an existing Dask cluster, e.g. tcp://10.0.0.5:8786")
    parser.add_argument("--parts", default=None, metavar="DIR",
                        help="with --dask: a folder every worker and this host can write and read, for the "
                             "workers' Parquet trace parts (default: <trace file>.parts)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line; its exit status (2 for bad input, 1 for a regression or a failed worker, 141 when
    the reader of stdout left early)."""
    from retrieval.console import quiet_when_reader_leaves

    return quiet_when_reader_leaves(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    from retrieval import TraceStoreError

    from .commands import dispatch
    from .failures import ShardsFailed
    from .gate import RegressionFound

    try:
        output = dispatch(args)
    except (ValueError, TraceStoreError) as exc:  # DatasetError, UnknownRunError, KnowledgeBaseError are ValueErrors
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ShardsFailed as exc:  # a worker died: the run is stored as incomplete and can be resumed
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except RegressionFound as exc:  # the comparison is printed; why it fails goes to stderr
        _print(exc.output)
        print(str(exc), file=sys.stderr)
        return 1
    _print(output)
    return 0


def _print(output: str | bytes) -> None:
    if isinstance(output, bytes):
        sys.stdout.buffer.write(output)
    elif output:
        print(output)
