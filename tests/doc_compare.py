"""Compare an example in the docs with freshly generated output, tolerating what varies between machines.

Numbers with a decimal point may differ by `TOLERANCE` (BLAS builds and numpy, scipy or scikit-learn
versions move the last digits of a score); integers and words must be equal; UUIDs (invocation ids) match
any UUID; whitespace is ignored (a number printed with fewer digits may move a line break). So 1.313 against
1.565, or a hit reason worded differently, is a difference; 0.679205 against 0.679211 is not. A fenced JSON
block is compared as the value it holds: the order of an object's keys does not matter (a library may emit
a schema's keywords in another order), its keys, list lengths, numbers and strings (numbers in them too) do.
"""

from __future__ import annotations

import json
import re
from typing import Any

TOLERANCE = 0.02
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
NUMBER = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
TOKEN = re.compile(rf"(?P<uuid>{UUID})|(?P<number>{NUMBER})|(?P<other>\S)")


def tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, line number) of each token: a UUID, a number, or one other non-blank character."""
    found = []
    for match in TOKEN.finditer(text):
        kind = match.lastgroup or "other"
        found.append((kind, match.group(0), text.count("\n", 0, match.start()) + 1))
    return found


def same_token(expected: tuple[str, str, int], actual: tuple[str, str, int], tolerance: float = TOLERANCE) -> bool:
    kind, text, _ = expected
    if kind != actual[0]:
        return False
    if kind == "uuid":
        return True
    if kind == "number" and not (_is_int(text) and _is_int(actual[1])):
        return abs(float(text) - float(actual[1])) <= tolerance
    return text == actual[1]


def difference(expected: str, actual: str, tolerance: float = TOLERANCE) -> str | None:
    """None when `actual` matches `expected` within the tolerance; else where they first part, in words.
    Two fenced JSON blocks are compared as values (`value_difference`), anything else as text."""
    wanted, got = _json_block(expected), _json_block(actual)
    if wanted is not None and got is not None:
        return value_difference(wanted[0], got[0], "$", tolerance)
    return text_difference(expected, actual, tolerance)


def value_difference(expected: Any, actual: Any, path: str = "$", tolerance: float = TOLERANCE) -> str | None:
    """Where two JSON values first differ (keys in any order, numbers to the tolerance), or None."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        if set(expected) != set(actual):
            return (f"at {path}: the doc has keys {sorted(set(expected) - set(actual))} the real output lacks, "
                    f"and lacks {sorted(set(actual) - set(expected))}")
        return next(filter(None, (value_difference(expected[k], actual[k], f"{path}.{k}", tolerance)
                                  for k in expected)), None)
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"at {path}: the doc lists {len(expected)} items, the real output {len(actual)}"
        return next(filter(None, (value_difference(e, a, f"{path}[{i}]", tolerance)
                                  for i, (e, a) in enumerate(zip(expected, actual, strict=True)))), None)
    if isinstance(expected, str) and isinstance(actual, str):
        gap = text_difference(expected, actual, tolerance)
        return f"at {path}: {gap}" if gap else None
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers) and not isinstance(expected, bool) \
            and not isinstance(actual, bool):
        exact = isinstance(expected, int) and isinstance(actual, int)
        if expected == actual or (not exact and abs(expected - actual) <= tolerance):
            return None
    elif expected == actual and type(expected) is type(actual):
        return None
    return f"at {path}: the doc has {json.dumps(expected)}, the real output {json.dumps(actual)}"


def text_difference(expected: str, actual: str, tolerance: float = TOLERANCE) -> str | None:
    """Token by token (see the module's docstring)."""
    wanted, got = tokens(expected), tokens(actual)
    for position, (want, have) in enumerate(zip(wanted, got, strict=False)):
        if not same_token(want, have, tolerance):
            return (f"first difference at token {position}: the doc has {want[1]!r} (line {want[2]}: "
                    f"{_line(expected, want[2])!r}), the real output {have[1]!r} (line {have[2]}: "
                    f"{_line(actual, have[2])!r})")
    if len(wanted) != len(got):
        longer, name = (expected, "the doc") if len(wanted) > len(got) else (actual, "the real output")
        extra = (wanted if len(wanted) > len(got) else got)[min(len(wanted), len(got))]
        return f"{name} goes on after the other ends, at line {extra[2]}: {_line(longer, extra[2])!r}"
    return None


def _json_block(text: str) -> tuple[Any] | None:
    """The value of a fenced ```json block, in a 1-tuple (None when `text` is not one)."""
    match = re.fullmatch(r"\s*```json\n(.*)\n```\s*", text, re.S)
    if match is None:
        return None
    try:
        return (json.loads(match.group(1)),)
    except ValueError:
        return None


def _is_int(text: str) -> bool:
    return re.fullmatch(r"[-+]?\d+", text) is not None


def _line(text: str, number: int) -> str:
    lines = text.splitlines()
    return lines[number - 1][:160] if 0 < number <= len(lines) else ""
