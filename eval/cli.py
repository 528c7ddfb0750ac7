"""Command line: `python -m eval run|sweep|compare|report|runs` — a thin layer over the eval library.

`run` and `sweep` take a labelled set as `--dataset DIR`, or as `--kb DIR --queries FILE` (a query
file run against a docs folder in place; `--kb DIR --known-item FIELD` works too); `--exclude
PREFIX,...` leaves path prefixes of the knowledge base out of the index with either.

`runs` lists every run with its status (complete, incomplete, running); `run --resume RUN_ID` finishes
an incomplete run and `runs --delete RUN_ID` removes one.

Bad input (unknown metric, setting, dataset, run id or format) prints one `error: ...` line on stderr
and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from retrieval import LookupConfig, TraceStore, TraceStoreError
from retrieval.config import parse_assignments
from retrieval.paths import default_traces

from .compare import compare_runs
from .datasets import Dataset, load_dataset, load_query_set
from .metrics import parse_metrics
from .reports import FORMATS, export, render
from .runs import DEFAULT_METRICS, RunResult, delete_run, list_runs, load_run, run_evaluation, run_sweep


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m eval", description=__doc__.splitlines()[0])
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
    report = commands.add_parser("report", help="export a run's report")
    report.add_argument("run")
    for sub in (compare, report):
        sub.add_argument("--format", default="markdown" if sub is report else None, help=", ".join(FORMATS))
        sub.add_argument("--output", default=None, help="file to write (default: stdout)")
    run.add_argument("--resume", default=None, metavar="RUN_ID",
                     help="finish an incomplete run (same dataset flags and --set values): recorded lookups "
                          "are reused, the missing ones are run")
    runs = commands.add_parser("runs", help="list stored runs, newest first, with their status "
                                            "(complete, incomplete, running)")
    runs.add_argument("--incomplete", action="store_true", help="list only runs that are not complete")
    runs.add_argument("--delete", default=None, metavar="RUN_ID",
                      help="delete a run: its eval rows and its recorded lookups")
    for sub in (run, sweep, compare, report, runs):
        sub.add_argument("--traces", default=None, help="DuckDB trace file (default: traces.duckdb)")
        sub.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _dataset_flags(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a LookupConfig setting, as in the lookup CLI (repeatable)")
    parser.add_argument("--metrics", default=",".join(DEFAULT_METRICS), help="comma-separated metric names")
    parser.add_argument("--sample", type=int, default=None, help="evaluate a fixed random sample of N queries")
    parser.add_argument("--no-baseline", action="store_true", help="skip the BM25 baseline")
    parser.add_argument("--no-oracle", action="store_true",
                        help="skip the oracle filter diagnostic (each query again with its true category)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        output = _dispatch(args)
    except (ValueError, TraceStoreError) as exc:  # DatasetError, UnknownRunError, KnowledgeBaseError are ValueErrors
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if isinstance(output, bytes):
        sys.stdout.buffer.write(output)
    elif output:
        print(output)
    return 0


def _dispatch(args: argparse.Namespace) -> str | bytes:
    store = TraceStore(args.traces or default_traces())
    if args.command == "run":
        return _run(args, store)
    if args.command == "sweep":
        return _sweep(args, store)
    if args.command == "compare":
        return _compare(args, store)
    if args.command == "report":
        run = load_run(store, args.run)
        return _emit(run, args.format, args.output, store)
    if args.delete:
        counts = delete_run(store, args.delete)
        return json.dumps(counts) if args.json else (
            f"deleted {counts['eval_run']} run, {counts['tool_invocation']} recorded lookup(s), "
            f"{counts['eval_query']} query row(s) and {counts['eval_query_metric']} metric row(s)")
    frame = list_runs(store, incomplete_only=args.incomplete)
    return frame.to_json(orient="records", date_format="iso") if args.json else frame.to_string(index=False)


def _run(args: argparse.Namespace, store: TraceStore) -> str:
    dataset, overrides, config, metrics = _inputs(args)
    top_k = config.top_k if "top_k" in overrides else None
    with _progress(args, f"{dataset.name}/{dataset.split}") as progress:
        result = run_evaluation(dataset, config, store=store, metrics=metrics, progress=progress, top_k=top_k,
                                overrides=overrides, baseline=not args.no_baseline, oracle=not args.no_oracle,
                                resume=args.resume)
    return json.dumps(result.to_dict(), indent=2, default=str) if args.json else _summary(result)


def _sweep(args: argparse.Namespace, store: TraceStore) -> str:
    dataset, overrides, config, metrics = _inputs(args)
    grid = {k: [v for v in values.split(",") if v.strip()] for k, values in parse_assignments(args.grid).items()}
    with _progress(args, f"sweep {dataset.name}") as progress:
        results = run_sweep(dataset, grid, store=store, base_config=LookupConfig(), base_overrides=overrides,
                            metrics=metrics, progress=progress, baseline=not args.no_baseline,
                            oracle=not args.no_oracle)
    if args.json:
        return json.dumps([r.to_dict() for r in results], indent=2, default=str)
    lines = [f"sweep {results[0].sweep_id}: {len(results)} runs on {dataset.name}/{dataset.split}"]
    lines.extend(f"{r.run_id}  {json.dumps(r.overrides)}  " + "  ".join(f"{k} {v:.4f}" for k, v in r.metrics.items())
                 + f"  [oracle: {_headroom_note(r)}]" for r in results)
    return "\n".join(lines)


def _compare(args: argparse.Namespace, store: TraceStore) -> str | bytes:
    metrics = [m.strip() for m in args.metrics.split(",")] if args.metrics else None
    comparison = compare_runs(store, args.run_a, args.run_b, metrics=metrics, permutations=args.permutations)
    if args.format:
        return _emit(comparison, args.format, args.output, store)
    if args.json:
        return json.dumps(comparison.to_dict(args.limit), indent=2, default=str)
    return render(comparison, "markdown")


def _emit(obj: Any, fmt: str, output: str | None, store: TraceStore) -> str | bytes:
    if output:
        return f"wrote {export(obj, fmt, output, store=store)}"
    return render(obj, fmt, store=store)


def _inputs(args: argparse.Namespace) -> tuple[Dataset, dict[str, str], LookupConfig, list[str]]:
    """The dataset, the `--set` overrides, the configuration and the metric names; all validated up front."""
    overrides = parse_assignments(args.settings)
    config = LookupConfig().with_overrides(overrides)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    parse_metrics(metrics)
    return _dataset(args).sample(args.sample), overrides, config, metrics


def _dataset(args: argparse.Namespace) -> Dataset:
    """`--dataset DIR`, or `--kb DIR` with `--queries FILE` (or `--known-item FIELD`); exactly one of the two."""
    if bool(args.dataset) == bool(args.kb):
        given = "both" if args.dataset else "neither"
        raise ValueError(f"give exactly one of --dataset DIR or --kb DIR (with --queries FILE); got {given}")
    if args.dataset:
        return load_dataset(args.dataset, split=args.split, known_item_field=args.known_item, kb_root=args.kb_root,
                            queries_file=args.queries, exclude_paths=args.exclude)
    if args.kb_root:
        raise ValueError("--kb-root only applies to --dataset; with --kb, pass the Markdown root itself as --kb")
    if args.known_item:
        return load_dataset(args.kb, split=args.split, known_item_field=args.known_item, exclude_paths=args.exclude)
    if getattr(args, "judgements", None):
        if args.queries:
            raise ValueError("give --queries FILE or --judgements TRACES_FILE, not both")
        from .judgements import load_judged_set
        return load_judged_set(args.kb, args.judgements, split=args.split, exclude_paths=args.exclude)
    if not args.queries:
        raise ValueError("--kb needs --queries FILE (a JSONL file of labelled queries), or --known-item FIELD")
    return load_query_set(args.kb, args.queries, split=args.split, exclude_paths=args.exclude)


class _progress:
    """A tqdm bar with ETA on stderr as a `progress(done, total)` callback (off with --no-progress)."""

    def __init__(self, args: argparse.Namespace, label: str) -> None:
        self.enabled, self.label, self.bar = not args.no_progress, label, None

    def __enter__(self) -> Callable[[int, int], None] | None:
        return self._update if self.enabled else None

    def _update(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = tqdm(total=total, desc=self.label, unit="q", file=sys.stderr, leave=False)
        self.bar.update(done - self.bar.n)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def _summary(result: RunResult) -> str:
    base, diag = result.baseline or {}, result.diagnostics
    oracle = (diag.get("oracle") or {}).get("metrics") or {}
    lines = [f"run {result.run_id}: {result.dataset['name']}/{result.dataset['split']}, "
             f"{result.dataset['queries']} queries, top_k {result.top_k}, {result.seconds:.1f} s"]
    for name, value in result.metrics.items():
        others = [f"bm25 {base[name]:.4f}"] if name in base else []
        others += [f"oracle filter {oracle[name]:.4f}"] if name in oracle else []
        lines.append(f"  {name:<12} {value:.4f}" + (f"   ({', '.join(others)})" if others else ""))
    lines.append(f"  filter applied {diag.get('filter_applied_rate')}, precision {diag.get('filter_precision')}, "
                 f"harm {diag.get('filter_harm', {}).get('count')} (effective "
                 f"{diag.get('filter_harm_effective', {}).get('count')}, widened {diag.get('filter_widened_rate')}), "
                 f"changed the top {diag.get('filter_changed_within')} of {diag.get('filter_changed')}; "
                 f"L0-only {diag.get('l0_only_fallback_rate')}; latency p50 {diag.get('latency_ms', {}).get('p50')} ms "
                 f"p95 {diag.get('latency_ms', {}).get('p95')} ms")
    lines.append(f"  oracle filter: {_headroom_note(result)}")
    missing = result.dataset.get("relevant_not_in_kb")
    if missing:
        lines.append(f"  {missing} relevant path(s) not in the knowledge base, e.g. "
                     f"{', '.join(result.dataset.get('relevant_not_in_kb_examples', []))}")
    return "\n".join(lines)


def _headroom_note(result: RunResult) -> str:
    oracle = result.diagnostics.get("oracle") or {}
    if "skipped" in oracle or not oracle:
        return f"skipped, {oracle.get('skipped', 'not measured')}"
    first = next(iter(oracle.get("headroom", {})), None)
    headroom = f"headroom {first} {oracle['headroom'][first]:+.4f}; " if first else ""
    return (f"{headroom}{oracle.get('queries_with_category')} queries filtered by the "
            f"{oracle.get('category_rule')}, {oracle.get('queries_unfiltered')} unfiltered")
