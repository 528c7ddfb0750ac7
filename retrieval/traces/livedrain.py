"""One drain of a trace file's spool into the live folder, shown at once by the live view.

A drainer takes its turn (trace_turn), writes the spool's batches as parts (trace_live) without any lock on
the trace file, and, if `tool_invocation` is not the live view yet, makes it so (trace_view): the one step
that takes DuckDB's write lock, once per writing session, for a short while (`show_wait` at most). A file
another process holds (an analyst's shell) leaves the parts waiting, unseen; they are shown when it lets go.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

from retrieval.traces import db as trace_db
from retrieval.traces import live as trace_live
from retrieval.traces import view as trace_view
from retrieval.traces.file import migrate_once
from retrieval.traces.spool import Spool
from retrieval.traces.turn import DrainTurn

ANOTHER_DRAINER = "another drainer of this file"
SHOW_POLL = 0.004  # seconds between tries for the write lock that makes the live view: readers leave short gaps


@dataclass(frozen=True)
class Drained:
    """How a drain went: `taken` (it had the turn; else try again in `wait` seconds), `shown` (every row it
    drained is in `tool_invocation`; else `held_by` names who held the file)."""

    taken: bool
    shown: bool = False
    wait: float = 0.0
    held_by: str = ""


def drain_once(path: Path, spool: Spool, memory: deque[bytes], *, show_wait: float, turn_wait: float | None = None,
               paced: bool = False) -> Drained:
    """Drain the spool (everyone's rows) and `memory` into the live folder and show them. Without `turn_wait`
    the turn is only tried (`paced`: not within PACE seconds of the last drain); with it, waited for."""
    turn = DrainTurn(path)
    if turn_wait is None:
        wait = turn.try_take(paced=paced)
        if wait:
            return Drained(False, wait=wait)
    elif not turn.take(turn_wait):
        return Drained(False, held_by=ANOTHER_DRAINER)
    try:
        trace_live.drain_to_parts(path, spool, memory)
        shown = show_live(path, show_wait)
    finally:
        turn.release(drained=True)
    return Drained(True, shown, held_by="" if shown else trace_db.file_holder(path) or "another process")


def show_live(path: Path, timeout: float) -> bool:
    """Make `tool_invocation` the live view if parts wait in the live folder and it is not (the caller holds the
    drain turn or is the keeper); False when the file stayed held for `timeout` seconds."""
    if trace_live.is_marked_live(path) or not trace_live.part_files(path):
        return True
    try:
        with trace_db.write_guard(path, timeout):
            con = trace_db.connect(path, timeout=timeout, threads=1, poll=SHOW_POLL)
            try:
                migrate_once(con, path)
                trace_view.go_live(con, path)
            except trace_db.file_level_errors() as exc:
                raise trace_db.file_error(path, exc) from None
            finally:
                con.close()
    except trace_db.TraceStoreLocked:
        return False
    return True
