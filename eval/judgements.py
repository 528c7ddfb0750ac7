"""Relevance judgements analysts make in the app, kept in the trace file, and the labelled set they form.

Table `judgement` (made by the trace file's migrations, retrieval/traces/schema.py): one row per mark
(query, source, grade, who, when, the lookup it was made on); the latest mark of a (query, source) pair is
the one that counts. Exported as `queries.jsonl` rows with
`relevant` (the docs-folder query-file format) or as qrels TSV (BEIR's `query-id corpus-id score`), and
evaluated with `python -m eval run --kb DIR --judgements TRACES_FILE`.

With several named annotators (`who`), `consensus` makes one grade per page by a stated rule (RULES: the
latest mark, the adjudicated grade, the majority, the mean) and `adjudicate` keeps an adjudicator's final grade
of a disputed page (table `judgement_adjudication`); eval.agreement measures how far the annotators agree.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from retrieval import TraceStore

from .annotators import by_annotator, has_table
from .datasets import Dataset, DatasetError, load_query_set
from .reading import one_read

GRADES = {0: "not relevant", 1: "relevant", 2: "highly relevant"}  # ordinal: agreement uses that order
RULES = ("latest", "adjudicated", "majority", "mean")  # how several annotators' marks of a page make one grade


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


# ---------------------------------------------------------------- several annotators: adjudication and consensus




def adjudicate(store: TraceStore, query: str, source: str, grade: int, *, who: str, note: str = "") -> None:
    """Keep the adjudicator `who`'s final grade of a page (the latest adjudication counts); ValueError for a
    blank query, source or adjudicator, a grade outside GRADES, or a page nobody has marked."""
    if not str(query).strip() or not str(source).strip():
        raise ValueError(f"an adjudication needs a query and a source, got {query!r} and {source!r}")
    if grade not in GRADES:
        raise ValueError(f"grade must be one of {sorted(GRADES)} "
                         f"({', '.join(GRADES.values())}), got {grade!r}")
    if not isinstance(who, str) or not who.strip():
        raise ValueError(f"an adjudication needs the adjudicator's name (who=NAME or an email), got {who!r}")
    page = [str(query).strip(), str(source).strip()]
    marked = store.query("SELECT count(*) AS n FROM judgement WHERE query = ? AND source = ?", page)["n"][0]
    if not marked:
        raise ValueError(f"nobody has marked {page[1]!r} for {page[0]!r}: adjudication settles a page annotators "
                         "marked (see `python -m eval agreement` for the disputed ones)")
    with store.connect() as con:
        con.execute("INSERT INTO judgement_adjudication VALUES (?, ?, ?, ?, ?, ?)",
                    [*page, int(grade), who.strip(), datetime.now(timezone.utc).replace(tzinfo=None), str(note or "")])


def adjudications(store: TraceStore) -> pd.DataFrame:
    """The adjudication that counts per page (the latest): query, source, grade, who, created_at, note."""
    columns = ["query", "source", "grade", "who", "created_at", "note"]
    if not has_table(store, "judgement_adjudication"):
        return pd.DataFrame(columns=columns)
    return store.query("SELECT query, source, grade, who, created_at, note FROM judgement_adjudication "
                       "QUALIFY row_number() OVER (PARTITION BY query, source ORDER BY created_at DESC) = 1 "
                       "ORDER BY query, source")


def adjudicated_grades(store: TraceStore) -> dict[tuple[str, str], int]:
    frame = adjudications(store)
    return {(str(q), str(s)): int(g) for q, s, g in zip(frame["query"], frame["source"], frame["grade"], strict=True)}


@one_read
def consensus(store: TraceStore, rule: str) -> pd.DataFrame:
    """One grade per page by `rule` (RULES), columns query, source, grade; `attrs["note"]` says what the rule did
    and `attrs["left_out"]` how many marked pages it left out.

    latest: the latest mark of each page, whoever made it (what every export did before annotators had names);
    adjudicated: the adjudicated grade where there is one, else the grade every annotator of the page gave
    (disputed pages nobody adjudicated are left out); majority: the most common grade among the annotators'
    latest marks (a tie goes to the lower grade); mean: their mean grade rounded half up. An adjudicated grade
    overrides the marks in the adjudicated, majority and mean rules."""
    if rule not in RULES:
        raise ValueError(f"unknown judgement rule {rule!r}; known rules: {', '.join(RULES)}")
    if rule == "latest":
        frame = latest(store)[["query", "source", "grade"]].reset_index(drop=True)
        return _noted(frame, 0, f"latest: the latest mark of each of {len(frame)} page(s), whoever made it")
    marks = by_annotator(store)
    settled = adjudicated_grades(store)
    rows, left_out, ties, overridden = [], 0, 0, 0
    for (query, source), group in marks.groupby(["query", "source"], sort=True):
        grades = [int(g) for g in group["grade"]]
        page = (str(query), str(source))
        if page in settled:
            rows.append((*page, settled[page]))
            overridden += 1
        elif rule == "adjudicated":
            if len(set(grades)) == 1:
                rows.append((*page, grades[0]))
            else:
                left_out += 1
        elif rule == "majority":
            counts = pd.Series(grades).value_counts()
            best = counts[counts == counts.max()].index
            ties += len(best) > 1
            rows.append((*page, int(min(best))))
        else:
            rows.append((*page, int(math.floor(sum(grades) / len(grades) + 0.5))))
    frame = pd.DataFrame(rows, columns=["query", "source", "grade"])
    words = {"adjudicated": f"adjudicated: {overridden} adjudicated page(s), {len(frame) - overridden} every "
                            f"annotator agrees on; {left_out} disputed page(s) nobody adjudicated left out",
             "majority": f"majority: the most common grade of each of {len(frame)} page(s) ({overridden} "
                         f"adjudicated); {ties} tie(s) went to the lower grade",
             "mean": f"mean: the mean grade of each of {len(frame)} page(s), rounded half up ({overridden} "
                     "adjudicated)"}
    return _noted(frame, left_out, words[rule])


def _noted(frame: pd.DataFrame, left_out: int, note: str) -> pd.DataFrame:
    frame.attrs["left_out"] = left_out
    frame.attrs["note"] = note
    return frame
