"""One drain's worth of rows: the spool's claimed batch files and the rows kept in memory, stored with one
strict `read_json` statement (trace_ingest) and judged line by line in Python only when that fails.

`collect` rotates the spool, claims its batch files and takes the rows kept in memory; `store`
inserts them (bad lines are set aside for the rejected file); `finish` removes the stored batches;
`release` hands back whatever was not stored, for a later drain.

Exactly once: a batch's rows and its name in the `trace_batch` ledger are committed in one transaction,
so a batch whose drainer was killed after the commit (the file still there) is recognised and only
removed. `tool_invocation` has no index to do this job: DuckDB rewrites a table's whole ART index at
every checkpoint, which took 0.1-0.3 s per drain at 200k rows.
"""

from __future__ import annotations

import contextlib
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from retrieval.traces import ingest as trace_ingest
from retrieval.traces.spool import Batch, Spool

if TYPE_CHECKING:
    import duckdb


@dataclass
class Pending:
    """Rows waiting for one drain, with where they came from."""

    batches: list[Batch]
    memory: list[bytes]
    bad: list[tuple[bytes, str]] = field(default_factory=list)
    stored: bool = False

    @classmethod
    def collect(cls, spool: Spool, memory: deque[bytes]) -> Pending:
        """Claim the spooled rows (nothing is read yet: DuckDB reads the files in `store`)."""
        spool.rotate()
        taken = [memory.popleft() for _ in range(len(memory))]
        return cls(spool.claim(), taken)

    def __bool__(self) -> bool:
        return bool(self.batches or self.memory)

    def store(self, con: duckdb.DuckDBPyConnection) -> list[tuple[bytes, str]]:
        """Insert every row not stored before, in one transaction with the batches' ledger entries; returns
        the lines to reject (undecodable or refused) with their reasons."""
        if self:
            done = _ledgered(con, [batch.path.name for batch in self.batches])
            todo = [batch for batch in self.batches if batch.path.name not in done]
            if todo or self.memory:
                try:
                    kept_rows = trace_ingest.temporary_file(self.memory) if self.memory else contextlib.nullcontext("")
                    with kept_rows as kept:
                        _commit(con, [b.source for b in todo] + ([kept] if kept else []), todo, judged=False)
                except trace_ingest.content_errors():
                    lines = [line for batch in todo for line in batch.lines()] + self.memory
                    good, self.bad = trace_ingest.judge(con, lines)
                    with trace_ingest.temporary_file(good) as judged:
                        _commit(con, [judged] if good else [], todo, judged=True)
        self.stored = True
        return self.bad

    def finish(self) -> None:
        """The rows are in the table: remove their batch files."""
        for batch in self.batches:
            batch.done()

    def release(self, memory: deque[bytes]) -> None:
        """Let go of unfinished batch files (drained later) and give back memory rows not stored."""
        for batch in self.batches:
            batch.release()
        if not self.stored:
            memory.extendleft(reversed(self.memory))


LEDGER = "trace_batch"
LEDGER_DAYS = 30  # ledger entries older than this are dropped (a batch orphaned that long is long gone)


def _commit(con: duckdb.DuckDBPyConnection, files: list[str], batches: list[Batch], *, judged: bool) -> None:
    """Insert `files` and record `batches` in the ledger, in one transaction (rolled back on any error)."""
    import duckdb

    con.execute("BEGIN TRANSACTION")
    committed = False
    try:
        trace_ingest.insert(con, files, judged=judged)
        if batches:
            values = ", ".join(f"({trace_ingest.sql_literal(b.path.name)}, now()::TIMESTAMP)" for b in batches)
            con.execute(f"INSERT INTO {LEDGER} VALUES {values}")
            con.execute(f"DELETE FROM {LEDGER} WHERE drained_at < now()::TIMESTAMP - INTERVAL {LEDGER_DAYS} DAY")
        con.execute("COMMIT")
        committed = True
    finally:
        if not committed:
            with contextlib.suppress(duckdb.Error):  # a failed COMMIT leaves no transaction to roll back
                con.execute("ROLLBACK")


def _ledgered(con: duckdb.DuckDBPyConnection, names: list[str]) -> set[str]:
    """Which of the batch `names` were stored already (by a drainer killed before it removed them)."""
    if not names:
        return set()
    found = con.execute(f"SELECT name FROM {LEDGER} WHERE name IN ({', '.join(map(trace_ingest.sql_literal, names))})")
    return {row[0] for row in found.fetchall()}
