"""`python -m retrieval traces trends` and `traces changes`: their flags, what they print, and their alerts.

Both read the trace file in place, read-only, as `traces export` does (trace_reader.connect). Exit codes: 0 ok
(also when the window holds no production lookup: the output says so), 1 a `--fail-on` breach (one line per
breach on stderr, after the report on stdout), 2 bad input (one `error: …` line, raised as a ValueError).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval.traces.alerts import GRAMMAR, Condition, check, load_config, parse_fail_on, parse_significant
from retrieval.traces.changes import changes
from retrieval.traces.commands import TRACES_HELP, existing_traces
from retrieval.traces.figures import NAMES
from retrieval.traces.filters import MOMENT_HELP, SPAN_HELP
from retrieval.traces.trends import BUCKETS, PER, trends

TRENDS_FORMATS = ("text", "json", "csv")
CHANGES_FORMATS = ("text", "markdown", "html", "json")
UNTIL_HELP = f"the window's end (default: now, UTC): {MOMENT_HELP}, or {SPAN_HELP}"


@dataclass(frozen=True)
class Outcome:
    """What a trends or changes command prints on stdout (None: nothing), and its breaches' lines (stderr, exit 1)."""

    output: str | None
    breaches: tuple[str, ...] = ()


def add_trends(commands: argparse._SubParsersAction) -> None:
    """`traces trends`: every figure by hour, day or week over production lookups."""
    cmd = commands.add_parser("trends", help="production lookups' figures (shares, latency, confidence) by hour, day "
                                             "or week, optionally per host, category or knowledge base")
    cmd.add_argument("--traces", default=None, help=TRACES_HELP)
    cmd.add_argument("--since", default="30d", help=f"the window's start (default: 30d, back from --until): "
                                                    f"{MOMENT_HELP}, or {SPAN_HELP}")
    cmd.add_argument("--until", default=None, help=UNTIL_HELP)
    cmd.add_argument("--by", default="day", choices=BUCKETS, help="the bucket: hour, day (from midnight UTC) or "
                                                                 "week (ISO, from Monday); default day")
    cmd.add_argument("--per", default=None, choices=list(PER), help="one row per bucket and host, category (the "
                                                                   "filter's applied category) or kb (kb_path)")
    _add_output(cmd, TRENDS_FORMATS, ("json", "csv"))
    _add_alerts(cmd, "the whole window's figure")


def add_changes(commands: argparse._SubParsersAction,
                add_kb_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    """`traces changes`: the last window against the one before, tested and said in words; `--gaps` adds the
    window's content gaps (retrieval/traces/gaps.py) over the knowledge base of `--kb`."""
    cmd = commands.add_parser("changes", help="what changed: the last window of production lookups against the one "
                                              "before, each figure tested (Holm-corrected), with driving queries")
    cmd.add_argument("--traces", default=None, help=TRACES_HELP)
    cmd.add_argument("--window", default="7d", help=f"the window (default 7d): {SPAN_HELP}; compares "
                                                    "[until-window, until) with the window before it")
    cmd.add_argument("--until", default=None, help=UNTIL_HELP)
    cmd.add_argument("--level", type=float, default=0.05, help="significance level after Holm's correction "
                                                               "(default 0.05)")
    _add_output(cmd, CHANGES_FORMATS, ("json",))
    _add_alerts(cmd, "the last window's figure")
    cmd.add_argument("--fail-on-significant", nargs="?", const="", default=None, metavar="FIGURES",
                     help="exit 1 on any significant change, or on one of these comma-separated figures'")
    cmd.add_argument("--gaps", action="store_true",
                     help="add the window's content gaps (as `traces gaps` finds them) over the knowledge base of "
                          "--kb; opens its index, so it takes longer than the figures alone")
    add_kb_flags(cmd)


def _add_output(cmd: argparse.ArgumentParser, formats: tuple[str, ...], shortcuts: tuple[str, ...]) -> None:
    cmd.add_argument("--format", default=None, choices=formats, help="what to print (default text)")
    for name in shortcuts:
        cmd.add_argument(f"--{name}", action="store_true", help=f"the same as --format {name}")
    cmd.add_argument("--output", default=None, metavar="FILE", help="write the report to FILE (replaced if it "
                                                                    "exists) instead of stdout")


def _add_alerts(cmd: argparse.ArgumentParser, applies_to: str) -> None:
    cmd.add_argument("--fail-on", default=None, metavar="EXPR",
                     help=f"exit 1 when {applies_to} meets a condition: {GRAMMAR}; figures: {', '.join(NAMES)}")
    cmd.add_argument("--fail-on-file", default=None, metavar="FILE",
                     help='a TOML file: fail_on = ["abstain_share>0.1", ...] and significant = [...] or true')


def run_trends(args: argparse.Namespace) -> Outcome:
    """The trends report for the flags, and its breaches."""
    fmt = _format(args, ("json", "csv"))
    conditions = _conditions(args)
    result = trends(existing_traces(args.traces), since=args.since, until=args.until, by=args.by, per=args.per)
    # a significance condition (from a shared alerts file) has no change to meet here: trends tests nothing
    breaches = check([c for c in conditions if c.threshold is not None], result)
    body = {"json": lambda: json.dumps({**result.to_dict(), "breaches": [b.line for b in breaches]}, indent=2),
            "csv": result.to_csv, "text": result.to_text}[fmt]()
    return Outcome(_written(body, args.output), tuple(b.line for b in breaches))


def run_changes(args: argparse.Namespace, open_kb: Callable[[argparse.Namespace, Any, int], Any]) -> Outcome:
    """The changes report for the flags (with the content gaps when `--gaps`), and its breaches."""
    fmt = _format(args, ("json",))
    conditions = _conditions(args)
    if args.fail_on_significant is not None:
        conditions += parse_significant(args.fail_on_significant)
    path = existing_traces(args.traces)
    result = changes(path, window=args.window, until=args.until, level=args.level)
    if args.gaps and not result.empty_reason:
        from retrieval.config import LookupConfig
        from retrieval.paths import default_kb
        from retrieval.traces.gaps import content_gaps

        index = open_kb(args, args.kb or default_kb(), LookupConfig().svd_dims)
        found = content_gaps(path, index, window=result.window, until=result.until)
        result = result.with_sections([found.as_section()])
    breaches = check(conditions, result)
    body = {"json": lambda: json.dumps({**result.to_dict(), "breaches": [b.line for b in breaches]}, indent=2),
            "markdown": result.to_markdown, "html": result.to_html, "text": result.to_text}[fmt]()
    return Outcome(_written(body, args.output), tuple(b.line for b in breaches))


def _format(args: argparse.Namespace, shortcuts: tuple[str, ...]) -> str:
    chosen = [name for name in shortcuts if getattr(args, name)]
    if args.format is not None:
        chosen.append(args.format)
    if len(set(chosen)) > 1:
        raise ValueError(f"pick one output format, got {', '.join(sorted(set(chosen)))}")
    return chosen[0] if chosen else "text"


def _conditions(args: argparse.Namespace) -> tuple[Condition, ...]:
    conditions: tuple[Condition, ...] = ()
    if args.fail_on is not None:
        conditions += parse_fail_on(args.fail_on)
    if args.fail_on_file is not None:
        conditions += load_config(args.fail_on_file)
    return conditions


def _written(body: str, output: str | None) -> str:
    if output is None:
        return body.rstrip("\n")  # print adds the last newline
    path = Path(output)
    if path.is_dir() or not path.parent.is_dir():
        raise ValueError(f"--output {output}: pass a file path in an existing folder")
    path.write_text(body if body.endswith("\n") else body + "\n", encoding="utf-8")
    return f"wrote {path}"
