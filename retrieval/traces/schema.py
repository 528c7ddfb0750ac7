"""The trace file's schema: `tool_invocation`'s columns, and one list of versioned migrations for every table
in the file (`tool_invocation`, the evaluation tables, `judgement`), applied in order when a writer opens it.

Each migration runs once per file, in one transaction with its row in `schema_version`; a table or column
added later is a new migration (ADD COLUMN, never a rename), so files made by any earlier version upgrade
in place and old rows read the new columns as null.

A file whose `tool_invocation` lacks columns this tool writes (another tool's table, an older
incompatible layout) is refused with a one-line message naming the file, before anything is written.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.lookup.provenance import COLUMNS as PROVENANCE_COLUMNS
from retrieval.traces.db import ADVICE, TraceStoreError, file_error

if TYPE_CHECKING:
    import duckdb

TABLE = "tool_invocation"
COLUMNS = ("id", "created_at", "tool_name", "query", "arguments", "status", "error", "latency_ms",
           "retrieval_layer", "filter_decision", "l1_status", "l0_match_count", "l1_candidate_count",
           "candidate_count", "evidence_count", "run_id", "query_id", "config", "retrieval_details",
           *PROVENANCE_COLUMNS, "tags", "host", "pid", "subject", "relevance_level", "confidence", "abstained",
           "category")
V1_COLUMNS = COLUMNS[:19]
JSON_COLUMNS = ("arguments", "config", "retrieval_details", "index_settings", "tags")
COLUMN_TYPES = ("VARCHAR", "TIMESTAMP", "VARCHAR", "VARCHAR", "JSON", "VARCHAR", "VARCHAR", "DOUBLE",
                "VARCHAR", "VARCHAR", "VARCHAR", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "VARCHAR", "VARCHAR",
                "JSON", "JSON", "VARCHAR", "VARCHAR", "INTEGER", "INTEGER", "JSON", "JSON", "VARCHAR", "INTEGER",
                "VARCHAR", "VARCHAR", "DOUBLE", "BOOLEAN", "VARCHAR")

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (1, (
        f"""CREATE TABLE {TABLE} (
            id VARCHAR PRIMARY KEY, created_at TIMESTAMP NOT NULL, tool_name VARCHAR NOT NULL,
            query VARCHAR NOT NULL, arguments JSON, status VARCHAR NOT NULL, error VARCHAR,
            latency_ms DOUBLE, retrieval_layer VARCHAR, filter_decision VARCHAR, l1_status VARCHAR,
            l0_match_count INTEGER, l1_candidate_count INTEGER, candidate_count INTEGER,
            evidence_count INTEGER, run_id VARCHAR, query_id VARCHAR, config JSON, retrieval_details JSON)""",
        f"CREATE INDEX IF NOT EXISTS tool_invocation_run ON {TABLE} (run_id)",
    )),
    # v2 (provenance): which knowledge base answered; added, never renamed, so v1 files upgrade in place
    (2, (
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS kb_path VARCHAR",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS kb_fingerprint VARCHAR",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS kb_entries INTEGER",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS kb_chunks INTEGER",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS index_settings JSON",
    )),
    # v3 (evaluation runs): the tables eval/storage.py writes; IF NOT EXISTS, because files of earlier versions
    # may hold them already (made on first use), some without the columns added since
    (3, (
        """CREATE TABLE IF NOT EXISTS eval_run (
            run_id VARCHAR PRIMARY KEY, created_at TIMESTAMP NOT NULL, sweep_id VARCHAR, dataset VARCHAR NOT NULL,
            dataset_kind VARCHAR, dataset_path VARCHAR, split VARCHAR, n_queries INTEGER, top_k INTEGER,
            seconds DOUBLE, config JSON, overrides JSON, metrics JSON, baseline JSON, diagnostics JSON,
            dataset_info JSON, metric_names JSON, status VARCHAR, pid INTEGER, host VARCHAR)""",
        """CREATE TABLE IF NOT EXISTS eval_query (
            run_id VARCHAR NOT NULL, query_id VARCHAR NOT NULL, position INTEGER, query VARCHAR, n_relevant INTEGER,
            relevant JSON, categories JSON, invocation_id VARCHAR, first_relevant_rank INTEGER, top_sources JSON,
            filter_decision VARCHAR, filter_category VARCHAR, filter_correct BOOLEAN, filter_harm BOOLEAN,
            filter_harm_missed BOOLEAN, filter_widened BOOLEAN, retrieval_layer VARCHAR, l1_status VARCHAR,
            candidate_count INTEGER, duplicates_merged INTEGER, evidence_count INTEGER, latency_ms DOUBLE,
            filter_changed BOOLEAN, PRIMARY KEY (run_id, query_id))""",
        """CREATE TABLE IF NOT EXISTS eval_query_metric (
            run_id VARCHAR NOT NULL, query_id VARCHAR NOT NULL, system VARCHAR NOT NULL, metric VARCHAR NOT NULL,
            value DOUBLE, PRIMARY KEY (run_id, query_id, system, metric))""",
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS filter_widened BOOLEAN",
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS filter_changed BOOLEAN",
        "ALTER TABLE eval_run ADD COLUMN IF NOT EXISTS status VARCHAR",
        "ALTER TABLE eval_run ADD COLUMN IF NOT EXISTS pid INTEGER",
        "ALTER TABLE eval_run ADD COLUMN IF NOT EXISTS host VARCHAR",
    )),
    # v4 (relevance judgements made in the app): eval/judgements.py
    (4, (
        """CREATE TABLE IF NOT EXISTS judgement (
            query VARCHAR NOT NULL, source VARCHAR NOT NULL, grade INTEGER NOT NULL, who VARCHAR,
            created_at TIMESTAMP NOT NULL, invocation_id VARCHAR, kb_fingerprint VARCHAR)""",
    )),
    # v5 (DuckDB drains the spool): tool_invocation without indexes (DuckDB rewrites a table's whole ART
    # index at every checkpoint, which slows every drain of a large file; a run's rows are found by a column scan),
    # and the ledger of drained spool batches that makes a drain exactly-once instead of the primary key
    (5, (
        f"""CREATE TABLE {TABLE}_v5 (
            id VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL, tool_name VARCHAR NOT NULL,
            query VARCHAR NOT NULL, arguments JSON, status VARCHAR NOT NULL, error VARCHAR,
            latency_ms DOUBLE, retrieval_layer VARCHAR, filter_decision VARCHAR, l1_status VARCHAR,
            l0_match_count INTEGER, l1_candidate_count INTEGER, candidate_count INTEGER,
            evidence_count INTEGER, run_id VARCHAR, query_id VARCHAR, config JSON, retrieval_details JSON,
            kb_path VARCHAR, kb_fingerprint VARCHAR, kb_entries INTEGER, kb_chunks INTEGER, index_settings JSON)""",
        f"INSERT INTO {TABLE}_v5 BY NAME SELECT * FROM {TABLE}",
        "DROP INDEX IF EXISTS tool_invocation_run",
        f"DROP TABLE {TABLE}",
        f"ALTER TABLE {TABLE}_v5 RENAME TO {TABLE}",
        "CREATE TABLE IF NOT EXISTS trace_batch (name VARCHAR NOT NULL, drained_at TIMESTAMP NOT NULL)",
    )),
    # v6 (call tags): what the caller says about a call, e.g. the Compare page's side (A/B) and comparison id;
    # added, never renamed, so v5 files upgrade in place and old rows read null
    (6, (
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS tags JSON",
    )),
    # v7 (cleared judgements kept): a mark the app's Clear removes from `judgement` moves here with the time
    # it was cleared, so clearing loses no history; `judgement` keeps only the marks that count
    (7, (
        """CREATE TABLE IF NOT EXISTS judgement_cleared (
            query VARCHAR NOT NULL, source VARCHAR NOT NULL, grade INTEGER NOT NULL, who VARCHAR,
            created_at TIMESTAMP NOT NULL, invocation_id VARCHAR, kb_fingerprint VARCHAR,
            cleared_at TIMESTAMP NOT NULL)""",
    )),
    # v8 (library versions): the versions of the libraries that decide a run's numbers (retrieval.lookup.provenance
    # LIBRARIES), recorded with each evaluation run; runs stored before read null ("not recorded")
    (8, (
        "ALTER TABLE eval_run ADD COLUMN IF NOT EXISTS library_versions JSON",
    )),
    # v9 (many hosts): which host ($LOOKUP_KNOWLEDGE_HOST, else the host name) and which process recorded each call,
    # so several trace files read as one still say where each row came from; rows stored before read null
    (9, (
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS host VARCHAR",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS pid INTEGER",
    )),
    # v10 (answerability): each evaluated question's relevance grade, and whether a page answers it; a run looks
    # up its unanswerable questions too (eval/abstention.py); rows stored before read null (answerable)
    (10, (
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS answerable BOOLEAN",
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS confidence DOUBLE",
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS relevance_level VARCHAR",
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS question_set VARCHAR",
    )),
    # v11 (why not this page): each relevant page's stage and rank in an evaluated question's lookup
    # (eval/attribution.py); rows stored before read null
    (11, (
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS relevant_stages JSON",
    )),
    # v12 (TREC in and out, ties, judged depth, facets): each evaluated question's whole ranking with its scores
    # (an imported run has no lookup to read them from), the range of each metric over the orders of tied
    # scores, the share of its top 10 that carries a judgement, and the fields its labels carry (`style`, ...)
    # to break metrics down by; rows stored before read null
    (12, (
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS ranked JSON",
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS ranked_scores JSON",
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS tie_ranges JSON",
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS judged_at_10 DOUBLE",
        "ALTER TABLE eval_query ADD COLUMN IF NOT EXISTS facets JSON",
    )),
    # v13 (models): the dense encoder's and the reranker's name and weights' hash each evaluation run's settings
    # named (retrieval.lookup.model_parts.recorded_models), beside its library versions; runs stored before read null
    (13, (
        "ALTER TABLE eval_run ADD COLUMN IF NOT EXISTS models JSON",
    )),
    # v14 (who called): the subject an authenticated MCP-over-HTTP caller was admitted as (the static token's
    # configured name, or the JWT's `sub`; never the token itself); calls without authentication and rows stored
    # before read null
    (14, (
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS subject VARCHAR",
    )),
    # v15 (named annotators, eval/annotation.py and eval/agreement.py): queues of (query, source) pages assigned to
    # annotators, and the adjudicator's final grade of a disputed page (the latest counts)
    (15, (
        """CREATE TABLE IF NOT EXISTS judgement_assignment (
            queue VARCHAR NOT NULL, annotator VARCHAR NOT NULL, query VARCHAR NOT NULL, source VARCHAR NOT NULL,
            assigned_at TIMESTAMP NOT NULL, assigned_by VARCHAR)""",
        """CREATE TABLE IF NOT EXISTS judgement_adjudication (
            query VARCHAR NOT NULL, source VARCHAR NOT NULL, grade INTEGER NOT NULL, who VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL, note VARCHAR)""",
    )),
    # v16 (trends over production traces, retrieval/traces/trends.py): the relevance grade, its confidence, whether
    # the lookup abstained and the filter's applied category as plain columns, written at record time, because
    # parsing them out of `retrieval_details` over a million rows takes longer than a trends answer may; old rows
    # are filled from their `retrieval_details` in one UPDATE (rows without a relevance or a filter read null)
    (16, (
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS relevance_level VARCHAR",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS confidence DOUBLE",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS abstained BOOLEAN",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS category VARCHAR",
        f"""UPDATE {TABLE} SET
            relevance_level = CASE WHEN json_type(retrieval_details->'$.relevance.level') = 'VARCHAR'
                                   THEN retrieval_details->>'$.relevance.level' END,
            confidence = CASE WHEN json_type(retrieval_details->'$.relevance.confidence') IN ('DOUBLE', 'BIGINT',
                                                                                              'UBIGINT')
                              THEN CAST(retrieval_details->>'$.relevance.confidence' AS DOUBLE) END,
            abstained = CASE WHEN json_type(retrieval_details->'$.relevance.abstain') = 'BOOLEAN'
                             THEN CAST(retrieval_details->>'$.relevance.abstain' AS BOOLEAN) END,
            category = CASE WHEN json_type(retrieval_details->'$.filter.applied.category') = 'VARCHAR'
                            THEN retrieval_details->>'$.filter.applied.category' END
            WHERE (retrieval_details->'$.relevance') IS NOT NULL
               OR (retrieval_details->'$.filter.applied') IS NOT NULL""",
    )),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]
LEDGER = "trace_batch"  # the names of the parts the fold stored (fold.py), with when
LEDGER_DAYS = 30  # ledger entries older than this are dropped (a part orphaned that long is long gone)

_MIGRATED: set[tuple[str, int, int]] = set()  # (path, device, inode) of files checked and migrated here
_MIGRATED_GUARD = threading.Lock()


def needs_migration(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Whether the file lacks migrations this tool applies (read only: a read-only connection can ask); a
    newer file or a foreign `tool_invocation` table is refused with a TraceStoreError."""
    existing = _columns(con)
    current = _version(con)
    if current == SCHEMA_VERSION and not sorted(set(COLUMNS) - set(existing)):
        return False
    if current > SCHEMA_VERSION:
        raise TraceStoreError(f"trace file {path} has schema v{current}, newer than this tool's "
                              f"v{SCHEMA_VERSION}; upgrade lookup-knowledge or use another --traces file")
    missing = sorted(set(V1_COLUMNS) - set(existing))  # later versions' columns are added by their migrations
    if existing and (missing or current == 0):
        lacks = f"columns {', '.join(missing)}" if missing else "its schema_version table"
        raise TraceStoreError(f"trace file {path} has a {TABLE} table that is not this tool's (it lacks "
                              f"{lacks}); {ADVICE}")
    return True


def migrate(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Bring the file to SCHEMA_VERSION; refuse newer files and foreign `tool_invocation` tables. The file's
    `tool_invocation` must be a table (folded: fold.py), as every file before v9 is."""
    if not needs_migration(con, path):
        return  # up to date: no transaction, no write
    current = _version(con)
    con.execute("BEGIN TRANSACTION")
    con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TIMESTAMP)")
    for version, statements in MIGRATIONS:
        if version <= current:
            continue
        for statement in statements:
            con.execute(statement)
        con.execute(f"INSERT INTO schema_version VALUES ({int(version)}, now()::TIMESTAMP)")  # no bound parameter
    con.execute("COMMIT")


def _columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    # TABLE is our constant: inlined, because binding a parameter makes DuckDB import pandas (slow start-up)
    found = con.execute(f"SELECT column_name FROM information_schema.columns WHERE table_name = '{TABLE}' "
                        "AND table_schema = 'main' ORDER BY ordinal_position")
    return [row[0] for row in found.fetchall()]


def _version(con: duckdb.DuckDBPyConnection) -> int:
    tables = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version' "
                         "AND table_schema = 'main'").fetchone()[0]
    if not tables:
        return 0
    return int(con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0])


def migrate_once(con: duckdb.DuckDBPyConnection, path: Path, *, force: bool = False) -> None:
    """Check and migrate `path` the first time this process opens this file (a file made anew is migrated again)."""
    if is_migrated(path) and not force:
        return
    import duckdb

    try:
        migrate(con, path)
    except duckdb.Error as exc:
        raise file_error(path, exc) from None
    remember_migrated(path)


def is_migrated(path: Path) -> bool:
    """Whether this process checked (and migrated) this very file already."""
    key = _key(path)
    return key is not None and key in _MIGRATED


def remember_migrated(path: Path) -> None:
    key = _key(path)
    if key is not None:
        with _MIGRATED_GUARD:
            _MIGRATED.add(key)


def _key(path: Path) -> tuple[str, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return str(path.resolve()), info.st_dev, info.st_ino
