"""`python -m retrieval traces gaps --window 7d [--until T] [--kb DIR] [--json] [--max-topics N]`: the content gaps
report (retrieval/traces/gaps.py) as Markdown, or as JSON. Bad input is a ValueError, which the CLI prints as one
`error: …` line and exits 2; a window with no unanswered question says so and exits 0."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrieval.paths import default_kb, trace_sources
from retrieval.traces.filters import MOMENT_HELP, SPAN_HELP, parse_since, parse_span
from retrieval.traces.gaps import MAX_TOPICS, content_gaps

TRACES_HELP = ("DuckDB trace file, or a folder of them read as one (default: $LOOKUP_KNOWLEDGE_TRACES, else "
               "traces.duckdb)")


def add_gaps(commands: argparse._SubParsersAction, add_kb_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    """`traces gaps`: the window, its end, the knowledge base (the index's flags) and the output."""
    gaps = commands.add_parser("gaps", help="the questions the knowledge base did not answer in a window, grouped "
                                            "into topics, each with its terms, size, trend and nearest pages")
    gaps.add_argument("--traces", default=None, help=TRACES_HELP)
    gaps.add_argument("--window", required=True, metavar="SPAN",
                      help=f"the window, ending at --until, compared with the one before it: {SPAN_HELP}")
    gaps.add_argument("--until", default=None, metavar="WHEN",
                      help=f"the window's end (default: now): {MOMENT_HELP}, or a span back from now")
    gaps.add_argument("--max-topics", type=int, default=MAX_TOPICS, metavar="N",
                      help=f"show the N largest topics (default {MAX_TOPICS}); the others are counted")
    gaps.add_argument("--json", action="store_true", help="print the report as JSON instead of Markdown")
    add_kb_flags(gaps)


def run_gaps(args: argparse.Namespace, open_kb: Callable[[argparse.Namespace, Any, int], Any]) -> str:
    """The report for the flags; the window and the end are checked before the index opens."""
    from retrieval.config import LookupConfig

    window = parse_span(args.window, flag="--window")
    until = parse_since(args.until, flag="--until") if args.until is not None else None
    if args.max_topics < 1:
        raise ValueError(f"--max-topics takes a whole number of at least 1, got {args.max_topics}")
    sources = [Path(args.traces)] if args.traces else list(trace_sources())
    missing = [str(p) for p in sources if not p.exists()]
    if missing:
        raise ValueError(f"no trace file at {', '.join(missing)}; pass the DuckDB file the lookups were recorded in "
                         "(--traces)")
    index = open_kb(args, args.kb or default_kb(), LookupConfig().svd_dims)
    gaps = content_gaps(sources if len(sources) > 1 else sources[0], index, window=window, until=until,
                        max_topics=args.max_topics)
    return json.dumps(gaps.to_dict(), indent=2) if args.json else gaps.to_markdown().rstrip("\n")
