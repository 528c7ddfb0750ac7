"""One drain's worth of rows: collected and decoded *before* the DuckDB file is opened, so the file's
lock is held only for the insert itself.

`collect` rotates the spool, claims its batch files and takes the rows kept in memory; `store`
inserts them (bad lines are set aside for the rejected file); `finish` removes the stored batches;
`release` hands back whatever was not stored, for a later drain.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .trace_rows import RejectedLine, Row, decode, insert, to_table
from .trace_spool import Batch, Spool

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

ARROW_ROWS = 16  # rows per Arrow conversion: converting 500 rows at once held the GIL for 4-7 ms
BACKGROUND_SHARE = 0.1  # of the time a background drain is busy, the share it may hold the GIL (see _Pacer)
BACKGROUND_NAP = 1e-4  # seconds, at least, a background drain sleeps after each step
LONGEST_STEP = 0.002  # seconds: a step that took longer (it waited for the GIL) is paced as this long
PACED_BACKLOG = 2_000  # rows: a background drain claiming more goes at full speed, so the spool stays bounded


@dataclass
class Pending:
    """Rows waiting for one drain, with where they came from."""

    batches: list[Batch]
    memory: list[bytes]
    chunks: list[tuple[list[Row], list[bytes], pa.Table]] = field(default_factory=list)
    bad: list[tuple[bytes, str]] = field(default_factory=list)
    stored: bool = False

    @classmethod
    def collect(cls, spool: Spool, memory: deque[bytes], batch_size: int, *, background: bool = False) -> Pending:
        """Claim the spooled rows and decode them, offering the GIL after each row; paced when `background`,
        unless the backlog passed PACED_BACKLOG rows (lookups record faster than a paced drain moves rows)."""
        started = time.perf_counter()
        spool.rotate()
        taken = [memory.popleft() for _ in range(len(memory))]
        pending = cls(spool.claim(), taken)
        lines = [line for batch in pending.batches for line in batch.lines] + taken
        pacer = _Pacer(background and len(lines) <= PACED_BACKLOG, started)
        rows: list[tuple[Row, bytes]] = []
        for line in lines:
            pacer.offer()  # decoding is Python, ~0.1-0.2 ms a row
            try:
                rows.append((decode(line), line))
            except RejectedLine as exc:
                pending.bad.append((line, str(exc)))
        for start in range(0, len(rows), batch_size):
            pending._add_chunk(rows[start:start + batch_size], pacer)
        return pending

    def _add_chunk(self, rows: list[tuple[Row, bytes]], pacer: _Pacer) -> None:
        try:
            self.chunks.append(([row for row, _ in rows], [line for _, line in rows],
                                _arrow([r for r, _ in rows], pacer)))
            return
        except (ValueError, TypeError, OverflowError):  # pyarrow's ArrowInvalid / ArrowTypeError: find the row
            if len(rows) == 1:
                self.bad.append((rows[0][1], "a value Arrow cannot hold"))
                return
        for row in rows:
            self._add_chunk([row], pacer)

    def store(self, con: duckdb.DuckDBPyConnection) -> list[tuple[bytes, str]]:
        """Insert every row, a batch per statement; returns the lines to reject (undecodable or refused)."""
        for rows, lines, table in self.chunks:
            self.bad.extend((lines[i], reason) for i, reason in insert(con, rows, table))
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


def _arrow(rows: list[Row], pacer: _Pacer) -> pa.Table:
    """`to_table(rows)` converted ARROW_ROWS rows at a time, the GIL offered between slices; one table, so
    the batch is still one INSERT."""
    parts = []
    for start in range(0, len(rows), ARROW_ROWS):
        if start:
            pacer.offer()
        parts.append(to_table(rows[start:start + ARROW_ROWS]))
    if len(parts) == 1:
        return parts[0]
    import pyarrow as pa

    return pa.concat_tables(parts)


class _Pacer:
    """Offers the GIL between a drain's steps (decoding a row, converting a slice to Arrow).

    A reader's drain (someone waits for it) only offers it: `sleep(0)`. A background drain shares the GIL
    with lookups, and one that took it whenever offered made every lookup beside it 30-50% slower for the
    whole batch: the traced p95 at 100k. So after each step it sleeps long enough to hold at most
    BACKGROUND_SHARE of the GIL while busy (a row takes ~0.15 ms, then ~1.4 ms of sleep: 600 rows a second,
    twice what one process's lookups record). Interleaved at 100k, 1,200 traced lookups each, against a
    fixed 0.1 ms nap: p95 11.3 -> 8.0 ms, mean 6.1 -> 5.0 ms (on a slow stretch of the machine).
    """

    def __init__(self, background: bool, since: float) -> None:
        self.background = background
        self.since = since

    def offer(self) -> None:
        if self.background:
            step = min(time.perf_counter() - self.since, LONGEST_STEP)
            time.sleep(max(BACKGROUND_NAP, step * (1 - BACKGROUND_SHARE) / BACKGROUND_SHARE))
        else:
            time.sleep(0)
        self.since = time.perf_counter()
