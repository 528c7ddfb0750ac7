"""Named annotators and their queues: each annotator's marks, and the (query, source) pages assigned to them.

Every mark in `judgement` names its annotator (`who`: a signed-in email or a name the analyst gives;
eval.judgements.record refuses a blank one). Each annotator's latest mark of a page is their grade of it
(`by_annotator`); marks made before annotators were named, with a blank `who`, read as the annotator UNNAMED.

A queue is a named set of pages assigned to annotators (table `judgement_assignment`, schema v15): `assign`
adds pages (re-assigning adds nothing), `assign_holes` the unjudged pages of a comparison's changed top 10s
(eval.holes), `queues` counts what each annotator has judged, `pending` lists what they have left.
Agreement between annotators, adjudication and consensus qrels are eval.agreement's.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from retrieval import TraceStore

from .annotators import ANNOTATOR, UNNAMED, annotator_sql, annotators, by_annotator, has_table
from .reading import one_read

__all__ = ["QUEUE_COLUMNS", "UNNAMED", "annotators", "assign", "assign_holes", "by_annotator", "check_queue",
           "has_table", "pages_from_tsv", "pending", "queue_names", "queue_pages", "queues"]

QUEUE_COLUMNS = ["queue", "annotator", "assigned", "judged", "pending"]


def assign(store: TraceStore, queue: str, pages: Iterable[tuple[str, str]], annotators: Sequence[str], *,
           by: str) -> int:
    """Assign every (query, source) page of `pages` to each of `annotators` in `queue`; how many rows were added
    (a page already assigned to an annotator in that queue is not added again). ValueError for a blank queue,
    page, annotator or `by`, or no annotator."""
    name = _name(queue, "a queue needs a name, e.g. --queue week-12")
    people = list(dict.fromkeys(_name(a, "an annotator needs a name (an email or a name)") for a in annotators))
    if not people:
        raise ValueError("assign the queue to at least one annotator, e.g. --annotators ana,bob")
    assigner = _name(by, "say who assigns the queue (by=NAME)")
    wanted = list(dict.fromkeys(_page(page) for page in pages))
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        held = set(con.execute("SELECT annotator, query, source FROM judgement_assignment WHERE queue = ?",
                               [name]).fetchall())
        rows = [[name, person, query, source, now, assigner] for person in people for query, source in wanted
                if (person, query, source) not in held]
        if rows:
            con.executemany("INSERT INTO judgement_assignment VALUES (?, ?, ?, ?, ?, ?)", rows)
        con.execute("COMMIT")
    return len(rows)


def assign_holes(store: TraceStore, run_a: str, run_b: str, queue: str, annotators: Sequence[str], *,
                 by: str) -> int:
    """Assign the hole loop's pages of comparing `run_a` with `run_b` (eval.holes.judging_queue: the unjudged
    pages of the top 10s that changed) to `annotators` in `queue`; how many rows were added."""
    from .holes import judging_queue

    found = judging_queue(store, run_a, run_b)
    return assign(store, queue, [(h.query, h.source) for h in found.holes], annotators, by=by)


def pages_from_tsv(path: str | Path) -> list[tuple[str, str]]:
    """The (query, source) pages of a TSV file, one `query<TAB>source` a line (a `query<TAB>source` header
    line is skipped); ValueError naming the file and line for anything else."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"no pages file {file}; give a TSV file with one `query<TAB>source` line per page")
    pages = []
    with file.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or not "".join(row).strip():
                continue
            if len(row) != 2 or not row[0].strip() or not row[1].strip():
                raise ValueError(f"{file} line {number}: expected `query<TAB>source`, got {row!r}")
            if number == 1 and [c.strip().lower() for c in row] == ["query", "source"]:
                continue
            pages.append((row[0].strip(), row[1].strip()))
    if not pages:
        raise ValueError(f"{file} lists no page; give one `query<TAB>source` line per page")
    return pages


@one_read
def queues(store: TraceStore) -> pd.DataFrame:
    """Per queue and annotator: pages assigned, judged (the annotator has a mark on it) and pending (QUEUE_COLUMNS)."""
    if not has_table(store, "judgement_assignment"):
        return pd.DataFrame(columns=QUEUE_COLUMNS)
    return store.query(f"""
        WITH assigned AS (SELECT DISTINCT queue, annotator, query, source FROM judgement_assignment),
             marked AS (SELECT DISTINCT query, source, {ANNOTATOR} AS who FROM judgement)
        SELECT a.queue, a.annotator, count(*) AS assigned, count(m.who) AS judged,
               count(*) - count(m.who) AS pending
        FROM assigned a LEFT JOIN marked m ON m.query = a.query AND m.source = a.source AND m.who = a.annotator
        GROUP BY a.queue, a.annotator ORDER BY a.queue, a.annotator""")


def queue_names(store: TraceStore) -> list[str]:
    """Every queue's name, sorted."""
    if not has_table(store, "judgement_assignment"):
        return []
    return sorted(store.query("SELECT DISTINCT queue FROM judgement_assignment")["queue"])


def queue_pages(store: TraceStore, queue: str) -> pd.DataFrame:
    """The pages of `queue` (query, source), whoever they are assigned to; ValueError for an unknown queue."""
    check_queue(store, queue)
    return store.query("SELECT DISTINCT query, source FROM judgement_assignment WHERE queue = ? ORDER BY query, source",
                       [queue])


def check_queue(store: TraceStore, queue: str) -> None:
    """ValueError naming the known queues when `queue` is not one of them."""
    known = queue_names(store)
    if queue not in known:
        listed = ", ".join(known) if known else "none yet (assign one with `python -m eval assign`)"
        raise ValueError(f"unknown queue {queue!r}; queues in this trace file: {listed}")


@one_read
def pending(store: TraceStore, annotator: str, queue: str | None = None) -> pd.DataFrame:
    """The pages assigned to `annotator` (in `queue`, or in any) that they have not marked yet: columns query,
    source, queue, in the order they were assigned. ValueError for a blank annotator or an unknown queue."""
    who = _name(annotator, "say whose pending pages to list (an annotator's name or email)")
    if queue is not None:
        check_queue(store, queue)
    return store.query(f"""
        SELECT a.query, a.source, a.queue FROM judgement_assignment a
        WHERE a.annotator = ? AND (? IS NULL OR a.queue = ?)
          AND NOT EXISTS (SELECT 1 FROM judgement m WHERE m.query = a.query AND m.source = a.source
                          AND {annotator_sql('m.who')} = a.annotator)
        GROUP BY a.queue, a.query, a.source ORDER BY min(a.assigned_at), a.queue, a.query, a.source""",
                       [who, queue, queue])


def _name(value: object, advice: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{advice}; got {value!r}")
    return value.strip()


def _page(page: object) -> tuple[str, str]:
    if not isinstance(page, (tuple, list)) or len(page) != 2:
        raise ValueError(f"a page is a (query, source) pair, got {page!r}")
    query, source = page
    if not isinstance(query, str) or not query.strip() or not isinstance(source, str) or not source.strip():
        raise ValueError(f"a page needs a query and a source, got {query!r} and {source!r}")
    return query.strip(), source.strip()
