"""`eval run --unanswerable FILE`: a file of questions the knowledge base should not answer, added to a run.

The file is JSON lines, one question a row: `{"_id": "...", "text": "..."}` (`_id` optional: `<file stem>-<line>`
by default; a `relevant` field, if any, must be empty). Its questions join the dataset as unanswerable ones
(eval.datasets.Query.answerable is False), tagged with the file's stem (`Query.origin`), so a run reports their
relevance grades per file beside the dataset's own (eval.abstention). Nothing is scored by rank for them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from .datasets import Dataset, DatasetError, Query, unanswerable_notes

EXAMPLE = '{"_id": "u1", "text": "what is the capital of France"}'


def load_unanswerable(path: str | Path) -> tuple[Query, ...]:
    """The questions of an unanswerable-questions file; DatasetError says what is wrong with it and where."""
    file = Path(path)
    if not file.is_file():
        raise DatasetError(f"no unanswerable-questions file {file}; pass --unanswerable with a JSONL file of "
                           f"{EXAMPLE} rows")
    questions, seen = [], set()
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{file}:{number}: bad JSON ({exc.msg}); each line is one question, e.g. "
                               f"{EXAMPLE}") from None
        text = str(row.get("text") or "").strip() if isinstance(row, dict) else ""
        if not text:
            raise DatasetError(f"{file}:{number}: a question needs a non-empty \"text\", e.g. {EXAMPLE}")
        if row.get("relevant"):
            raise DatasetError(f"{file}:{number}: names relevant pages ({row['relevant']!r}), but this file is for "
                               "questions the knowledge base should not answer; put answerable questions in the "
                               "--queries file")
        question_id = str(row.get("_id") or f"{file.stem}-{number}")
        if question_id in seen:
            raise DatasetError(f"{file}:{number}: question id {question_id!r} appears twice; ids must be unique")
        seen.add(question_id)
        questions.append(Query(question_id, text, {}, origin=file.stem))
    if not questions:
        raise DatasetError(f"{file} holds no questions; write one JSON object a line, e.g. {EXAMPLE}")
    return tuple(questions)


def with_unanswerable(dataset: Dataset, path: str | Path | None) -> Dataset:
    """`dataset` with the questions of `path` added as unanswerable ones (unchanged when `path` is None); an id
    the dataset already uses is refused, since a run pairs and resumes its questions by id."""
    if path is None:
        return dataset
    added = load_unanswerable(path)
    taken = {q.id for q in dataset.queries} & {q.id for q in added}
    if taken:
        raise DatasetError(f"{path}: question id(s) {', '.join(sorted(taken)[:5])} already name questions of "
                           f"{dataset.name}; give the file's questions other ids")
    queries = (*dataset.queries, *added)
    notes = {**dataset.notes, "unanswerable_file": str(Path(path).resolve()), "unanswerable_from_file": len(added),
             **unanswerable_notes(queries)}
    return replace(dataset, queries=queries, notes=notes)
