"""Known-item sets: each page's front-matter field is a question whose answer is that page (`--known-item FIELD`);
the field is left out of every index built for the set, so the page is found by its content, not by the question."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from retrieval import KnowledgeBaseError, load_knowledge_base
from retrieval.kb import FrontMatterError, split_front_matter

from .dataset_model import ALL, Dataset, DatasetError, Query


def load_known_item(root: Path, field_name: str, kb: Path, split: str | None,
                     prefixes: tuple[str, ...] = ()) -> Dataset:
    """Each page's `field_name` value is a query whose answer is that page; the field is never indexed."""
    if split not in (None, ALL):
        raise DatasetError(f"a known-item set has one split; pass --split all or leave it out (got {split!r})")
    try:
        base = load_knowledge_base(kb, exclude_paths=prefixes)
    except KnowledgeBaseError as exc:
        raise DatasetError(str(exc)) from None
    by_text: dict[str, list[Any]] = {}
    for entry in base.entries:
        value = front_matter_value(kb / entry.source, field_name)
        if value:
            by_text.setdefault(value, []).append(entry)
    # pages sharing one value become one query with every such page relevant
    queries = tuple(Query(entries[0].source, text, {e.source: 1.0 for e in entries},
                          tuple(dict.fromkeys(d for e in entries for d in e.domains)), True)
                    for text, entries in by_text.items())
    if not queries:
        raise DatasetError(f"no page under {kb} has a front-matter field {field_name!r}")
    return Dataset(f"{root.name}:{field_name}", "known_item", str(root), str(kb), ALL, queries, (field_name,),
                   notes={"known_item_field": field_name, "pages": len(base.entries)}, exclude_paths=prefixes)


def front_matter_value(path: Path, field_name: str) -> str:
    try:
        meta, _, _ = split_front_matter(path.read_text(encoding="utf-8", errors="replace"), path.name)
    except (FrontMatterError, OSError):
        return ""
    value = meta.get(field_name)
    if isinstance(value, (list, tuple)):
        value = " ".join(str(v) for v in value if v is not None)
    return " ".join(str(value).split()) if value is not None else ""
