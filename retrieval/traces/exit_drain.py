"""A one-shot command's trace drain, prepared in a helper process while the command works.

Importing DuckDB and opening the trace file take about 0.2 s, as long as a whole traced lookup's
overhead may be. So `python -m retrieval lookup` starts this module as a child process first: the child
imports DuckDB, checks and migrates the file, and waits, beside the lookup, on a second core. When
the row is spooled, the command asks it to drain and waits for its one-line answer; its row is in the
table when the command exits. The protocol is one line each way: the child says `ready` (or `error:
…` for a file it cannot use), then on `drain` answers `ok`, `locked: …` or `error: …`.

`python -m retrieval` forks the helper before its own heavy imports (`prestart`), and the helper keeps
its connection for up to HOLD seconds while it waits, so the drain after the lookup is only the insert.
Like every connection of this project, the helper's commits go to DuckDB's write-ahead log
(`<file>.wal`), which every DuckDB client reads when it opens the file; a detached process folds it into
the file once it grows (trace_checkpoint).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

OK, LOCKED, ERROR, FAILED = "ok", "locked", "error", "failed"
HOLD = 1.0  # seconds the helper keeps the file open waiting for the drain (other processes wait that long)
LOCK_TIMEOUT = 10.0  # the trace writer's default
_prestarted: dict[tuple[str, float], ExitDrain] = {}


@dataclass(frozen=True)
class Outcome:
    """How the helper's drain went: `ok`, `locked` or `error` with its one-line message, or `failed`
    (the helper did not answer: the caller drains in-process instead)."""

    status: str
    message: str = ""


def prestart(argv: list[str]) -> None:
    """Fork the helper for a traced `lookup` command line before the command's imports (a light look at
    the flags; `take` hands the helper to the command, and a command line argparse refuses just lets it go).
    Forking is safe here: the process has no thread and no DuckDB state yet, and the child skips Python's
    start-up (0.1-0.2 s)."""
    if not argv or argv[0] != "lookup" or "--no-trace" in argv or "-h" in argv or "--help" in argv:
        return
    from retrieval.paths import default_traces

    flags = {"--traces": str(default_traces()), "--lock-timeout": repr(LOCK_TIMEOUT)}
    for i, arg in enumerate(argv):
        name, equals, value = arg.partition("=")
        if name in flags:
            flags[name] = value if equals else (argv[i + 1] if i + 1 < len(argv) else flags[name])
    try:
        timeout = float(flags["--lock-timeout"])
    except ValueError:
        return  # the command refuses the flag itself
    _prestarted[(str(Path(flags["--traces"])), timeout)] = ExitDrain(Path(flags["--traces"]), timeout, fork=True)


def take(path: Path, lock_timeout: float) -> ExitDrain:
    """The helper prestarted for `path` and `lock_timeout`, or a new one (spawned: this process may hold
    threads or DuckDB state, which a fork must not copy)."""
    return _prestarted.pop((str(path), float(lock_timeout)), None) or ExitDrain(path, lock_timeout)


class ExitDrain:
    """The parent's side: start the helper early, `finish()` once the rows are spooled."""

    def __init__(self, path: Path, lock_timeout: float, *, fork: bool = False) -> None:
        self.path = path
        self._pid, self._reader, self._writer = 0, None, None
        self._popen: subprocess.Popen[str] | None = None
        try:
            (self._fork if fork else self._spawn)(float(lock_timeout))
        except OSError:
            self.close()

    def _fork(self, lock_timeout: float) -> None:
        to_child, from_parent = os.pipe()[::-1]
        to_parent, from_child = os.pipe()[::-1]
        pid = os.fork()
        if pid == 0:  # the child: serve, then leave without running the parent's exit handlers
            code = 1
            try:
                os.nice(10)  # the command's own work comes first; this one fills the gaps until it is needed
                os.close(to_child)
                os.close(from_child)
                with os.fdopen(from_parent, "r") as requests, os.fdopen(to_parent, "w") as answers:
                    code = _serve(self.path, lock_timeout, requests, answers)
            finally:
                os._exit(code)
        os.close(from_parent)
        os.close(to_parent)
        self._pid = pid
        self._reader, self._writer = os.fdopen(from_child, "r"), os.fdopen(to_child, "w")

    def _spawn(self, lock_timeout: float) -> None:
        # -S skips `site` and its .pth files (a large share of a start); the child gets this process's
        # sys.path instead, with the folder this package is in
        holder = Path(__file__).resolve().parents[2]  # the folder holding `retrieval`
        paths = [str(holder), *(p for p in sys.path if p)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        child = subprocess.Popen([sys.executable, "-S", "-m", "retrieval.traces.exit_drain", str(self.path),
                                  repr(lock_timeout)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                 env=env)
        self._pid, self._reader, self._writer = child.pid, child.stdout, child.stdin
        self._popen = child  # waited for by close()

    def finish(self, timeout: float = 120.0) -> Outcome:
        """Ask the helper to drain and wait for its answer (the first error it reported, if any)."""
        if self._reader is None or self._writer is None:
            return Outcome(FAILED, "the drain helper did not start")
        try:
            first = self._reader.readline().strip()
            if first != "ready":
                outcome = _parsed(first)
            else:
                self._writer.write("drain\n")
                self._writer.flush()
                outcome = _parsed(self._reader.readline().strip())
        except (OSError, ValueError) as exc:
            outcome = Outcome(FAILED, f"the drain helper stopped: {exc}")
        # the helper closed the file before it answered: the command need not wait for it to exit
        self.close(timeout if outcome.status == FAILED or self._popen is not None else 0.0)
        return outcome

    def close(self, timeout: float = 5.0) -> None:
        """Let the helper go (it exits when its input closes); kill it if it hangs."""
        for stream in (self._writer, self._reader):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._reader = self._writer = None
        pid, self._pid = self._pid, 0
        if self._popen is not None:  # a spawned helper: Popen collects its own child
            try:
                self._popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self._popen.kill()
                self._popen.wait()
            self._popen = None
        elif pid:
            _reap(pid, timeout)


def _reap(pid: int, timeout: float) -> None:
    """Wait for the helper to exit, up to `timeout`, then kill it; with no timeout, only collect it if it
    has exited (an answered helper exits by itself, and init collects it after this process)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        if timeout <= 0:
            return
        if time.monotonic() >= deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            return
        time.sleep(0.002)


def _parsed(line: str) -> Outcome:
    status, _, message = line.partition(": ")
    if status in (OK, LOCKED, ERROR):
        return Outcome(status, message)
    return Outcome(FAILED, f"the drain helper answered {line!r:.80}")


def _quiet_stderr() -> None:
    """Send the helper's own stderr to /dev/null: under load, a failed DuckDB open once printed a C++
    "terminate called without an active exception" at the helper's exit, a second line on the command's
    stderr after its one warning."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)


def _serve(path: Path, lock_timeout: float, requests: TextIO, answers: TextIO) -> int:
    """The child's side: open the file now (reporting a file it cannot use) and keep it open up to HOLD
    seconds; drain when asked, in that connection or a new one."""
    import select
    import warnings

    from retrieval.traces import db as trace_db
    from retrieval.traces.checkpoint import maybe_checkpoint
    from retrieval.traces.db import TraceStoreError, TraceStoreLocked, one_line
    from retrieval.traces.file import drain_into, migrate_once, spool_path
    from retrieval.traces.spool import Spool

    if not sys._xoptions.get("importtime"):  # (-X importtime's report is kept: a test reads the helper's imports)
        _quiet_stderr()  # the command's stderr is the user's: one line per problem, said by the command itself

    def say(line: str) -> None:
        answers.write(line + "\n")
        answers.flush()

    spool = Spool(spool_path(path))
    con = None

    def opened(timeout: float) -> Any:
        """A connection to `path`, checked and migrated (DuckDB's connection type is not imported here)."""
        con = trace_db.connect(path, timeout=timeout, threads=1)  # refuses a foreign file first
        migrate_once(con, path, force=True)
        return con

    try:  # the folder, as the command's TraceWriter makes it: the forked helper may get here first
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        say(f"{ERROR}: cannot create the folder of trace file {path}: {exc}")
        return 0
    try:
        con = opened(min(lock_timeout, HOLD))
    except TraceStoreLocked:
        pass  # held by another process now; the drain waits for it
    except TraceStoreError as exc:
        say(f"{ERROR}: {one_line(exc)}")
        return 0
    say("ready")
    if con is not None and not select.select([requests], [], [], HOLD)[0]:
        con.close()  # the command is slow (an index build): let other processes in meanwhile
        con = None
    if requests.readline().strip() != "drain":
        return 0  # the parent went away without rows to drain
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if con is None:
                con = opened(lock_timeout)
            drain_into(con, path, spool, deque())
            con.close()
        maybe_checkpoint(path)
    except TraceStoreLocked as exc:
        say(f"{LOCKED}: {one_line(exc)}")
        return 0
    except TraceStoreError as exc:
        say(f"{ERROR}: {one_line(exc)}")
        return 0
    notes = "; ".join(one_line(w.message) for w in caught)
    say(f"{OK}: {notes}" if notes else OK)
    return 0


if __name__ == "__main__":
    raise SystemExit(_serve(Path(sys.argv[1]), float(sys.argv[2]), sys.stdin, sys.stdout))
