"""Compare an example in the docs with freshly generated output, tolerating what varies between machines.

Numbers with a decimal point may differ by `TOLERANCE` (BLAS builds and numpy, scipy or scikit-learn
versions move the last digits of a score); integers and words must be equal; UUIDs (invocation ids) match
any UUID; whitespace is ignored (a number printed with fewer digits may move a line break). So 1.313 against
1.565, or a hit reason worded differently, is a difference; 0.679205 against 0.679211 is not.
"""

from __future__ import annotations

import re

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
    """None when `actual` matches `expected` within the tolerance; else where they first part, in words."""
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


def _is_int(text: str) -> bool:
    return re.fullmatch(r"[-+]?\d+", text) is not None


def _line(text: str, number: int) -> str:
    lines = text.splitlines()
    return lines[number - 1][:160] if 0 < number <= len(lines) else ""
