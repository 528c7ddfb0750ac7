"""Messages phrased for the page: the core's errors name CLI flags (`pass --kb …`); on a page, the same
advice names the widget to use instead."""

from __future__ import annotations

import re

# (CLI flag, what the page calls it); longest first so `--kb-root` is not read as `--kb`
PAGE_NAMES = (("--known-item FIELD", "a known-item field"), ("--kb-root", "the knowledge-base root"),
              ("--dataset", "the Dataset field"), ("--queries", "the Query file field"),
              ("--traces", "$LOOKUP_KNOWLEDGE_TRACES"), ("--split", "the Split field"),
              ("--strict", "strict mode"), ("--kb", "the Folder field in the sidebar (or Docs folder)"),
              ("--exclude", "the Excluded path prefixes field"))


def for_page(message: str) -> str:
    """`message` with 'pass --flag' advice reworded for the page and no bare CLI flags left."""
    text = re.sub(r"\bpass (--[a-z-]+)", r"set \1", message)
    for flag, name in PAGE_NAMES:
        text = re.sub(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", name, text)
    return text


def for_error(exc: Exception) -> str:
    """An exception's message for the page: one that words itself for a command line's flag (a knowledge base
    not found: `with_flag`) is asked for the `--kb` wording, which becomes the sidebar's Folder field."""
    with_flag = getattr(exc, "with_flag", None)
    return for_page(with_flag("--kb") if callable(with_flag) else str(exc))
