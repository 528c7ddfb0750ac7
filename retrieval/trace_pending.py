"""One drain's worth of rows: the spool's claimed batch files and the rows kept in memory, stored with one
strict `read_json` statement (trace_ingest) and judged line by line in Python only when that fails.

`collect` rotates the spool, claims its batch files and takes the rows kept in memory; `store`
inserts them (bad lines are set aside for the rejected file); `finish` removes the stored batches;
`release` hands back whatever was not stored, for a later drain.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import trace_ingest
from .trace_spool import Batch, Spool

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
        """Insert every row; returns the lines to reject (undecodable or refused) with their reasons."""
        if self:
            try:
                if self.memory:
                    with trace_ingest.temporary_file(self.memory) as kept:
                        trace_ingest.insert(con, [b.source for b in self.batches] + [kept])
                else:
                    trace_ingest.insert(con, [b.source for b in self.batches])
            except trace_ingest.content_errors():
                lines = [line for batch in self.batches for line in batch.lines()] + self.memory
                self.bad = trace_ingest.insert_judged(con, lines)
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
