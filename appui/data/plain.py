"""A page's Markdown as plain words, for the places that show a snippet of it as text (a compact evidence card,
a report's preview line): `**Settings > Billing**` reads "Settings > Billing", not its marks."""

from __future__ import annotations

import re

RULES = (
    (re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)"), r"\1"),  # a link or an image: its text
    (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), r"\1"),  # **bold**
    (re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)"), r"\1"),  # __bold__
    (re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # *italic*
    (re.compile(r"(?<!\w)_(?=\S)([^_\n]+?)(?<=\S)_(?!\w)"), r"\1"),  # _italic_ (not snake_case)
    (re.compile(r"`([^`\n]+)`"), r"\1"),  # `code`
    (re.compile(r"^\s{0,3}(?:#{1,6}|>)\s+", re.MULTILINE), ""),  # a heading's or a quote's marks
)


def plain_markdown(text: str) -> str:
    """`text` without Markdown's emphasis, code, link and heading marks (the words stay as they are)."""
    for pattern, replacement in RULES:
        text = pattern.sub(replacement, text)
    return text
