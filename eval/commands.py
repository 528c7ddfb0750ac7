"""The eval CLI's commands: what `python -m eval` runs once its arguments are parsed (eval.cli parses them
without importing any of this, so `--help` stays fast)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

from retrieval import LookupConfig, TraceStore
from retrieval.config import parse_assignments
from retrieval.paths import default_traces, trace_sources

from .abstention import summary_line
from .compare import Comparison, compare_runs
from .datasets import Dataset, load_dataset, load_query_set, skipped_note
from .depth import judged_line
from .gate import RegressionFound, parse_tolerances, regressions
from .leaderboard import leaderboard, of_dataset
from .metrics import parse_metrics
from .parallel.pool import pool_of
from .reports import export, render
from .runs import RunResult, delete_run, list_runs, load_run, run_evaluation, run_sweep
from .ties import ties_sentence
from .unanswerable import with_unanswerable


def dispatch(args: argparse.Namespace) -> str | bytes:
    if args.command in ("agreement", "adjudicate", "assign"):
        from .annotation_commands import annotation_command

        return annotation_command(args)
    # it writes one file; its reads (runs, reports, comparisons) take every file $LOOKUP_KNOWLEDGE_TRACES names
    store = TraceStore(args.traces or default_traces(), sources=None if args.traces else trace_sources())
    if args.command == "run":
        return _run(args, store)
    if args.command == "sweep":
        return _sweep(args, store)
    if args.command == "compare":
        return _compare(args, store)
    if args.command == "collect":
        from .parallel.collect import collect_run

        loaded = collect_run(store, args.run, args.parts)
        return json.dumps(loaded.__dict__) if args.json else (
            f"run {loaded.run_id}: {loaded.parts} part(s), {loaded.rows} row(s), {loaded.inserted} new in {store.path}")
    if args.command == "report":
        run = load_run(store, args.run)
        return _emit(run, args.format, args.output, store)
    if args.command == "import-run":
        return _import(args, store)
    if args.command == "judgements":
        from .trec_export import judgements_file

        text = judgements_file(store, args.format, rule=args.rule)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
            return f"wrote {args.output}"
        return text.rstrip("\n")
    if args.delete:
        counts = delete_run(store, args.delete)
        return json.dumps(counts) if args.json else (
            f"deleted {counts['eval_run']} run, {counts['tool_invocation']} recorded lookup(s), "
            f"{counts['eval_query']} query row(s) and {counts['eval_query_metric']} metric row(s)")
    return _runs(args, store)


def _runs(args: argparse.Namespace, store: TraceStore) -> str:
    """`runs`: every run, or (`--dataset`) one dataset's, or (`--leaderboard`) its complete runs side by side."""
    if args.leaderboard or args.sort:
        if not args.dataset:
            raise ValueError("--leaderboard needs --dataset NAME: the dataset whose runs to rank "
                             "(`python -m eval runs` lists the runs with their dataset)")
        if not args.leaderboard:
            raise ValueError("--sort only applies with --leaderboard")
        board = leaderboard(store, args.dataset, split=args.split, sort=args.sort)
        for note in board.notes:  # on stderr whatever the format, as `compare` does
            print(note, file=sys.stderr)
        return json.dumps(board.to_records(), indent=2) if args.json else board.text()
    if args.split and not args.dataset:
        raise ValueError("--split needs --dataset NAME")
    frame = list_runs(store, incomplete_only=args.incomplete)
    if args.dataset:  # checked against every run, so an unknown name lists the file's datasets
        every = list_runs(store) if args.incomplete else frame
        frame = frame[frame["run_id"].isin(of_dataset(every, args.dataset, args.split, str(store.path))["run_id"])]
    return frame.to_json(orient="records", date_format="iso") if args.json else frame.to_string(index=False)


def _run(args: argparse.Namespace, store: TraceStore) -> str:
    pool = pool_of(args.workers, args.dask)
    dataset, overrides, config, metrics = _inputs(args)
    top_k = config.top_k if "top_k" in overrides else None
    with _progress(args, f"{dataset.name}/{dataset.split}") as progress:
        if pool.serial:
            result = run_evaluation(dataset, config, store=store, metrics=metrics, progress=progress, top_k=top_k,
                                    overrides=overrides, baseline=not args.no_baseline, oracle=not args.no_oracle,
                                    resume=args.resume, attribute=not args.no_attribution)
        else:
            from .parallel.fanout import run_parallel

            result = run_parallel(dataset, config, store=store, pool=pool, metrics=metrics, progress=progress,
                                  top_k=top_k, overrides=overrides, baseline=not args.no_baseline,
                                  oracle=not args.no_oracle, resume=args.resume, parts_dir=args.parts,
                                  attribute=not args.no_attribution)
    return json.dumps(result.to_dict(), indent=2, default=str) if args.json else _summary(result)


def _sweep(args: argparse.Namespace, store: TraceStore) -> str:
    pool = pool_of(args.workers, args.dask)
    dataset, overrides, config, metrics = _inputs(args)
    # each value stripped, as `--set`'s is: a model spec after ", " must not start with a space
    grid = {k: [v.strip() for v in values.split(",") if v.strip()]
            for k, values in parse_assignments(args.grid).items()}
    shared = {"store": store, "base_config": LookupConfig(), "base_overrides": overrides, "metrics": metrics,
              "baseline": not args.no_baseline, "oracle": not args.no_oracle, "attribute": not args.no_attribution}
    with _progress(args, f"sweep {dataset.name}") as progress:
        if pool.serial:
            results = run_sweep(dataset, grid, progress=progress, **shared)
        else:
            from .parallel.fanout import sweep_parallel

            results = sweep_parallel(dataset, grid, pool=pool, progress=progress, parts_dir=args.parts, **shared)
    if args.json:
        return json.dumps([r.to_dict() for r in results], indent=2, default=str)
    lines = [f"sweep {results[0].sweep_id}: {len(results)} runs on {dataset.name}/{dataset.split}"]
    lines.extend(f"{r.run_id}  {json.dumps(r.overrides, ensure_ascii=False)}  "
                 + "  ".join(f"{k} {v:.4f}" for k, v in r.metrics.items())
                 + f"  [oracle: {_headroom_note(r)}]" for r in results)
    return "\n".join(lines)


def _import(args: argparse.Namespace, store: TraceStore) -> str:
    from .imported import import_run, import_sentence

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    result = import_run(store, _dataset(args), args.file, name=args.name, metrics=metrics)
    if args.json:
        return json.dumps(result.to_dict(), indent=2, default=str)
    lines = [f"imported run {result.run_id} ({args.name}): {result.dataset['name']}/{result.dataset['split']}, "
             f"{result.dataset['queries']} queries",
             *(f"  {name:<12} {value:.4f}" for name, value in result.metrics.items()),
             f"  {import_sentence(result.diagnostics.get('imported'))}",
             f"  {ties_sentence(result.diagnostics.get('ties'))}",
             f"compare it: python -m eval compare RUN {result.run_id}"]
    return "\n".join(lines)


def _compare(args: argparse.Namespace, store: TraceStore) -> str | bytes:
    metrics = [m.strip() for m in args.metrics.split(",")] if args.metrics else None
    tolerances = parse_tolerances(args.fail_on_regression)
    comparison = compare_runs(store, args.run_a, args.run_b, metrics=metrics, permutations=args.permutations,
                              facets=_facets(args))
    for note in comparison.notes():  # on stderr whatever the format; the reports say the library notes too
        print(note.line(), file=sys.stderr)
    if args.format:
        output = _emit(comparison, args.format, args.output, store)
    elif args.json:
        output = json.dumps({**comparison.to_dict(args.limit), **_annotators(comparison, store, args.permutations)},
                            indent=2, default=str)
    else:
        output = render(comparison, "markdown", store=store)
    found = regressions(comparison, tolerances)
    if found:
        raise RegressionFound("regression: " + "; ".join(found), output)
    return output


def _annotators(comparison: Comparison, store: TraceStore, permutations: int) -> dict[str, Any]:
    """With marks by two annotators or more on the paired questions: their agreement and the verdicts under each
    one's marks (`annotator_agreement`, `annotator_flips`); else nothing."""
    from .agreement import annotators_on, compute, flips

    questions = list(comparison.per_query["query"])
    if len(annotators_on(store, questions)) < 2:
        return {}
    return {"annotator_agreement": compute(store, queries=questions).to_dict(),
            "annotator_flips": flips(store, comparison, permutations=permutations).to_dict()}


def _facets(args: argparse.Namespace) -> list[str] | None:
    """`--facets FIELD,...` (None: category and every eligible field), or none with `--no-facets`."""
    if args.no_facets and args.facets:
        raise ValueError("give --facets FIELD,... or --no-facets, not both")
    if args.no_facets:
        return []
    chosen = [name.strip() for name in (args.facets or "").split(",") if name.strip()]
    if args.facets is not None and not chosen:
        raise ValueError("--facets needs at least one field, e.g. --facets category,style (or pass --no-facets)")
    return chosen or None


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
    dataset = with_unanswerable(_dataset(args), args.unanswerable)
    return dataset.sample(args.sample), overrides, config, metrics


def _dataset(args: argparse.Namespace) -> Dataset:
    """`--dataset DIR`, or `--kb DIR` with `--queries FILE` (or `--known-item FIELD`); exactly one of the two."""
    if bool(args.dataset) == bool(args.kb):
        given = "both" if args.dataset else "neither"
        raise ValueError(f"give exactly one of --dataset DIR or --kb DIR (with --queries FILE); got {given}")
    if args.dataset:
        return load_dataset(args.dataset, split=args.split, known_item_field=args.known_item, kb_root=args.kb_root,
                            queries_file=args.queries, exclude_paths=args.exclude, qrels_file=args.qrels)
    if args.kb_root:
        raise ValueError("--kb-root only applies to --dataset; with --kb, pass the Markdown root itself as --kb")
    if args.known_item:
        return load_dataset(args.kb, split=args.split, known_item_field=args.known_item, exclude_paths=args.exclude,
                            qrels_file=args.qrels)
    if getattr(args, "judgement_rule", "latest") != "latest" and not getattr(args, "judgements", None):
        raise ValueError("--judgement-rule only applies with --judgements TRACES_FILE")
    if getattr(args, "judgements", None):
        if args.queries or args.qrels:
            raise ValueError("give --queries FILE (and --qrels FILE) or --judgements TRACES_FILE, not both")
        from .judgements import load_judged_set
        return load_judged_set(args.kb, args.judgements, split=args.split, exclude_paths=args.exclude,
                               rule=args.judgement_rule)
    if not args.queries:
        raise ValueError("--kb needs --queries FILE (a JSONL file of labelled queries), or --known-item FIELD")
    return load_query_set(args.kb, args.queries, split=args.split, exclude_paths=args.exclude, qrels_file=args.qrels)


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
    unanswerable = int(result.dataset.get("unanswerable") or 0)
    counted = (f"{result.dataset['queries']} queries ({result.dataset['queries'] - unanswerable} scored by rank, "
               f"{unanswerable} unanswerable graded)" if unanswerable else f"{result.dataset['queries']} queries")
    lines = [f"run {result.run_id}: {result.dataset['name']}/{result.dataset['split']}, "
             f"{counted}, top_k {result.top_k}, {result.seconds:.1f} s"]
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
    lines.append(f"  {summary_line(diag.get('answerability'))}")
    missed = diag.get("missed_stages") or {}
    lines.append(f"  missed pages: {missed.get('sentence') or missed.get('skipped', 'not attributed')}")
    lines.append(f"  {ties_sentence(diag.get('ties'))}")
    if diag.get("kb_changed"):
        lines.append(f"  warning: {diag['kb_changed']}")
    lines.append(f"  {judged_line(diag)}")
    skipped = skipped_note(result.dataset)
    if skipped:
        lines.append(f"  {skipped}")
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
