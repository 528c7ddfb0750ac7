"""Times the trace commands take: a span back from now (`90m`, `12h`, `30d`, `2w`) or an ISO date or time (UTC
unless it says otherwise), both returned as naive UTC, as `created_at` is stored. Bad text is a ValueError
naming the flag and what it takes."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

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
