"""A query-file row's own fields (`style`, `trap`, `kind`…): the facets a comparison breaks its metrics down by.

A facet is a scalar field of a row that the loaders do not already read (id, text, labels, split, the
answer's categories), and, for BEIR, a scalar value of the row's `metadata` object. Values become text
(`true`/`false` for booleans); lists, objects and nulls are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# what eval.datasets reads from a row itself (CATEGORY_KEYS: the `category` facet is the true category)
INTERPRETED = frozenset({"_id", "text", "relevant", "relevant_paths", "split", "metadata", "category_of_first",
                         "category", "categories"})


def scalar_text(value: Any) -> str | None:
    """A field's value as facet text, or None for a list, an object or a null."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def row_facets(row: Mapping[str, Any]) -> dict[str, str]:
    """The facets of one query-file row: its own scalar fields, then its `metadata` object's (a field of the
    row itself wins over a metadata value of the same name)."""
    metadata = row.get("metadata")
    found = {}
    for source in (row, metadata if isinstance(metadata, Mapping) else {}):
        for name, value in source.items():
            text = scalar_text(value)
            if text is not None and str(name) not in INTERPRETED and str(name) not in found:
                found[str(name)] = text
    return found
