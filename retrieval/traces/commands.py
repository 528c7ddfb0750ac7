"""`python -m retrieval traces export`, `traces prune` and `traces compact`: their flags and what they run.
Each prints a JSON summary on stdout; bad input is a ValueError, which the CLI prints as one `error: …` line
and exits 2."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import get_args

from retrieval.lookup.statuses import FilterStatus, L1Status, Layer
from retrieval.paths import default_traces
from retrieval.traces import db as trace_db
from retrieval.traces.compact import STORAGE_VERSIONS, compact, storage_version_of
from retrieval.traces.export import FORMATS, export_traces
from retrieval.traces.filters import MOMENT_HELP, SPAN_HELP, TraceFilter, parse_moment, parse_since, parse_span, utc_now
from retrieval.traces.prune import file_size, prune

DECISIONS: tuple[str, ...] = get_args(FilterStatus)
SHORT_DECISIONS = {d.removeprefix("skipped_"): d for d in DECISIONS if d.startswith("skipped_")}  # ambiguous
LAYERS: tuple[str, ...] = get_args(Layer)
L1_STATUSES: tuple[str, ...] = get_args(L1Status)
TRACES_HELP = "DuckDB trace file (default: $LOOKUP_KNOWLEDGE_TRACES, else traces.duckdb)"


def add_export(commands: argparse._SubParsersAction) -> None:
    """`traces export`: the Traces page's filters as flags."""
    export = commands.add_parser("export", help="write stored invocations to a Parquet, CSV or JSON lines file, "
                                                "streamed by DuckDB (filters as on the app's Traces page)")
    export.add_argument("--traces", default=None, help=TRACES_HELP)
    export.add_argument("--format", required=True, choices=list(FORMATS), help="the file's format")
    export.add_argument("--output", required=True, metavar="FILE", help="the file to write (its folder must exist)")
    export.add_argument("--overwrite", action="store_true", help="replace FILE if it exists (refused otherwise)")
    export.add_argument("--oldest-first", action="store_true", help="rows in time order (default: newest first, "
                                                                    "as the Traces page lists them)")
    filters = export.add_argument_group("filters (default: every row)")
    filters.add_argument("--since", default=None, help=f"rows created at or after this: {MOMENT_HELP}, or "
                                                       f"{SPAN_HELP}")
    filters.add_argument("--until", default=None, help="rows created before this: an ISO date or time, or a span "
                                                       "back from now")
    runs = filters.add_mutually_exclusive_group()
    runs.add_argument("--interactive", action="store_true", help="only interactive lookups (no evaluation run)")
    runs.add_argument("--run", action="append", default=[], metavar="RUN_ID",
                      help="only the lookups of this evaluation run (repeatable)")
    filters.add_argument("--query-contains", default="", metavar="TEXT", help="the query contains TEXT (any case, "
                                                                             "taken literally)")
    filters.add_argument("--layer", action="append", default=[], metavar="LAYER",
                         help=f"retrieval_layer is LAYER (repeatable: any of them): {', '.join(LAYERS)}")
    filters.add_argument("--l1-status", action="append", default=[], metavar="STATUS",
                         help=f"l1_status is STATUS (repeatable): {', '.join(L1_STATUSES)}")
    filters.add_argument("--filter-decision", action="append", default=[], metavar="DECISION",
                         help=f"filter_decision is DECISION (repeatable): {', '.join(DECISIONS)} (the short "
                              f"{', '.join(SHORT_DECISIONS)} say the same)")


def add_prune(commands: argparse._SubParsersAction) -> None:
    """`traces prune`: a cut by age or date; runs kept unless asked."""
    prune_cmd = commands.add_parser("prune", help="remove interactive lookups older than a cut (evaluation runs "
                                                  "kept unless --include-runs)")
    prune_cmd.add_argument("--traces", default=None, help=TRACES_HELP)
    cut = prune_cmd.add_mutually_exclusive_group(required=True)
    cut.add_argument("--older-than", default=None, metavar="SPAN", help=f"remove rows older than this: {SPAN_HELP}")
    cut.add_argument("--before", default=None, metavar="DATE", help=f"remove rows created before this: {MOMENT_HELP}")
    prune_cmd.add_argument("--include-runs", action="store_true",
                           help="also remove evaluation runs created before the cut, whole: their eval_run, "
                                "eval_query and eval_query_metric rows and all their lookups")
    prune_cmd.add_argument("--dry-run", action="store_true", help="count what would go; change nothing")
    prune_cmd.add_argument("--compact", action="store_true",
                           help="then rewrite the file so it shrinks (a delete alone frees space for new rows but "
                                "keeps the file's size)")


def add_compact(commands: argparse._SubParsersAction) -> None:
    """`traces compact`: the file rewritten, smaller, optionally in DuckDB's newer storage format."""
    compact_cmd = commands.add_parser("compact", help="rewrite the trace file so it shrinks (what deleted rows "
                                                      "freed is given back), optionally in another storage format")
    compact_cmd.add_argument("--traces", default=None, help=TRACES_HELP)
    compact_cmd.add_argument("--storage-version", default=None, choices=list(STORAGE_VERSIONS),
                             help="the new file's format (default: the file's own): v1.5.0 compresses the JSON "
                                  "columns and about halves the file, but only DuckDB 1.5 or later opens it; "
                                  "v1.0.0 opens in every DuckDB 1.x")


def run_export(args: argparse.Namespace) -> str:
    filters = TraceFilter(
        since=parse_since(args.since, flag="--since") if args.since is not None else None,
        until=parse_since(args.until, flag="--until") if args.until is not None else None,
        interactive=args.interactive, run_ids=tuple(args.run), query_contains=args.query_contains,
        layers=known_values(args.layer, LAYERS, "--layer"),
        l1_statuses=known_values(args.l1_status, L1_STATUSES, "--l1-status"),
        decisions=known_values(args.filter_decision, DECISIONS, "--filter-decision", SHORT_DECISIONS))
    traces = existing_traces(args.traces)
    if Path(args.output).is_file() and not args.overwrite:
        raise ValueError(f"the export's output {args.output} exists; pass another --output, or --overwrite")
    result = export_traces(traces, args.output, args.format, filters, oldest_first=args.oldest_first,
                           overwrite=args.overwrite)
    return json.dumps({**result.to_dict(), "traces": str(traces), "filters": filters.words()}, indent=2)


def run_prune(args: argparse.Namespace) -> str:
    if args.older_than is not None:
        cut = utc_now() - parse_span(args.older_than, flag="--older-than")
    else:
        cut = parse_moment(args.before, flag="--before")
    if args.dry_run and args.compact:
        raise ValueError("--dry-run changes nothing, so it cannot --compact; drop one of them")
    report = prune(existing_traces(args.traces), cut, include_runs=args.include_runs, dry_run=args.dry_run,
                   compact_file=args.compact)
    return json.dumps({"traces": str(existing_traces(args.traces)), **report.to_dict()}, indent=2)


def run_compact(args: argparse.Namespace) -> str:
    path = existing_traces(args.traces)
    before = file_size(path)
    compact(path, args.storage_version)
    with trace_db.connect(path, timeout=10.0, read_only=True) as con:
        version = storage_version_of(con)
    return json.dumps({"traces": str(path), "bytes_before": before, "bytes_after": file_size(path),
                       "storage_version": version}, indent=2)


def known_values(given: Sequence[str], allowed: tuple[str, ...], flag: str,
                 short: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """`given` as the values stored (any case; a short name of `short` as its stored value); a ValueError naming
    `flag` and every value it takes for one it does not know, as a filter on it would match no row."""
    by_name = {value.lower(): value for value in allowed} | {k.lower(): v for k, v in (short or {}).items()}
    known = []
    for value in given:
        stored = by_name.get(value.strip().lower())
        if stored is None:
            raise ValueError(f"{flag} takes one of {', '.join(allowed)}, got {value!r}: no row could match it")
        known.append(stored)
    return tuple(dict.fromkeys(known))


def existing_traces(traces: str | None) -> Path:
    """The trace file a command reads (--traces, else the default); a ValueError when there is none."""
    path = Path(traces) if traces else default_traces()
    if not path.is_file():
        raise ValueError(f"no trace file at {path}; pass the DuckDB file the lookups were recorded in (--traces)")
    return path
