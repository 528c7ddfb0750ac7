"""Text at the edge made valid Unicode: lone surrogates (which UTF-8, pyarrow and DuckDB reject) replaced."""

from __future__ import annotations

REPLACEMENT = "\ufffd"


def replace_surrogates(text: str) -> tuple[str, int]:
    """`text` with each lone surrogate replaced by U+FFFD (pairs joined), and how many were replaced."""
    try:
        text.encode("utf-8")
        return text, 0
    except UnicodeEncodeError:
        pass
    # UTF-16 with surrogatepass joins a high+low pair into one character; a lone half cannot decode
    cleaned = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return cleaned, cleaned.count(REPLACEMENT) - text.count(REPLACEMENT)
