"""Labelled query sets: BEIR folders, Markdown knowledge bases with a JSONL query file, and known-item sets.

A dataset names the knowledge base to index (`kb_path`, plus front-matter fields to leave out of every
index) and its queries with graded relevant sources. Sources are what the core calls source identity:
the BEIR `_id`, or a Markdown file's path relative to the knowledge-base root.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from retrieval import KnowledgeBaseError, load_knowledge_base
from retrieval.markdown import FrontMatterError, split_front_matter

ALL = "all"
KINDS = ("beir", "markdown", "known_item")


class DatasetError(ValueError):
    """A dataset cannot be loaded as asked; the message says what is missing and what to pass."""


@dataclass(frozen=True)
class Query:
    """One labelled query: id, text, relevant sources with grades, and the categories of the answer if known."""

    id: str
    text: str
    qrels: Mapping[str, float]
    categories: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dataset:
    """A query set over one knowledge base; `exclude_fields` are dropped from every index built for it."""

    name: str
    kind: str
    path: str
    kb_path: str
    split: str
    queries: tuple[Query, ...]
    exclude_fields: tuple[str, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict, compare=False)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "path": self.path, "kb_path": self.kb_path,
                "split": self.split, "queries": len(self.queries), "exclude_fields": list(self.exclude_fields),
                **self.notes}

    def sample(self, n: int | None, *, seed: int = 0) -> Dataset:
        """A deterministic sample of `n` queries in their original order (all of them when n is None)."""
        if n is None or n >= len(self.queries):
            return self
        if n < 1:
            raise DatasetError(f"sample size must be at least 1, got {n}")
        keep = sorted(random.Random(seed).sample(range(len(self.queries)), n))
        return replace(self, queries=tuple(self.queries[i] for i in keep),
                       notes={**self.notes, "sampled": f"{n} of {len(self.queries)} (seed {seed})"})


def load_dataset(path: str | Path, *, split: str | None = None, known_item_field: str | None = None,
                 kb_root: str | Path | None = None, queries_file: str | Path | None = None) -> Dataset:
    """Load a BEIR folder, a Markdown KB with `queries.jsonl`, or (with `known_item_field`) a known-item set."""
    root = Path(path)
    if not root.exists():
        raise DatasetError(f"dataset not found: {root}; pass --dataset with a BEIR folder (corpus.jsonl, "
                           f"queries.jsonl, qrels/) or a folder with kb/ and queries.jsonl")
    if known_item_field:
        return _load_known_item(root, known_item_field, _kb_root(root, kb_root), split)
    if root.is_dir() and (root / "corpus.jsonl").is_file() and (root / "qrels").is_dir() and not queries_file:
        return _load_beir(root, split)
    queries = Path(queries_file) if queries_file else root / "queries.jsonl"
    if queries_file and not queries.is_absolute() and not queries.exists():
        queries = root / queries
    if not queries.is_file():
        raise DatasetError(f"no query file {queries}; a Markdown dataset needs queries.jsonl with "
                           f'{{"_id", "text", "relevant": [sources]}} rows (or pass --known-item FIELD)')
    return _load_markdown(root, queries, _kb_root(root, kb_root), split)


def _kb_root(root: Path, kb_root: str | Path | None) -> Path:
    """The Markdown root: as given (relative to the dataset), else kb/, else Hugo's content/en, else the folder."""
    if kb_root is not None:
        candidate = Path(kb_root) if Path(kb_root).is_absolute() else root / kb_root
        if not candidate.is_dir():
            raise DatasetError(f"knowledge-base root not found: {candidate}; pass --kb-root relative to the dataset")
        return candidate
    for guess in ("kb", "content/en", "content"):
        if (root / guess).is_dir():
            return root / guess
    return root


def _load_beir(root: Path, split: str | None) -> Dataset:
    available = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
    if not available:
        raise DatasetError(f"no qrels/*.tsv in {root}; a BEIR folder needs qrels/<split>.tsv")
    if split is None:
        split = "test" if "test" in available else available[0] if len(available) == 1 else None
        if split is None:
            raise DatasetError(f"{root} has several splits; pass --split with one of {', '.join(available)}")
    if split not in available:
        raise DatasetError(f"split {split!r} not in {root / 'qrels'}; available: {', '.join(available)}")
    texts = {str(r["_id"]): str(r.get("text") or "") for r in _read_jsonl(root / "queries.jsonl")}
    qrels: dict[str, dict[str, float]] = {}
    for line in (root / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) >= 3 and parts[2].strip():
            qrels.setdefault(parts[0].strip(), {})[parts[1].strip()] = float(parts[2])
    queries = tuple(Query(qid, texts[qid], rel) for qid, rel in qrels.items() if texts.get(qid, "").strip())
    return Dataset(root.name, "beir", str(root), str(root), split, queries,
                   notes={"unlabelled_or_missing_queries": len(qrels) - len(queries)})


def _load_markdown(root: Path, queries_path: Path, kb: Path, split: str | None) -> Dataset:
    rows = _read_jsonl(queries_path)
    if split not in (None, ALL):
        if not any("split" in r for r in rows):
            raise DatasetError(f"{queries_path} has no 'split' field; pass --split all or leave it out")
        rows = [r for r in rows if r.get("split") == split]
    prefix = kb.relative_to(root).as_posix() + "/" if kb != root else ""
    queries = []
    for row in rows:
        relevant = row.get("relevant", row.get("relevant_paths"))
        if not str(row.get("text") or "").strip() or not relevant:
            continue
        grades = relevant if isinstance(relevant, Mapping) else {s: 1.0 for s in relevant}
        queries.append(Query(str(row["_id"]), str(row["text"]),
                             {_strip(str(s), prefix): float(g) for s, g in grades.items()}))
    if not queries:
        raise DatasetError(f"no labelled queries in {queries_path} (split {split or ALL})")
    return Dataset(root.name, "markdown", str(root), str(kb), split or ALL, tuple(queries),
                   notes={"queries_file": str(queries_path), "unlabelled_skipped": len(rows) - len(queries)})


def _load_known_item(root: Path, field_name: str, kb: Path, split: str | None) -> Dataset:
    """Each page's `field_name` value is a query whose answer is that page; the field is never indexed."""
    if split not in (None, ALL):
        raise DatasetError(f"a known-item set has one split; pass --split all or leave it out (got {split!r})")
    try:
        base = load_knowledge_base(kb)
    except KnowledgeBaseError as exc:
        raise DatasetError(str(exc)) from None
    by_text: dict[str, list[Any]] = {}
    for entry in base.entries:
        value = _front_matter_value(kb / entry.source, field_name)
        if value:
            by_text.setdefault(value, []).append(entry)
    # pages sharing one value become one query with every such page relevant
    queries = tuple(Query(entries[0].source, text, {e.source: 1.0 for e in entries},
                          tuple(dict.fromkeys(d for e in entries for d in e.domains)))
                    for text, entries in by_text.items())
    if not queries:
        raise DatasetError(f"no page under {kb} has a front-matter field {field_name!r}")
    return Dataset(f"{root.name}:{field_name}", "known_item", str(root), str(kb), ALL, queries, (field_name,),
                   notes={"known_item_field": field_name, "pages": len(base.entries)})


def _front_matter_value(path: Path, field_name: str) -> str:
    try:
        meta, _, _ = split_front_matter(path.read_text(encoding="utf-8", errors="replace"), path.name)
    except (FrontMatterError, OSError):
        return ""
    value = meta.get(field_name)
    if isinstance(value, (list, tuple)):
        value = " ".join(str(v) for v in value if v is not None)
    return " ".join(str(value).split()) if value is not None else ""


def _strip(source: str, prefix: str) -> str:
    return source[len(prefix):] if prefix and source.startswith(prefix) else source


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DatasetError(f"missing file {path}")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: bad JSON ({exc.msg})") from None
    return rows
