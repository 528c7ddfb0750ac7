"""Who marked what: each annotator's latest mark of each page, read from the trace file's `judgement` table.

Every mark names its annotator (`who`: a signed-in email or a name the analyst gives); marks kept before marks
had names, with a blank `who`, read as the annotator UNNAMED. The one reader of annotators' marks for
eval.judgements (consensus), eval.annotation (queues) and eval.agreement.
"""

from __future__ import annotations

import pandas as pd

from retrieval import TraceStore

UNNAMED = "(unnamed)"  # the annotator of marks made before marks named theirs (a blank `who`)


def annotator_sql(column: str = "who") -> str:
    """SQL naming the annotator of a `judgement` row from its `column` (UNNAMED for a blank one)."""
    return f"coalesce(nullif(trim({column}), ''), '{UNNAMED}')"


ANNOTATOR = annotator_sql()


def by_annotator(store: TraceStore) -> pd.DataFrame:
    """Each annotator's latest mark per page: columns query, source, who, grade, created_at (sorted)."""
    return store.query(f"SELECT query, source, {ANNOTATOR} AS who, grade, created_at FROM judgement "
                       f"QUALIFY row_number() OVER (PARTITION BY query, source, {ANNOTATOR} "
                       "ORDER BY created_at DESC) = 1 ORDER BY query, source, who")


def annotators(store: TraceStore) -> list[str]:
    """Everyone who has marked a page, sorted."""
    return sorted(set(by_annotator(store)["who"]))


def has_table(store: TraceStore, name: str) -> bool:
    """Whether the trace file (or, for several, any of them) has the table `name`: files read as one through
    $LOOKUP_KNOWLEDGE_TRACES are not migrated, so an older one lacks the newer tables."""
    return bool(store.query("SELECT count(*) AS n FROM information_schema.tables WHERE table_name = ?", [name])["n"][0])
