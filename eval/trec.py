"""TREC run and qrels files, the field's exchange format (trec_eval, ranx, Pyserini, ir_measures read them).

- A run file has one line per retrieved document: `qid Q0 docid rank score tag`, whitespace-separated.
  Reading it orders each query's documents as trec_eval does: score descending, ties broken by docid
  descending (the rank column is ignored, as trec_eval ignores it), so a run scores here as trec_eval scores it.
- A qrels file has one line per judgement: `qid iteration docid grade` (BEIR's `query-id corpus-id score`
  TSV with its header is read too). A grade of 0 or below is a judgement of "not relevant".
- Writing our run keeps our order for every reader: a score that is not strictly below the one written before
  it (a tie, or a score a trace did not keep) is written `STEP` below that one; the real ties stay measured in
  the run's own figures (eval.ties).
Bad lines are refused with the file, the line number and what a line must hold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

STEP = 1e-6  # below the 6 decimals scores are stored with
TAG = re.compile(r"[^A-Za-z0-9_.:-]+")


class TrecFormatError(ValueError):
    """A TREC run or qrels file that cannot be read: which file, which line, and what was expected."""


@dataclass(frozen=True)
class TrecRun:
    """A run file read: per query, (docid, score) in trec_eval's order; its tag(s); lines read."""

    rankings: Mapping[str, tuple[tuple[str, float], ...]]
    tags: tuple[str, ...]
    lines: int

    def ranked(self, qid: str) -> list[str]:
        return [doc for doc, _ in self.rankings.get(qid, ())]

    def scores(self, qid: str) -> list[float]:
        return [score for _, score in self.rankings.get(qid, ())]


def read_run(path: str | Path) -> TrecRun:
    """The run file at `path`; TrecFormatError for a missing or empty file, a malformed line (six fields, an
    integer rank, a finite score) or a document listed twice for one query (trec_eval refuses those too)."""
    lines = _lines(path, "run")
    found: dict[str, dict[str, float]] = {}
    tags: dict[str, None] = {}
    for number, line in lines:
        fields = line.split()
        if len(fields) != 6:
            raise _bad(path, number, line, f"{len(fields)} fields", "six: qid Q0 docid rank score tag")
        qid, _, doc, rank, score, tag = fields
        if not _is_int(rank):
            raise _bad(path, number, line, f"rank {rank!r}", "an integer rank (4th field)")
        value = _number(score)
        if value is None:
            raise _bad(path, number, line, f"score {score!r}", "a finite number (5th field)")
        if doc in found.setdefault(qid, {}):
            raise TrecFormatError(f"{path}, line {number}: document {doc!r} is listed twice for query {qid!r}; "
                                  "a run lists each document once per query (trec_eval refuses it too)")
        found[qid][doc] = value
        tags.setdefault(tag, None)
    rankings = {qid: tuple(sorted(docs.items(), key=lambda item: (-item[1], _descending(item[0]))))
                for qid, docs in found.items()}
    return TrecRun(rankings, tuple(tags), len(lines))


def read_qrels(path: str | Path) -> dict[str, dict[str, float]]:
    """The qrels file at `path` (TREC's four fields, or BEIR's three with a header) as qid -> docid -> grade;
    TrecFormatError for a malformed line or one document graded twice with different grades for one query."""
    qrels: dict[str, dict[str, float]] = {}
    for position, (number, line) in enumerate(_lines(path, "qrels")):
        fields = line.split()
        if len(fields) not in (3, 4):
            raise _bad(path, number, line, f"{len(fields)} fields", "four: qid iteration docid grade")
        qid, doc, grade = fields[0], fields[-2], _number(fields[-1])
        if grade is None:
            if position == 0 and len(fields) == 3:  # a header (BEIR's `query-id corpus-id score`); TREC has none
                continue
            raise _bad(path, number, line, f"grade {fields[-1]!r}", "a number (last field)")
        known = qrels.setdefault(qid, {}).get(doc)
        if known is not None and known != grade:
            raise TrecFormatError(f"{path}, line {number}: document {doc!r} of query {qid!r} is graded {grade:g} "
                                  f"here and {known:g} before; give each pair one grade")
        qrels[qid][doc] = grade
    if not qrels:
        raise TrecFormatError(f"{path} holds no judgement; a qrels line reads `qid 0 docid grade`")
    return qrels


def run_lines(rankings: Iterable[tuple[str, Sequence[str], Sequence[float | None] | None]], tag: str) -> str:
    """A run file: for each (qid, ranked docids, their scores or None), one line per document in our order,
    with scores made strictly decreasing (see the module's note) so every reader keeps that order."""
    tag = TAG.sub("_", tag) or "run"
    out = []
    for qid, ranked, scores in rankings:
        written = None
        for rank, doc in enumerate(dict.fromkeys(ranked), start=1):
            score = _written_score(scores, rank - 1, written, len(ranked))
            out.append(f"{qid} Q0 {doc} {rank} {score:.6f} {tag}")
            written = score
    return "\n".join(out) + ("\n" if out else "")


def qrels_lines(judgements: Iterable[tuple[str, str, float]]) -> str:
    """A TREC qrels file from (qid, docid, grade) triples: `qid 0 docid grade`, grade 0 kept (a judgement)."""
    return "".join(f"{qid} 0 {doc} {int(grade) if float(grade).is_integer() else grade}\n"
                   for qid, doc, grade in judgements)


def _written_score(scores: Sequence[float | None] | None, i: int, before: float | None, n: int) -> float:
    score = scores[i] if scores is not None and i < len(scores) else None
    if score is None or not math.isfinite(float(score)):
        score = float(n - i) if before is None else before - STEP
    score = round(float(score), 6)
    return score if before is None or score < before - STEP / 2 else round(before - STEP, 6)


def _descending(doc: str) -> tuple[int, ...]:
    """A sort key that orders docids descending (trec_eval's tie-break) inside an ascending sort."""
    return tuple(-b for b in doc.encode("utf-8")) + (1,)


def _lines(path: str | Path, kind: str) -> list[tuple[int, str]]:
    file = Path(path)
    if not file.is_file():
        raise TrecFormatError(f"no {kind} file {file}; give the path of a TREC {kind} file")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TrecFormatError(f"{file} is not UTF-8 text ({exc.reason} at byte {exc.start}); a TREC {kind} file "
                              "is plain text") from None
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise TrecFormatError(f"{file} is empty; a TREC {kind} file has one line per "
                              + ("retrieved document: qid Q0 docid rank score tag" if kind == "run"
                                 else "judgement: qid 0 docid grade"))
    return lines


def _bad(path: str | Path, number: int, line: str, found: str, wanted: str) -> TrecFormatError:
    shown = line if len(line) <= 80 else line[:77] + "..."
    return TrecFormatError(f"{path}, line {number}: {found} in {shown!r}; a line needs {wanted}")


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
