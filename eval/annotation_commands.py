"""The eval CLI's annotator commands: `agreement` (how far the annotators agree), `adjudicate` (settle a disputed
page) and `assign` (a queue of pages for annotators), over eval.agreement and eval.annotation."""

from __future__ import annotations

import argparse
import getpass
import json
from pathlib import Path

from retrieval import TraceStore
from retrieval.paths import default_traces

from . import agreement, annotation


def annotation_command(args: argparse.Namespace) -> str:
    """Run `agreement`, `adjudicate` or `assign`; ValueError (one line) for bad input."""
    store = TraceStore(_existing(args.traces))
    if args.command == "agreement":
        return _agreement(args, store)
    if args.command == "adjudicate":
        grade = _integer(args.grade, "--grade", "0, 1 or 2")
        agreement.adjudicate(store, args.query, args.source, grade, who=args.who, note=args.note)
        done = {"query": args.query.strip(), "source": args.source.strip(), "grade": grade, "who": args.who.strip()}
        return json.dumps(done) if args.json else (
            f"adjudicated {done['source']} for {done['query']!r}: grade {grade} by {done['who']} in {store.path}")
    return _assign(args, store)


def _existing(traces: str | None) -> Path:
    """The trace file named (default: the one this process writes), which must exist: the marks are in it."""
    path = Path(traces) if traces else default_traces()
    if not path.is_file():
        raise ValueError(f"no trace file {path}; give the trace file the marks were made in with --traces FILE")
    return path


def _integer(value: str, flag: str, expected: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"{flag} must be {expected}, got {value!r}") from None


def _agreement(args: argparse.Namespace, store: TraceStore) -> str:
    try:
        level = float(args.level)
    except ValueError:
        level = float("nan")
    if not 0 < level < 1:  # NaN included
        raise ValueError(f"--level must be between 0 and 1 (exclusive), e.g. 0.95; got {args.level!r}")
    resamples = _integer(args.resamples, "--resamples", "a whole number of at least 1")
    seed = _integer(args.seed, "--seed", "a whole number")
    found = agreement.compute(store, queue=args.queue, level=level, resamples=resamples, seed=seed)
    if args.json:
        return json.dumps(found.to_dict(), indent=2)
    return text(found, store.path, args.queue)


def text(found: agreement.Agreement, path: Path, queue: str | None = None) -> str:
    """The agreement as the CLI prints it: the pairs, α, the question sets, the disputes and how to settle one."""
    scope = f"queue {queue} of {path}" if queue else str(path)
    if found.reason:
        return f"{scope}: {found.reason}"
    pct = f"{found.level:.0%}"
    alpha = (f"{found.alpha:.4f} ({pct} CI {found.alpha_ci[0]:.4f} to {found.alpha_ci[1]:.4f})"
             if found.alpha is not None and found.alpha_ci else
             f"{found.alpha:.4f} (no interval)" if found.alpha is not None else f"undefined: {found.alpha_reason}")
    lines = [f"agreement of {len(found.annotators)} annotators ({', '.join(found.annotators)}) on {found.pages} "
             f"page(s) of {scope}",
             f"bootstrap: {found.resamples} resamples of the pages, seed {found.seed}, {pct} percentile intervals",
             "",
             f"Krippendorff's alpha ({found.metric}, all annotators): {alpha}; {found.pairable} page(s) judged by "
             "two or more",
             "",
             "Cohen's kappa per pair (on the pages both judged):",
             _indent(found.pairs_frame().fillna("").to_string(index=False)),
             "",
             "per question set (a queue's pages; marks outside any queue: (no queue)):",
             _indent(found.sets_frame().fillna("").to_string(index=False)),
             "",
             f"disagreements: {len(found.disagreements)} page(s) where the annotators' grades differ, "
             f"{found.adjudicated} adjudicated"]
    for item in found.disagreements[:20]:
        grades = ", ".join(f"{w} {g}" for w, g in item.grades)
        settled = f" -> adjudicated {item.adjudicated_grade}" if item.adjudicated else ""
        lines.append(f"  {item.query!r} {item.source}: {grades}{settled}")
    if len(found.disagreements) > 20:
        lines.append(f"  … and {len(found.disagreements) - 20} more (--json lists them all)")
    if found.disagreements:
        lines.append(f"settle one: {agreement.ADJUDICATE}")
    return "\n".join(lines)


def _indent(block: str) -> str:
    return "\n".join("  " + line for line in block.splitlines())


def _assign(args: argparse.Namespace, store: TraceStore) -> str:
    people = [name.strip() for name in args.annotators.split(",") if name.strip()]
    by = args.by or _user()
    if args.holes:
        added = annotation.assign_holes(store, *args.holes, args.queue, people, by=by)
    else:
        added = annotation.assign(store, args.queue, annotation.pages_from_tsv(args.pages), people, by=by)
    table = annotation.queues(store)
    table = table[table["queue"] == args.queue.strip()]
    if args.json:
        return json.dumps({"queue": args.queue.strip(), "added": added,
                           "annotators": table.to_dict(orient="records")}, default=int)
    return (f"queue {args.queue.strip()}: {added} new assignment(s) in {store.path}\n"
            + table.to_string(index=False))


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "command line"
