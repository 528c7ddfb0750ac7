"""Which `tool_invocation` rows a read wants, as one parameterised WHERE clause: the Traces page's filters,
the export command's flags and the exports all say it here, so they cannot select different rows.

Every value a user typed or picked is a bound parameter; only column names (constants) are in the SQL text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any


@dataclass(frozen=True)
class TraceFilter:
    """Rows created in [`since`, `until`) (naive UTC, as `created_at` is stored; aware times are converted), of
    interactive lookups only (`interactive`) or of the runs `run_ids` (neither: every row), whose query
    contains `query_contains` (case-insensitive, taken literally: `%` and `_` are plain characters), and
    whose layer, L1 status and filter decision are among those given (empty: any)."""

    since: datetime | None = None
    until: datetime | None = None
    interactive: bool = False
    run_ids: tuple[str, ...] = ()
    query_contains: str = ""
    layers: tuple[str, ...] = ()
    l1_statuses: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()  # the hosts that recorded the rows (schema v9's `host`); empty: every host

    def __post_init__(self) -> None:
        if self.interactive and self.run_ids:
            raise ValueError("a filter takes interactive lookups (no run) or the lookups of runs, not both")
        for name in ("run_ids", "layers", "l1_statuses", "decisions", "hosts"):
            values = getattr(self, name)
            if isinstance(values, str) or not all(isinstance(v, str) for v in values):
                raise ValueError(f"{name} takes a tuple of strings, got {values!r}")
        if self.since is not None and self.until is not None and utc_naive(self.since) >= utc_naive(self.until):
            raise ValueError(f"the time range is empty: since {self.since} is not before until {self.until}")

    def where(self) -> tuple[str, list[Any]]:
        """` WHERE …` (or "" for every row) and its parameters, in order."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.since is not None:
            clauses.append("created_at >= ?")
            params.append(utc_naive(self.since))
        if self.until is not None:
            clauses.append("created_at < ?")
            params.append(utc_naive(self.until))
        if self.interactive:
            clauses.append("run_id IS NULL")
        elif self.run_ids:
            clauses.append(_in("run_id", self.run_ids))
            params.extend(self.run_ids)
        for column, values in (("retrieval_layer", self.layers), ("l1_status", self.l1_statuses),
                               ("filter_decision", self.decisions), ("host", self.hosts)):
            if values:
                clauses.append(_in(column, values))
                params.extend(values)
        if self.query_contains.strip():
            clauses.append("contains(lower(query), lower(?))")
            params.append(self.query_contains.strip())
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def words(self) -> str:
        """The filter as a reader says it: 'interactive lookups · since 2026-01-05 17:00 UTC · query contains …'."""
        parts = ["interactive lookups" if self.interactive else
                 f"run {', '.join(self.run_ids)}" if self.run_ids else "every lookup (interactive and runs)"]
        if self.since is not None:
            parts.append(f"since {utc_naive(self.since):%Y-%m-%d %H:%M} UTC")
        if self.until is not None:
            parts.append(f"before {utc_naive(self.until):%Y-%m-%d %H:%M} UTC")
        if self.query_contains.strip():
            parts.append(f"query contains {self.query_contains.strip()!r}")
        for label, values in (("layer", self.layers), ("L1 status", self.l1_statuses),
                              ("filter decision", self.decisions), ("host", self.hosts)):
            if values:
                parts.append(f"{label} {' or '.join(values)}")
        return " · ".join(parts)


def utc_naive(moment: datetime) -> datetime:
    """`moment` as naive UTC, as `created_at` is stored (an aware time converted, a naive one taken as UTC)."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo is not None else moment


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join('?' * len(values))})"


# Times the trace commands take: a span back from now (`90m`, `12h`, `30d`, `2w`) or an ISO date or time (UTC
# unless it says otherwise), both returned as naive UTC, as `created_at` is stored. Bad text is a ValueError
# naming the flag and what it takes.

SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$")
UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
SPAN_HELP = "a span back from now: a number and m, h, d or w (90m, 12h, 30d, 2w)"
MOMENT_HELP = "an ISO date or time (2026-11-01, 2026-11-01T09:30, 2026-11-01T09:30+01:00; UTC unless it has an offset)"


def parse_span(text: str, *, flag: str) -> timedelta:
    """`30d` as 30 days; a ValueError saying what `flag` takes otherwise (0 and negative spans too)."""
    match = SPAN.match(text)
    if not match:
        raise ValueError(f"{flag} takes {SPAN_HELP}, got {text!r}")
    span = timedelta(**{UNITS[match.group(2)]: float(match.group(1))})
    if span <= timedelta(0):
        raise ValueError(f"{flag} takes a span longer than 0, got {text!r}")
    return span


def parse_moment(text: str, *, flag: str) -> datetime:
    """An ISO date or time as naive UTC; a ValueError saying what `flag` takes otherwise."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{flag} takes {MOMENT_HELP}, got {text!r}") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment


def parse_since(text: str, *, flag: str, now: datetime | None = None) -> datetime:
    """A span back from `now` (default: the current time) or an ISO date or time, as naive UTC."""
    if SPAN.match(text):
        return utc_now(now) - parse_span(text, flag=flag)
    try:
        return parse_moment(text, flag=flag)
    except ValueError:
        raise ValueError(f"{flag} takes {MOMENT_HELP} or {SPAN_HELP}, got {text!r}") from None


def utc_now(now: datetime | None = None) -> datetime:
    """`now` (default: the current time) as naive UTC."""
    moment = now or datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo is not None else moment
