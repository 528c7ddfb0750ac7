"""The labelled-set model every loader builds (eval.datasets, eval.known_item): a `Query` with graded relevant
sources, a `Dataset` of them over one knowledge base, and `DatasetError` for a set that cannot be loaded."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

ALL = "all"


class DatasetError(ValueError):
    """A dataset cannot be loaded as asked; the message says what is missing and what to pass."""


@dataclass(frozen=True)
class Query:
    """One labelled query: id, text, relevant sources with grades, and the categories of the answer if known.

    A query with no source graded above 0 is unanswerable (the one rule, for every loader).

    `categories_labelled` is True when the labels state the categories (possibly none); when False a
    run derives them from the relevant documents' categories.
    """

    id: str
    text: str
    qrels: Mapping[str, float]
    categories: tuple[str, ...] = ()
    categories_labelled: bool = False
    origin: str = ""  # the file of questions it came from when not the dataset's own (`--unanswerable FILE`)
    facets: Mapping[str, str] = field(default_factory=dict)  # the row's own fields (eval.query_fields)

    @property
    def answerable(self) -> bool:
        """Whether a page answers it: some relevant source graded above 0. An unanswerable question is looked
        up and its relevance grade scored (eval.abstention), never its ranking."""
        return any(grade > 0 for grade in self.qrels.values())


@dataclass(frozen=True)
class Dataset:
    """A query set over one knowledge base; `exclude_fields` and the files under `exclude_paths` are left
    out of every index built for it."""

    name: str
    kind: str
    path: str
    kb_path: str
    split: str
    queries: tuple[Query, ...]
    exclude_fields: tuple[str, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict, compare=False)
    exclude_paths: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "path": self.path, "kb_path": self.kb_path,
                "split": self.split, "queries": len(self.queries), "exclude_fields": list(self.exclude_fields),
                "exclude_paths": list(self.exclude_paths), **self.notes}

    def sample(self, n: int | None, *, seed: int = 0) -> Dataset:
        """A deterministic sample of `n` queries in their original order (all of them when n is None)."""
        if n is None or n >= len(self.queries):
            return self
        if n < 1:
            raise DatasetError(f"sample size must be at least 1, got {n}")
        keep = sorted(random.Random(seed).sample(range(len(self.queries)), n))
        return replace(self, queries=tuple(self.queries[i] for i in keep),
                       notes={**self.notes, "sampled": f"{n} of {len(self.queries)} (seed {seed})"})
