"""The SIGKILL soak of the trace file: writers, drainers, a folding keeper and lookup commands (with their
helpers) killed at random moments, mid-insert and mid-fold included (issues 19 and 48).

Each round starts 2-4 processes on one trace file (at least one writer; the others are picked among the four
roles, one keeper at most), waits until each is working, then SIGKILLs every one of them at a random moment:
within `window` seconds, or within WINDOWS[role] for a lookup command or a keeper. The roles:
- writer: records batches of rows and, once `record_many` has returned (the acknowledgement), appends their
  ids to its ack log; a third of its batches it also drains itself.
- drainer: drains the spool into the live folder in a loop (retrieval/traces/drain.py), and a third of the
  time into the table through a read-write connection (which folds the live parts first).
- keeper: folds the live parts into the table in a loop as the keeper does (fold.pack's body: the write guard,
  a read-write connection, the drain turn, `fold`; a third of the folds only the oldest part or two; half of
  them after a drain of the spool into parts, as fold.open_folded does), but without the CHECKPOINT: a
  SIGKILL inside one can tear DuckDB's metadata block (docs/traces.md, "No checkpoint in a process that may
  be killed"), so only the detached keeper checkpoints. It marks in a file when it is inside `fold`: half the
  keeper kills wait for a fold to begin (then 0-30 ms), and kills mid-fold are counted. With `real_keeper`
  (`--real-keeper`) the role runs the real keeper instead (retrieval/traces/keeper.py: `take_lock`, then
  `serve`, which packs, CHECKPOINT included, once writers are idle): half its kills come after the other
  processes' and wait for its CHECKPOINT to begin (then 0-150 ms), and kills mid-CHECKPOINT are counted.
- cli: runs `python -m retrieval lookup "soak-cli-<tag>-<n> …" --traces FILE --kb data/kb --compact` in a loop,
  each command in a session of its own; it logs a command's query id once it exited 0 (the acknowledgement).
  The kill stops the loop and SIGKILLs the running command: half the time its whole process group, which holds
  the helper the command forked (retrieval/traces/command_helper.py) until the helper, having answered, leaves
  for a session of its own to become the keeper; else the command alone.
The keepers the workers and the commands start (detached, never killed here) fold after 0.1 s without rows
instead of 5 s, so folds and checkpoints run all through the soak. After every round a plain, read-only DuckDB
connection must open the file and read `tool_invocation`; at the end one drain moves what is left, every
acknowledged id (and lookup query) must be in the table exactly once, and no id or lookup query twice.

The fast form runs in the test suite (tests/test_trace_soak.py); the long form is
`python -m tests.trace_soak --kills 1000 --seed 5` (see docs/traces.md).
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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KB = ROOT / "data" / "kb"
ROLES = ("writer", "drainer", "keeper", "cli")
SOAK_PACK_IDLE = 0.1  # seconds without new rows after which the keeper folds the live folder into the file
# seconds within which a role's process is killed, if not `window`: a lookup command lasts about a second, and
# the keeper's first fold comes once the first parts are drained
WINDOWS = {"cli": 3.0, "keeper": 1.5}
CLI_PREFIX = "soak-cli-"  # the start of every lookup query of the soak: `soak-cli-<tag>-<n> <words>`
CLI_WORDS = ("alerting rules", "billing invoices", "api tokens", "dashboards panels", "security sso")
FOLDING = b"f"  # the keeper role's mark while inside `fold` (b"-" otherwise)
CHECKPOINTING = b"c"  # the real keeper's mark while inside its CHECKPOINT (with `real_keeper`)


@dataclass
class SoakResult:
    """What a soak saw: kills (by role), unreadable files, and acknowledged rows lost or doubled."""

    kills: int = 0
    kills_by_role: dict[str, int] = field(default_factory=dict)  # "cli helper": helpers a group kill reached
    keeper_mid_fold: int = 0  # keeper kills that landed inside `fold` (with real_keeper: inside `pack`)
    keeper_mid_checkpoint: int = 0  # with real_keeper: keeper kills that landed inside the CHECKPOINT
    rounds: int = 0
    corrupt: list[str] = field(default_factory=list)
    acknowledged: int = 0
    stored: int = 0
    lost: int = 0
    doubled: int = 0
    cli_commands: int = 0  # lookup commands started
    cli_acknowledged: int = 0  # of them, exited 0 (their rows are among `acknowledged`)
    cli_failed: list[str] = field(default_factory=list)  # commands that exited non-zero without being killed
    cli_stored: int = 0  # lookup rows in the table (acknowledged ones, and some of the killed commands')
    errors: list[str] = field(default_factory=list)  # the last line of each traceback a worker or command printed
    rejected_lines: int = 0
    orphaned_batches: int = 0  # batch files a killed drainer left mid-drain (found after a round)
    largest_wal: int = 0  # bytes of DuckDB's log seen after a round (the keeper keeps it small)
    seconds: float = 0.0

    def ok(self) -> bool:
        return not self.corrupt and self.lost == 0 and self.doubled == 0 and not self.cli_failed


def run_soak(folder: Path, *, kills: int, seed: int = 0, window: float = 0.4, real_keeper: bool = False) -> SoakResult:
    """Kill writers, drainers, keepers and lookup commands of `folder/soak.duckdb` until `kills` processes were
    SIGKILLed."""
    from retrieval import TraceStore

    rng = random.Random(seed)
    path = folder / "soak.duckdb"
    TraceStore(path).close()
    started = time.monotonic()
    _warm_index(folder)
    result, by_role = SoakResult(), Counter()
    while result.kills < kills:
        result.rounds += 1
        roles = ["writer"]
        for _ in range(rng.randint(1, 3)):  # one keeper at most, as a file has (two would mostly wait for each other)
            roles.append(rng.choice([role for role in ROLES if role != "keeper" or "keeper" not in roles]))
        procs = [_start(role, path, folder, f"r{result.rounds}p{i}", rng.randrange(2**31), real_keeper)
                 for i, role in enumerate(roles)]
        for proc in procs:
            proc.stdout.readline()  # "ready": imports done, the loop starts
        # half the keeper kills are aimed: the folding keeper's first, while the writers still make parts to
        # fold; the real keeper's last, at its CHECKPOINT once the writers are gone (it packs when they are idle)
        aimed = {i for i, role in enumerate(roles) if role == "keeper" and rng.random() < 0.5}
        moments = [(rng.uniform(0.0, WINDOWS.get(role, window)), i) for i, role in enumerate(roles) if i not in aimed]
        last = max(at for at, _ in moments)
        moments = sorted(moments + [(last + 0.001 if real_keeper else 0.0, i) for i in aimed])
        begun = time.monotonic()
        for at, i in moments:
            time.sleep(max(0.0, begun + at - time.monotonic()))
            if i in aimed:
                _await(folder / f"r{result.rounds}p{i}.phase", CHECKPOINTING if real_keeper else FOLDING,
                       rng.uniform(0.0, 0.15 if real_keeper else 0.03))
            for killed in _kill(roles[i], procs[i], folder / f"r{result.rounds}p{i}.phase", rng):
                by_role[killed] += 1
        for proc in procs:
            proc.wait()
            proc.stdout.close()
        result.kills = sum(count for role, count in by_role.items() if not role.startswith("keeper mid-"))
        result.orphaned_batches += len(list(folder.glob("soak.duckdb.pending.jsonl.*.draining")))
        wal = path.with_name(path.name + ".wal")
        result.largest_wal = max(result.largest_wal, wal.stat().st_size if wal.exists() else 0)
        problem = _unreadable(path)
        if problem:
            kept = folder / f"corrupt-round-{result.rounds}.duckdb"
            shutil.copy(path, kept)
            if path.with_name(path.name + ".wal").exists():
                shutil.copy(path.with_name(path.name + ".wal"), kept.with_name(kept.name + ".wal"))
            result.corrupt.append(f"round {result.rounds} ({', '.join(roles)}): {problem} (copy: {kept})")
            break
    result.keeper_mid_fold = by_role.pop("keeper mid-fold", 0)
    result.keeper_mid_checkpoint = by_role.pop("keeper mid-checkpoint", 0)
    result.kills_by_role = dict(sorted(by_role.items()))
    TraceStore(path).close()  # the last drain: whatever the killed processes left spooled
    _count_rows(result, path, folder)
    result.seconds = time.monotonic() - started
    return result


def _count_rows(result: SoakResult, path: Path, folder: Path) -> None:
    """Acknowledged rows against the table: lost, doubled, and the lookup commands' share."""
    acked: set[str] = set()
    for log in folder.glob("*.acked"):
        acked.update(line for line in log.read_text().splitlines() if line)
    cli_acked: set[str] = set()
    for log in folder.glob("*.cli"):
        for line in log.read_text().splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "start":
                result.cli_commands += 1
            elif kind == "ok":
                cli_acked.add(rest)
            elif kind == "fail":
                result.cli_failed.append(f"{log.stem}: {rest}")
    for log in sorted([*folder.glob("*.stderr"), *folder.glob("*.cli-stderr")]):
        text = log.read_text(errors="replace")
        for chunk in text.split("Traceback (most recent call last):")[1:]:
            lines = [line for line in chunk.splitlines() if line and not line.startswith(" ")]
            result.errors.append(f"{log.name}: {lines[0] if lines else chunk.strip()[-200:]}")
    rows = _stored_rows(path)
    ids = [row_id for row_id, _ in rows]
    cli_ids = [query.split()[0] for _, query in rows if query and query.startswith(CLI_PREFIX)]
    rejected = path.with_name(path.name + ".pending.jsonl.rejected.jsonl")
    result.acknowledged, result.stored = len(acked) + len(cli_acked), len(ids)
    result.cli_acknowledged, result.cli_stored = len(cli_acked), len(cli_ids)
    result.lost = len(acked - set(ids)) + len(cli_acked - set(cli_ids))
    result.doubled = (len(ids) - len(set(ids))) + (len(cli_ids) - len(set(cli_ids)))
    result.rejected_lines = len(rejected.read_text().splitlines()) if rejected.exists() else 0


def _warm_index(folder: Path) -> None:
    """Build the sample knowledge base's index into the soak's own cache, once, before any kill: a lookup
    command killed while building it would leave every later one building it again."""
    subprocess.run([sys.executable, "-m", "retrieval", "index", "--kb", str(KB)], cwd=ROOT, env=_env(folder),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, "LOOKUP_KNOWLEDGE_PACK_IDLE": str(SOAK_PACK_IDLE),
            "LOOKUP_KNOWLEDGE_CACHE": str(folder / "index-cache")}


def _kill(role: str, proc: subprocess.Popen, phase: Path, rng: random.Random) -> list[str]:
    """SIGKILL one role's process (for `cli`, the running lookup command and maybe its helper); returns what the
    kill reached, by role ("keeper mid-fold" and "keeper mid-checkpoint" as well when a keeper was inside one)."""
    if role == "keeper":
        try:
            mark = phase.read_bytes()[:1]
        except OSError:
            mark = b""
        proc.send_signal(signal.SIGKILL)
        inside = {FOLDING: ["keeper mid-fold"], CHECKPOINTING: ["keeper mid-fold", "keeper mid-checkpoint"]}
        return ["keeper", *inside.get(mark, [])]
    if role != "cli":
        proc.send_signal(signal.SIGKILL)
        return [role]
    proc.send_signal(signal.SIGSTOP)  # the loop starts no command while its running one is killed
    _wait_stopped(proc.pid)
    reached = []
    for child in _children(proc.pid):  # the running command, in a session (and process group) of its own
        if rng.random() < 0.5:
            group = _group(child)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child, signal.SIGKILL)
            reached += ["cli"] + ["cli helper"] * (len(group) - 1)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
            reached.append("cli")
    proc.send_signal(signal.SIGKILL)
    return reached or ["cli (between commands)"]


def _await(phase: Path, mark: bytes, delay: float, patience: float = 2.0) -> None:
    """Wait (up to `patience` seconds) until the keeper role's phase file holds `mark` (it is inside `fold`, or
    the CHECKPOINT), then `delay` seconds more (a fold of a few parts, or a CHECKPOINT, lasts tens of
    milliseconds)."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if phase.read_bytes()[:1] == mark:
                time.sleep(delay)
                return
        time.sleep(0.0005)


def _wait_stopped(pid: int, patience: float = 5.0) -> None:
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return
        if state in ("T", "t", "Z", "X"):
            return
        time.sleep(0.001)


def _children(pid: int) -> list[int]:
    """The child processes of `pid` (stopped: it starts and collects none meanwhile)."""
    with contextlib.suppress(OSError):
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def _group(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (a lookup command and, until it leaves, its helper)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


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


def _stored_rows(path: Path, patience: float = 60.0) -> list[tuple[str, str | None]]:
    """Every (id, query) in `path`'s table, read as `_unreadable` reads: the detached checkpointer the last
    rounds started may still hold the file, so a held lock is waited for (CI once met it right after the last
    drain)."""
    import duckdb

    deadline = time.monotonic() + patience
    while True:
        try:
            with duckdb.connect(str(path), read_only=True) as con:
                return con.execute("SELECT id, query FROM tool_invocation").fetchall()
        except duckdb.IOException as exc:
            if "Could not set lock" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _start(role: str, path: Path, folder: Path, tag: str, seed: int, real_keeper: bool) -> subprocess.Popen:
    """A worker of `role`; its stderr is kept as `<tag>.stderr`, so one that died of an error is seen."""
    if role == "keeper" and real_keeper:
        role = "real-keeper"
    errors = os.open(folder / f"{tag}.stderr", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        return subprocess.Popen([sys.executable, "-m", "tests.trace_soak", role, str(path), str(folder), tag,
                                 str(seed)], cwd=ROOT, stdout=subprocess.PIPE, stderr=errors, text=True,
                                env=_env(folder))
    finally:
        os.close(errors)


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


def _keeper(path: Path, folder: Path, tag: str, seed: int) -> None:
    """Fold as the keeper does (fold.pack less its CHECKPOINT), in a loop, half the time after a drain of the
    spool into parts (as fold.open_folded does); the phase file says when inside `fold`."""
    from collections import deque

    from retrieval.traces import db as trace_db
    from retrieval.traces import view as trace_view
    from retrieval.traces.drain import DrainTurn, drain_to_parts
    from retrieval.traces.fold import fold
    from retrieval.traces.spool import Spool, spool_path

    rng = random.Random(seed)
    spool = Spool(spool_path(path))
    phase = os.open(folder / f"{tag}.phase", os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(phase, b"-", 0)
    print("ready", flush=True)
    while True:
        with trace_db.write_guard(path), contextlib.suppress(trace_db.TraceStoreLocked):
            con = trace_db.connect(path, timeout=0.2, poll=trace_view.SHOW_POLL)
            try:
                turn = DrainTurn(path)
                if turn.take(0.2):
                    try:
                        if rng.random() < 0.5:  # as a read-write connection of this project does (fold.open_folded)
                            drain_to_parts(path, spool, deque())
                        if trace_view.part_files(path) or trace_view.is_live(con):  # else `fold` does nothing
                            os.pwrite(phase, FOLDING, 0)
                            fold(con, path, oldest=rng.choice([1, 2]) if rng.random() < 0.33 else None)
                            os.pwrite(phase, b"-", 0)
                    finally:
                        turn.release()
            finally:
                con.close()
        time.sleep(rng.uniform(0.0, 0.05))


def _real_keeper(path: Path, folder: Path, tag: str) -> None:
    """The real keeper (its lock, then `serve`: drains, folds and checkpoints), again whenever it returns; the
    phase file says when inside `pack` (FOLDING) and inside its CHECKPOINT (CHECKPOINTING)."""
    from retrieval.traces import db as trace_db
    from retrieval.traces import fold as trace_fold
    from retrieval.traces import keeper

    phase = os.open(folder / f"{tag}.phase", os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(phase, b"-", 0)

    class MarkedConnection:
        def __init__(self, con):
            self._con = con

        def __getattr__(self, name):
            return getattr(self._con, name)

        def execute(self, sql, *args, **kwargs):
            if sql.strip().upper() != "CHECKPOINT":
                return self._con.execute(sql, *args, **kwargs)
            os.pwrite(phase, CHECKPOINTING, 0)
            try:
                return self._con.execute(sql, *args, **kwargs)
            finally:
                os.pwrite(phase, FOLDING, 0)

    class MarkedDb:  # fold.py's `trace_db`, whose connections mark their CHECKPOINT
        def __getattr__(self, name):
            return getattr(trace_db, name)

        def connect(self, *args, **kwargs):
            return MarkedConnection(trace_db.connect(*args, **kwargs))

    def marked_pack(*args, **kwargs):
        os.pwrite(phase, FOLDING, 0)
        try:
            return pack(*args, **kwargs)
        finally:
            os.pwrite(phase, b"-", 0)

    trace_fold.trace_db = MarkedDb()
    pack, keeper.pack = keeper.pack, marked_pack
    print("ready", flush=True)
    while True:
        fd = keeper.take_lock(path)
        if fd >= 0:
            keeper.serve(path, fd)  # (closes fd)
        time.sleep(0.02)


def _cli(path: Path, folder: Path, tag: str, seed: int) -> None:
    """Lookup commands in a loop; `<tag>.cli` logs each one's start and, once it exited 0, its query id."""
    rng = random.Random(seed)
    log = os.open(folder / f"{tag}.cli", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    errors = os.open(folder / f"{tag}.cli-stderr", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    print("ready", flush=True)
    for n in range(1, 2**31):
        query_id = f"{CLI_PREFIX}{tag}-{n}"
        os.write(log, f"start {query_id}\n".encode())
        command = subprocess.Popen([sys.executable, "-m", "retrieval", "lookup", f"{query_id} {rng.choice(CLI_WORDS)}",
                                    "--traces", str(path), "--kb", str(KB), "--compact"], cwd=ROOT,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors,
                                   start_new_session=True)
        code = command.wait()
        os.write(log, (f"ok {query_id}\n" if code == 0 else f"fail {query_id} exited {code}\n").encode())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "writer":
        _writer(Path(argv[1]), Path(argv[2]), argv[3], int(argv[4]))
    if argv and argv[0] == "drainer":
        _drainer(Path(argv[1]))
    if argv and argv[0] == "keeper":
        _keeper(Path(argv[1]), Path(argv[2]), argv[3], int(argv[4]))
    if argv and argv[0] == "real-keeper":
        _real_keeper(Path(argv[1]), Path(argv[2]), argv[3])
    if argv and argv[0] == "cli":
        _cli(Path(argv[1]), Path(argv[2]), argv[3], int(argv[4]))
    parser = argparse.ArgumentParser(description="The SIGKILL soak of the trace file (long form).")
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", default=None, help="where the trace file goes (default: a temporary folder)")
    parser.add_argument("--real-keeper", action="store_true",
                        help="the keeper role runs the real keeper, CHECKPOINT included (kills may land inside it)")
    args = parser.parse_args(argv)
    import tempfile

    folder = Path(args.folder or tempfile.mkdtemp(prefix="trace-soak-"))
    folder.mkdir(parents=True, exist_ok=True)
    result = run_soak(folder, kills=args.kills, seed=args.seed, real_keeper=args.real_keeper)
    print(json.dumps(result.__dict__, indent=2))
    return 0 if result.ok() else 1


if __name__ == "__main__":
    raise SystemExit(main())
