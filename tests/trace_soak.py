"""The SIGKILL soak of the trace file: writers and drainers killed at random moments, mid-insert included.

Each round starts 2-4 processes on one trace file (at least one writer; the others write or drain), waits
until each is working, then SIGKILLs every one of them at a random moment within `window` seconds. A
writer records batches of rows and, once `record_many` has returned (the acknowledgement), appends their
ids to its ack log; a third of its batches it also drains itself. A drainer drains the spool into the live
folder in a loop (retrieval/traces/drain.py), and a third of the time into the table through a read-write connection
(which folds the live parts first). The keeper the workers start (detached, never killed here) folds the live
folder and the log into the file 0.1 s after writers pause instead of 5 s, so folds and checkpoints run
all through the soak. After every round a plain, read-only DuckDB connection must open the file and read
`tool_invocation`; at the end one drain moves what is left, and every acknowledged id must be in the table
exactly once.

The fast form runs in the test suite (tests/test_trace_soak.py); the long form is
`python -m tests.trace_soak --kills 3000` (see docs/traces.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class SoakResult:
    """What a soak saw: kills, unreadable files, and acknowledged rows lost or doubled."""

    kills: int = 0
    rounds: int = 0
    corrupt: list[str] = field(default_factory=list)
    acknowledged: int = 0
    stored: int = 0
    lost: int = 0
    doubled: int = 0
    rejected_lines: int = 0
    orphaned_batches: int = 0  # batch files a killed drainer left mid-drain (found after a round)
    largest_wal: int = 0  # bytes of DuckDB's log seen after a round (the keeper keeps it small)
    seconds: float = 0.0

    def ok(self) -> bool:
        return not self.corrupt and self.lost == 0 and self.doubled == 0


def run_soak(folder: Path, *, kills: int, seed: int = 0, window: float = 0.4) -> SoakResult:
    """Kill writers and drainers of `folder/soak.duckdb` until `kills` processes were SIGKILLed."""
    from retrieval import TraceStore

    rng = random.Random(seed)
    path = folder / "soak.duckdb"
    TraceStore(path).close()
    result, started = SoakResult(), time.monotonic()
    while result.kills < kills:
        result.rounds += 1
        roles = ["writer"] + [rng.choice(["writer", "drainer"]) for _ in range(rng.randint(1, 3))]
        procs = [_start(role, path, folder, f"r{result.rounds}p{i}", rng.randrange(2**31))
                 for i, role in enumerate(roles)]
        for proc in procs:
            proc.stdout.readline()  # "ready": imports done, the loop starts
        deadlines = sorted(rng.uniform(0.0, window) for _ in procs)
        begun = time.monotonic()
        for proc, at in zip(rng.sample(procs, len(procs)), deadlines, strict=True):
            time.sleep(max(0.0, begun + at - time.monotonic()))
            proc.send_signal(signal.SIGKILL)
            result.kills += 1
        for proc in procs:
            proc.wait()
            proc.stdout.close()
        result.orphaned_batches += len(list(folder.glob("soak.duckdb.pending.jsonl.*.draining")))
        wal = path.with_name(path.name + ".wal")
        result.largest_wal = max(result.largest_wal, wal.stat().st_size if wal.exists() else 0)
        problem = _unreadable(path)
        if problem:
            kept = folder / f"corrupt-round-{result.rounds}.duckdb"
            shutil.copy(path, kept)
            if path.with_name(path.name + ".wal").exists():
                shutil.copy(path.with_name(path.name + ".wal"), kept.with_name(kept.name + ".wal"))
            result.corrupt.append(f"round {result.rounds}: {problem} (copy: {kept})")
            break
    TraceStore(path).close()  # the last drain: whatever the killed processes left spooled
    acked: set[str] = set()
    for log in folder.glob("*.acked"):
        acked.update(line for line in log.read_text().splitlines() if line)
    ids = _stored_ids(path)
    rejected = path.with_name(path.name + ".pending.jsonl.rejected.jsonl")
    result.acknowledged, result.stored = len(acked), len(ids)
    result.lost = len(acked - set(ids))
    result.doubled = len(ids) - len(set(ids))
    result.rejected_lines = len(rejected.read_text().splitlines()) if rejected.exists() else 0
    result.seconds = time.monotonic() - started
    return result


SOAK_PACK_IDLE = 0.1  # seconds without new rows after which the keeper folds the live folder into the file


def _unreadable(path: Path, patience: float = 60.0) -> str:
    """Why a plain read-only DuckDB cannot read `path`'s table ("" when it can). A checkpointer (detached,
    never killed here) may hold the file a moment: a held lock is waited for, not counted."""
    import duckdb

    deadline = time.monotonic() + patience
    while True:
        try:
            with duckdb.connect(str(path), read_only=True) as con:
                con.execute("SELECT count(*), count(DISTINCT id) FROM tool_invocation").fetchone()
            return ""
        except duckdb.IOException as exc:
            if "Could not set lock" not in str(exc) or time.monotonic() > deadline:
                return f"{type(exc).__name__}: {exc}"
            time.sleep(0.05)
        except duckdb.Error as exc:
            return f"{type(exc).__name__}: {exc}"


def _stored_ids(path: Path, patience: float = 60.0) -> list[str]:
    """Every id in `path`'s table, read as `_unreadable` reads: the detached checkpointer the last rounds
    started may still hold the file, so a held lock is waited for (CI once met it right after the last drain)."""
    import duckdb

    deadline = time.monotonic() + patience
    while True:
        try:
            with duckdb.connect(str(path), read_only=True) as con:
                return [row[0] for row in con.execute("SELECT id FROM tool_invocation").fetchall()]
        except duckdb.IOException as exc:
            if "Could not set lock" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _start(role: str, path: Path, folder: Path, tag: str, seed: int) -> subprocess.Popen:
    env = {**os.environ, "LOOKUP_KNOWLEDGE_PACK_IDLE": str(SOAK_PACK_IDLE)}
    return subprocess.Popen([sys.executable, "-m", "tests.trace_soak", role, str(path), str(folder), tag, str(seed)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)


def _writer(path: Path, folder: Path, tag: str, seed: int) -> None:
    from retrieval import TraceStore
    from retrieval.lookup.invocation import ToolInvocation

    rng = random.Random(seed)
    store = TraceStore(path, lock_timeout=0.2, defer_if_locked=True)
    log = os.open(folder / f"{tag}.acked", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    print("ready", flush=True)
    sequence = 0
    while True:
        batch = []
        for _ in range(rng.randint(1, 40)):
            sequence += 1
            batch.append(ToolInvocation("lookup_knowledge", f"query {sequence}", {"query": "q"}, "ok", 1.0, {},
                                        {"pad": "x" * rng.randint(200, 4000), "n": sequence}, id=f"{tag}-{sequence}"))
        store.record_many(batch)  # acknowledged: from here on, these rows must reach the table
        os.write(log, "".join(f"{row.id}\n" for row in batch).encode())
        if rng.random() < 0.33:
            store.flush(timeout=0.2)


def _drainer(path: Path) -> None:
    from collections import deque

    from retrieval import TraceStore
    from retrieval.traces.db import TraceStoreError
    from retrieval.traces.drain import drain_once
    from retrieval.traces.spool import Spool, spool_path

    rng = random.Random(os.getpid())
    spool = Spool(spool_path(path))
    print("ready", flush=True)
    while True:
        with contextlib.suppress(TraceStoreError):  # locked by another process: try again
            if rng.random() < 0.33:
                with TraceStore(path, open_now=False, background=False, lock_timeout=0.2).connect():
                    pass  # the spool drained into parts and every part folded into the table
            else:
                drain_once(path, spool, deque(), show_wait=0.2, turn_wait=0.2)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "writer":
        _writer(Path(argv[1]), Path(argv[2]), argv[3], int(argv[4]))
    if argv and argv[0] == "drainer":
        _drainer(Path(argv[1]))
    parser = argparse.ArgumentParser(description="The SIGKILL soak of the trace file (long form).")
    parser.add_argument("--kills", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", default=None, help="where the trace file goes (default: a temporary folder)")
    args = parser.parse_args(argv)
    import tempfile

    folder = Path(args.folder or tempfile.mkdtemp(prefix="trace-soak-"))
    folder.mkdir(parents=True, exist_ok=True)
    result = run_soak(folder, kills=args.kills, seed=args.seed)
    print(json.dumps(result.__dict__, indent=2))
    return 0 if result.ok() else 1


if __name__ == "__main__":
    raise SystemExit(main())
