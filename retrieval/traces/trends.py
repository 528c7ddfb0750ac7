"""Trends over production lookups: every figure (figures.py) by hour, day or week, optionally per host, category
or knowledge base, in one GROUP BY that DuckDB runs over the trace file in place.

Only the aggregate comes back to Python (a row per bucket, and one for the whole window): no lookup row is
loaded. The window [since, until) is a plain range predicate on `created_at`, so DuckDB skips the row groups
whose time range (their zone map) lies outside it. Buckets are `date_trunc` of `created_at` (naive UTC): an
hour, a day from midnight UTC, or an ISO week from Monday; the first and last buckets may be partial.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retrieval.traces import reader as trace_reader
from retrieval.traces.figures import FIGURES, NAMES, PRODUCTION
from retrieval.traces.filters import parse_since, utc_naive, utc_now
from retrieval.traces.schema import TABLE

if TYPE_CHECKING:
    import pandas as pd

BUCKETS = ("hour", "day", "week")
PER = {"host": "host", "category": "category", "kb": "kb_path"}  # --per: the column each groups by
NONE_LABEL = "(none)"  # a row without the per column's value (rows recorded before it existed, no filter applied)


@dataclass(frozen=True)
class Trends:
    """Every figure per bucket (and per host, category or kb) of [since, until), and over the whole window
    (`total`, one value per figure; what `--fail-on` checks). `empty_reason` says why there is nothing, if so."""

    source: str
    since: datetime
    until: datetime
    by: str
    per: str | None
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    total: dict[str, float | None]
    empty_reason: str | None = None

    def frame(self) -> pd.DataFrame:
        """The buckets as a DataFrame: bucket, [per], lookups and every figure (a share in [0, 1], latency in ms)."""
        import pandas as pd

        return pd.DataFrame(list(self.rows), columns=list(self.columns))

    def window_words(self) -> str:
        """'2026-01-01 00:00 to 2026-01-31 00:00 UTC'."""
        return f"{self.since:%Y-%m-%d %H:%M} to {self.until:%Y-%m-%d %H:%M} UTC"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the window, the grouping, the whole window's figures and the buckets."""
        return {"traces": self.source, "since": self.since.isoformat(), "until": self.until.isoformat(),
                "by": self.by, "per": self.per, "empty_reason": self.empty_reason, "total": self.total,
                "buckets": [{name: _plain(value) for name, value in zip(self.columns, row, strict=True)}
                            for row in self.rows]}

    def to_csv(self) -> str:
        """The buckets as CSV, one row a bucket (and per value), a header first."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow(["" if value is None else _plain(value) for value in row])
        return out.getvalue()

    def to_text(self) -> str:
        """A table a terminal shows: the bucket, the lookups and the main figures, then the whole window."""
        if self.empty_reason:
            return self.empty_reason
        shown = ("lookups", "abstain_share", "empty_share", "error_share", "l1_failed_share", "p50_ms", "p95_ms",
                 "mean_confidence")
        head = ["bucket", *([self.per] if self.per else []), *shown]
        index = {name: i for i, name in enumerate(self.columns)}
        lines = [head]
        for row in self.rows:
            bucket = row[0].strftime("%Y-%m-%d %H:%M" if self.by == "hour" else "%Y-%m-%d")
            lines.append([bucket, *([str(row[1])] if self.per else []),
                          *(_cell(name, row[index[name]]) for name in shown)])
        lines.append(["whole window", *([""] if self.per else []), *(_cell(n, self.total.get(n)) for n in shown)])
        widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
        text = ["  ".join(cell.ljust(width) if i < (2 if self.per else 1) else cell.rjust(width)
                          for i, (cell, width) in enumerate(zip(line, widths, strict=True))) for line in lines]
        return "\n".join([f"production lookups, {self.window_words()}, by {self.by}", *text])


def trends(store_or_path: trace_reader.Target, *, since: datetime | str, until: datetime | str | None = None,
           by: str = "day", per: str | None = None) -> Trends:
    """Every figure over the production lookups in [since, until) (until: now, UTC), bucketed by `by` (hour, day
    or week) and, with `per`, per host, category or kb; times are naive UTC or aware (converted), or text as the
    CLI takes it (`30d`, `2026-01-01`)."""
    start, end = window(since, until)
    if by not in BUCKETS:
        raise ValueError(f"--by takes {', '.join(BUCKETS)}, got {by!r}")
    if per is not None and per not in PER:
        raise ValueError(f"--per takes {', '.join(PER)}, got {per!r}")
    sql = trends_sql(start, end, by, per)
    with trace_reader.connect(store_or_path) as con:
        found = con.execute(sql).fetchall()
    columns = ("bucket", *([per] if per else []), *NAMES)
    rows, total = [], {name: None for name in NAMES}
    for record in found:
        whole, values = record[0], record[1:]
        if whole:
            total = {name: _number(value) for name, value in zip(NAMES, values[-len(NAMES):], strict=True)}
        else:
            rows.append(tuple(values[:len(columns) - len(NAMES)]) + tuple(_number(v) for v in values[-len(NAMES):]))
    source = source_words(store_or_path)
    result = Trends(source, start, end, by, per, columns, tuple(rows), total)
    if not total.get("lookups"):
        result = replace(result, total={**total, "lookups": 0.0},
                         empty_reason=f"no production lookups (no evaluation run) in {source} from "
                                      f"{result.window_words()}")
    return result


def trends_sql(since: datetime, until: datetime, by: str, per: str | None) -> str:
    """The one GROUP BY: a row per bucket (and per value), and the whole window's row (GROUPING SETS), first
    column true for it. The window's bounds are timestamp literals (a bound parameter makes DuckDB import pandas)."""
    bucket = f"date_trunc('{by}', created_at)"
    keys = [f"{bucket} AS bucket"]
    if per is not None:
        keys.append(f"coalesce({PER[per]}, '{NONE_LABEL}') AS \"{per}\"")
    figures = ", ".join(f'{figure.sql} AS "{figure.name}"' for figure in FIGURES)
    group = "bucket" + (f', "{per}"' if per else "")
    return (f"SELECT grouping(bucket) = 1 AS whole, {', '.join(keys)}, {figures}\n"
            f"FROM {TABLE}\nWHERE {time_range(since, until)} AND {PRODUCTION}\n"
            f"GROUP BY GROUPING SETS (({group}), ())\nORDER BY whole, {group}")


def time_range(since: datetime, until: datetime) -> str:
    """`created_at` in [since, until) as a plain range predicate (DuckDB prunes row groups by it)."""
    return f"created_at >= {_timestamp(since)} AND created_at < {_timestamp(until)}"


def window(since: datetime | str, until: datetime | str | None) -> tuple[datetime, datetime]:
    """[since, until) as naive UTC; text as the CLI takes it; an empty range is a ValueError."""
    end = end_of(until)
    start = parse_since(since, flag="--since", now=end) if isinstance(since, str) else utc_naive(since)
    if start >= end:
        raise ValueError(f"--since must be before --until: {start:%Y-%m-%d %H:%M} is not before "
                         f"{end:%Y-%m-%d %H:%M} UTC")
    return start, end


def source_words(target: trace_reader.Target) -> str:
    """The trace file (or files) a read of `target` opens, as a reader names them."""
    from retrieval.traces.writer import TraceWriter

    if isinstance(target, TraceWriter):
        return str(target.path)
    if isinstance(target, (str, os.PathLike)):
        return str(target)
    return ", ".join(map(str, target))


def end_of(until: datetime | str | None) -> datetime:
    """`until` as naive UTC: now when None; text as `--until` takes it (a time, or a span back from now)."""
    if until is None:
        return utc_now()
    return parse_since(until, flag="--until") if isinstance(until, str) else utc_naive(until)


def _timestamp(moment: datetime) -> str:
    return f"TIMESTAMP '{moment.isoformat(sep=' ')}'"


def _number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int):  # the count
        return value
    number = float(value)
    return number if math.isfinite(number) else None


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _cell(name: str, value: float | None) -> str:
    from retrieval.traces.figures import formatted

    return formatted(name, value)
