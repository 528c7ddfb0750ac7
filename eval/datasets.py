"""Labelled query sets: BEIR folders, Markdown knowledge bases with a JSONL query file, and known-item sets.

A dataset names the knowledge base to index (`kb_path`, plus front-matter fields and path prefixes to
leave out of every index; its paths are absolute, so a run that records them is readable from any folder)
and its queries with graded relevant sources. Sources are what the core calls
source identity: the BEIR `_id`, or a Markdown file's path relative to the knowledge-base root.

A query file row may state the answer's category (`category_of_first`, `category` or `categories`; a
string may list several, comma-separated; empty means "no category"); otherwise a run takes the
relevant documents' categories from the index. Relevant paths missing from a Markdown knowledge base
(e.g. under an excluded prefix) stay in the labels, so they count as misses, and are counted in the notes.
A query with no source graded above 0 (an empty `relevant`, an all-zero mapping, all-zero BEIR judgements) is
unanswerable: a run grades it (eval.abstention) and never ranks it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from retrieval import KnowledgeBaseError
from retrieval.kb import exclude_prefixes, markdown_sources
from retrieval.text import normalize_label

from .dataset_model import ALL, Dataset, DatasetError, Query
from .known_item import load_known_item
from .query_fields import row_facets

__all__ = ["ALL", "Dataset", "DatasetError", "Query", "load_dataset", "load_query_set"]

KINDS = ("beir", "markdown", "known_item")
CATEGORY_KEYS = ("category_of_first", "category", "categories")
MISSING_EXAMPLES = 5


def load_dataset(path: str | Path, *, split: str | None = None, known_item_field: str | None = None,
                 kb_root: str | Path | None = None, queries_file: str | Path | None = None,
                 exclude_paths: Iterable[str] | str = (), qrels_file: str | Path | None = None) -> Dataset:
    """Load a BEIR folder, a Markdown KB with `queries.jsonl`, or (with `known_item_field`) a known-item set.

    `exclude_paths` are path prefixes relative to the knowledge-base root (BEIR: `_id` prefixes) left out
    of the index; a bad one raises DatasetError. `qrels_file` (TREC qrels, eval.trec) gives the questions their
    labels instead of the query file's `relevant` or the BEIR split's qrels; the dataset's name says so.
    """
    root = Path(path)
    prefixes = _prefixes(exclude_paths)
    labels = _qrels(qrels_file)
    if not root.exists():
        raise DatasetError(f"dataset not found: {root}; pass --dataset with a BEIR folder (corpus.jsonl, "
                           f"queries.jsonl, qrels/) or a folder with kb/ and queries.jsonl")
    root = root.resolve()  # a run records where its dataset is: readable from any folder later
    if known_item_field:
        if labels is not None:
            raise DatasetError("a known-item set labels itself (each page answers its field); leave out --qrels")
        return load_known_item(root, known_item_field, _kb_root(root, kb_root), split, prefixes)
    if root.is_dir() and (root / "corpus.jsonl").is_file() and (root / "qrels").is_dir() and not queries_file:
        return _named(replace(_load_beir(root, split, labels), exclude_paths=prefixes), qrels_file)
    queries = Path(queries_file) if queries_file else root / "queries.jsonl"
    if queries_file and not queries.is_absolute() and not queries.exists():
        queries = root / queries
    if not queries.is_file():
        raise DatasetError(f"no query file {queries}; a Markdown dataset needs queries.jsonl with "
                           f'{{"_id", "text", "relevant": [sources]}} rows (or pass --known-item FIELD)')
    return _named(_load_markdown(root, queries.resolve(), _kb_root(root, kb_root), split, prefixes, labels),
                  qrels_file)


def load_query_set(kb: str | Path, queries_file: str | Path, *, split: str | None = None,
                   exclude_paths: Iterable[str] | str = (), qrels_file: str | Path | None = None) -> Dataset:
    """A labelled query file run against a Markdown folder in place (`--kb DIR --queries FILE`).

    Relevant paths in the file are relative to `kb`; nothing is copied. Raises DatasetError when the
    folder or the file is missing.
    """
    root, queries = Path(kb), Path(queries_file)
    prefixes = _prefixes(exclude_paths)
    if not root.is_dir():
        raise DatasetError(f"knowledge base not found: {root}; pass --kb with a folder of Markdown files")
    if not queries.is_file():
        raise DatasetError(f"no query file {queries}; pass --queries with a JSONL file of "
                           f'{{"_id", "text", "relevant": [paths relative to --kb]}} rows')
    root, queries = root.resolve(), queries.resolve()  # recorded by a run: readable from any folder later
    dataset = _load_markdown(root, queries, root, split, prefixes, _qrels(qrels_file))
    return _named(replace(dataset, name=f"{root.name}:{queries.stem}"), qrels_file)


def _qrels(qrels_file: str | Path | None) -> dict[str, dict[str, float]] | None:
    from .trec import read_qrels  # TrecFormatError is a ValueError: the CLI prints it and exits 2

    return read_qrels(qrels_file) if qrels_file else None


def _named(dataset: Dataset, qrels_file: str | Path | None) -> Dataset:
    """A dataset labelled by a qrels file is another labelled set: its name carries the file's (runs of it are
    compared with each other, not with runs of the query file's own labels)."""
    if not qrels_file:
        return dataset
    return replace(dataset, name=f"{dataset.name}+{Path(qrels_file).name}",
                   notes={**dataset.notes, "qrels_file": str(Path(qrels_file).resolve())})


def _prefixes(exclude_paths: Iterable[str] | str) -> tuple[str, ...]:
    try:
        return exclude_prefixes(exclude_paths)
    except KnowledgeBaseError as exc:
        raise DatasetError(str(exc)) from None


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


def _load_beir(root: Path, split: str | None, labels: Mapping[str, Mapping[str, float]] | None = None) -> Dataset:
    """A BEIR folder's questions with the split's qrels, or with `labels` (a qrels file's) instead."""
    rows = {str(r["_id"]): r for r in _read_jsonl(root / "queries.jsonl") if str(r.get("text") or "").strip()}
    if labels is not None:
        qrels = {k: dict(v) for k, v in labels.items()}
        split = split or ALL
    else:
        split = _beir_split(root, split)
        qrels = {}
        for line in (root / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")  # a header line (BEIR's `query-id corpus-id score`) has no number to read
            if len(parts) >= 3 and parts[2].strip().lstrip("-").replace(".", "", 1).isdigit():
                qrels.setdefault(parts[0].strip(), {})[parts[1].strip()] = float(parts[2])
    queries = tuple(Query(qid, str(rows[qid]["text"]), rel, facets=row_facets(rows[qid]))
                    for qid, rel in qrels.items() if qid in rows)
    return Dataset(root.name, "beir", str(root), str(root), split, queries,
                   notes={"unlabelled_or_missing_queries": len(qrels) - len(queries), **unanswerable_notes(queries)})


def _beir_split(root: Path, split: str | None) -> str:
    """The qrels split to read: the one asked for, else `test`, else the only one."""
    available = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
    if not available:
        raise DatasetError(f"no qrels/*.tsv in {root}; a BEIR folder needs qrels/<split>.tsv (or pass --qrels FILE)")
    if split is None:
        split = "test" if "test" in available else available[0] if len(available) == 1 else None
        if split is None:
            raise DatasetError(f"{root} has several splits; pass --split with one of {', '.join(available)}")
    if split not in available:
        raise DatasetError(f"split {split!r} not in {root / 'qrels'}; available: {', '.join(available)}")
    return split


def _load_markdown(root: Path, queries_path: Path, kb: Path, split: str | None, prefixes: tuple[str, ...],
                   labels: Mapping[str, Mapping[str, float]] | None = None) -> Dataset:
    rows = _read_jsonl(queries_path)
    if split not in (None, ALL):
        if not any("split" in r for r in rows):
            raise DatasetError(f"{queries_path} has no 'split' field; pass --split all or leave it out")
        rows = [r for r in rows if r.get("split") == split]
    prefix = kb.relative_to(root).as_posix() + "/" if kb != root else ""
    queries = []
    for row in rows:
        relevant = (row.get("relevant", row.get("relevant_paths")) if labels is None
                    else labels.get(str(row.get("_id"))))  # a question the qrels do not judge is unlabelled
        if not str(row.get("text") or "").strip() or relevant is None:
            continue  # no text, or no labels at all: unlabelled (an empty `relevant` is an unanswerable question)
        grades = relevant if isinstance(relevant, Mapping) else {s: 1.0 for s in relevant}
        labelled = any(row.get(key) is not None for key in CATEGORY_KEYS)
        queries.append(Query(str(row["_id"]), str(row["text"]),
                             {_strip(str(s), prefix): float(g) for s, g in grades.items()},
                             row_categories(row), labelled, facets=row_facets(row)))
    if not any(q.answerable for q in queries):
        raise DatasetError(f"no answerable labelled queries in {queries_path} (split {split or ALL}): a run needs "
                           'rows with {"_id", "text", "relevant": [sources]} naming at least one relevant page')
    try:
        sources = markdown_sources(kb, exclude_paths=prefixes)
    except KnowledgeBaseError as exc:
        raise DatasetError(str(exc)) from None
    kept = {q.id for q in queries}
    skipped = [str(r.get("_id")) for r in rows if str(r.get("_id")) not in kept]
    notes = {"queries_file": str(queries_path), "unlabelled_skipped": len(rows) - len(queries),
             "unlabelled_examples": skipped[:MISSING_EXAMPLES], **unanswerable_notes(queries),
             **missing_relevant(queries, sources)}
    return Dataset(root.name, "markdown", str(root), str(kb), split or ALL, tuple(queries), notes=notes,
                   exclude_paths=prefixes)


def row_categories(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The categories a query-file row states (first of CATEGORY_KEYS present), normalised like domains."""
    value = next((row[key] for key in CATEGORY_KEYS if row.get(key) is not None), None)
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else []
    labels = (normalize_label(str(item)) for item in items if item is not None)
    return tuple(dict.fromkeys(label for label in labels if label))


def unanswerable_notes(queries: Sequence[Query]) -> dict[str, Any]:
    """How many questions name no relevant page (scored for their grade, not their ranking), with a few ids."""
    ids = [q.id for q in queries if not q.answerable]
    return {"unanswerable": len(ids), "unanswerable_examples": ids[:MISSING_EXAMPLES]}


def missing_relevant(queries: Sequence[Query], sources: Iterable[str]) -> dict[str, Any]:
    """Relevant sources the knowledge base does not hold: how many, a few examples, and queries left with none."""
    held = set(sources)
    missing = [s for q in queries for s, g in q.qrels.items() if g > 0 and s not in held]
    orphans = sum(1 for q in queries if q.answerable and not any(g > 0 and s in held for s, g in q.qrels.items()))
    return {"relevant_not_in_kb": len(missing), "relevant_not_in_kb_examples": sorted(set(missing))[:MISSING_EXAMPLES],
            "queries_without_relevant_in_kb": orphans}


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


def skipped_note(info: Mapping[str, Any]) -> str | None:
    """The questions a run does not score, in words (a row with no text or no `relevant` field at all: nothing
    says whether a page answers it), or None when every question counts."""
    count = info.get("unlabelled_skipped") or info.get("unlabelled_or_missing_queries") or 0
    if not count:
        return None
    examples = info.get("unlabelled_examples") or []
    named = f" ({', '.join(examples)}{', …' if count > len(examples) else ''})" if examples else ""
    return (f"{count} question(s) of the file are not scored{named}: they have no text or no `relevant` field "
            '(write "relevant": [] for a question the knowledge base should not answer)')
