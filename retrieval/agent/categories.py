"""The category a caller asks for, checked against the knowledge base's domains: the MCP tool's input schema
lists them as an enum, and the command line refuses the same values with the same words.

A category the base does not have would filter every page out and answer nothing, which reads as "no answer"
rather than "wrong category"; so it is refused, and the refusal is recorded as a failed call (a trace row with
status `error`), as the library records the calls it refuses itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from retrieval.config import LookupConfig
from retrieval.lookup.invocation import Recorder, ToolInvocation
from retrieval.lookup.orchestrator import TOOL_NAME
from retrieval.text.analysis import normalize_label


def check_category(category: Any, domains: Iterable[str], arguments: dict[str, Any], config: LookupConfig,
                   recorder: Recorder | None) -> None:
    """Raise ValueError naming the known categories when `category` is not one of `domains` (compared as labels
    are normalised), after recording the refused call (`arguments`: the call's query, category and top-k) with
    `recorder`. No domains, no category, or a value the library refuses itself (not a string, blank): no check."""
    known = frozenset(domains)
    if not known or not isinstance(category, str) or not normalize_label(category):
        return  # no enum to enforce, or a value the library itself refuses
    if normalize_label(category) in known:
        return
    message = f"category must be one of {', '.join(sorted(known))} or omitted, got {category!r}"
    if recorder is not None:
        recorder(ToolInvocation(TOOL_NAME, str(arguments["query"]), arguments, "error", 0.0, config.to_dict(), {},
                                error=f"ValueError: {message}"))
    raise ValueError(message)
