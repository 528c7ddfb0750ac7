"""Relevance judgements analysts make in the app, kept in the trace file, and the labelled set they form.

Table `judgement` (made by the trace file's migrations, retrieval/traces/schema.py): one row per mark
(query, source, grade, who, when, the lookup it was made on); the latest mark of a (query, source) pair is
the one that counts. Exported as `queries.jsonl` rows with
`relevant` (the docs-folder query-file format) or as qrels TSV (BEIR's `query-id corpus-id score`), and
evaluated with `python -m eval run --kb DIR --judgements TRACES_FILE`.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from retrieval import TraceStore

from .datasets import Dataset, DatasetError, load_query_set

GRADES = {0: "not relevant", 1: "relevant", 2: "highly relevant"}  # ordinal: agreement uses that order


def record(store: TraceStore, query: str, source: str, grade: int, *, who: str,
           invocation_id: str | None = None, kb_fingerprint: str | None = None) -> None:
    """Keep one mark by the annotator `who` (a signed-in email or a name the analyst gives); ValueError for a blank
    query, source or annotator, or a grade outside GRADES."""
    if not str(query).strip() or not str(source).strip():
        raise ValueError(f"a judgement needs a query and a source, got {query!r} and {source!r}")
    if grade not in GRADES:
        raise ValueError(f"grade must be one of {sorted(GRADES)} ({', '.join(GRADES.values())}), got {grade!r}")
    if not isinstance(who, str) or not who.strip():
        raise ValueError(f"a judgement needs the annotator who made it (who=NAME or an email), got {who!r}")
    with store.connect() as con:
        con.execute("INSERT INTO judgement VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [query.strip(), source, int(grade), who.strip(), datetime.now(timezone.utc).replace(tzinfo=None),
                     invocation_id, kb_fingerprint])


def clear(store: TraceStore, query: str, source: str, *, who: str | None = None) -> int:
    """Take every mark of (`query`, `source`) out of `judgement` (only the annotator `who`'s, when given), so the
    pair counts as unjudged again (by them), and keep them in `judgement_cleared` with the time they were cleared
    (one transaction); how many moved.

    ValueError for a blank query or source (it would name no pair) or a blank `who`."""
    if not str(query).strip() or not str(source).strip():
        raise ValueError(f"clearing a judgement needs a query and a source, got {query!r} and {source!r}")
    if who is not None and not str(who).strip():
        raise ValueError("clearing one annotator's marks needs their name (who=NAME), got a blank one")
    where = "query = ? AND source = ?" + ("" if who is None else " AND who = ?")
    pair = [query.strip(), source, *([] if who is None else [str(who).strip()])]
    with store.connect() as con:  # a failure closes the connection, which rolls the transaction back
        con.execute("BEGIN TRANSACTION")
        moved = con.execute(f"INSERT INTO judgement_cleared SELECT *, ? FROM judgement WHERE {where}",
                            [datetime.now(timezone.utc).replace(tzinfo=None), *pair]).fetchone()[0]
        con.execute(f"DELETE FROM judgement WHERE {where}", pair)
        con.execute("COMMIT")
    return int(moved)


def latest(store: TraceStore) -> pd.DataFrame:
    """The mark that counts per (query, source): the latest one; columns query, source, grade, who, created_at."""
    return store.query("SELECT query, source, grade, who, created_at FROM judgement "
                       "QUALIFY row_number() OVER (PARTITION BY query, source ORDER BY created_at DESC) = 1 "
                       "ORDER BY query, source")


def query_id(query: str) -> str:
    """A stable id for a judged query (the same text always gets the same id)."""
    return "j-" + hashlib.sha1(query.encode()).hexdigest()[:10]


def to_queries_jsonl(frame: pd.DataFrame) -> str:
    """One `{"_id", "text", "relevant"}` row per query with at least one relevant block."""
    rows = []
    for query, group in frame.groupby("query", sort=True):
        relevant = sorted(group.loc[group["grade"] > 0, "source"])
        if relevant:
            rows.append(json.dumps({"_id": query_id(str(query)), "text": query, "relevant": relevant}))
    return "".join(r + "\n" for r in rows)


def to_qrels_tsv(frame: pd.DataFrame) -> str:
    """BEIR qrels: a `query-id corpus-id score` header, then one line per mark (grade 0 included)."""
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{query_id(str(r.query))}\t{r.source}\t{int(r.grade)}" for r in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def load_judged_set(kb: str | Path, traces_file: str | Path, *, split: str | None = None,
                    exclude_paths: Any = (), rule: str = "latest") -> Dataset:
    """The judgements of `traces_file`, one grade per page by `rule` (eval.agreement.RULES; `latest`: the latest
    mark), as a labelled set run against the docs folder `kb`."""
    from .agreement import consensus

    path = Path(traces_file)
    if not path.is_file():
        raise DatasetError(f"no trace file {path}; give the trace file the judgements were made in")
    text = to_queries_jsonl(consensus(TraceStore(path), rule))
    if not text:
        raise DatasetError(f"{path} holds no judgement marking a block relevant; judge some results first")
    with tempfile.TemporaryDirectory() as folder:
        queries = Path(folder) / "judgements.jsonl"
        queries.write_text(text, encoding="utf-8")
        dataset = load_query_set(kb, queries, split=split, exclude_paths=exclude_paths)
    named = "judgements" if rule == "latest" else f"judgements-{rule}"  # another rule, other labels
    return replace(dataset, name=f"{Path(kb).name}:{named}", path=str(path.resolve()))
