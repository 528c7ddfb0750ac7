"""Reading the docs' prose: a table row's cell, the text between two phrases, the values in backticks, statuses
listed in words. For tests/test_docs_vocabulary.py and tests/test_docs_quoted.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

ROOT = Path(__file__).resolve().parents[1]
WORDS = {"timed out": "timeout"}  # a status written as words in prose


def page(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def row(text: str, key: str, nth: int = 0) -> str:
    """The second cell of the `nth` table row whose first cell is `key` (in backticks)."""
    rows = [line for line in text.splitlines() if line.startswith(f"| `{key}` |")]
    assert len(rows) > nth, f"no table row {nth} for `{key}`"
    return rows[nth].split(" | ", 2)[1]


def between(text: str, start: str, end: str) -> str:
    """The text after `start` up to the next `end`."""
    assert start in text, f"the docs no longer say {start!r}"
    after = text[text.index(start) + len(start):]
    assert end in after, f"nothing ends {start!r} with {end!r}"
    return after[:after.index(end)]


def backticked(text: str) -> set[str]:
    """The values in backticks, outside parentheses (which explain a value, and may name other things)."""
    while re.search(r"\([^()]*\)", text):
        text = re.sub(r"\([^()]*\)", "", text)
    return set(re.findall(r"`([^`]+)`", text))


def worded(text: str) -> set[str]:
    """Statuses listed in words: 'empty, failed, timed out, disabled or unavailable'."""
    items = re.split(r",\s*|\s+or\s+|\s+and\s+", text.strip())
    return {WORDS.get(item, item) for item in (re.sub(r"^(was|is)\s+", "", i.strip()) for i in items) if item}


def values(literal: Any) -> set[str]:
    """The values of a Literal type."""
    return set(get_args(literal))


def masked(text: str) -> str:
    """`text` with its numbers as `#` and its whitespace collapsed: its wording, figures aside."""
    return " ".join(re.sub(r"\d+(?:\.\d+)?", "#", text).split())
