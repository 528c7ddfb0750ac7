"""The lookup command's helper: a process that checks the trace file while the command looks up, makes the
command's row visible before the command exits, then stays on as the file's keeper.

Importing DuckDB and opening the trace file take about 0.2 s, as long as a whole lookup. So `python -m
retrieval lookup` forks this helper first (`prestart`, before the command's own imports, while it has no
thread and no DuckDB state); the helper imports DuckDB and checks (or makes, or migrates) the file on the
other core while the command works. Once the row is spooled the command asks for a drain and waits for the
answer: the helper drains the spool into the live folder as any drain does (drain.py) and makes sure the
live view shows it, so a plain DuckDB client opened the moment the command exits sees the row, and no lock
of the command or of this helper is held by then. Then it lets go of the command's streams, leaves its
session and becomes the file's keeper (keeper.py), or exits if one runs.

The protocol is one line each way, twice. The helper says `ready`, `locked: …` (another process held the
file for the lock timeout) or `error: …` (a file it cannot use); the command answers `drain` once its row is
spooled (or just goes away). After `drain` from a helper that was ready, the helper says `drained`, or
`locked: …` when another process held the file all the while (the row then waits and arrives when it lets
go). `lookup-knowledge` (the console script) starts the helper later, as a fresh interpreter (detached.py).

The helper touches nothing on disk until the command says `open`, which it does once its input passed its
checks (the query, the flags, the knowledge base): a command that records nothing (its input was refused)
says `cancel` instead, or just goes away, and the helper exits having made no file, no folder, no lock.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from retrieval.traces.detached import detach_stdio, launch

OK, LOCKED, ERROR, FAILED = "ok", "locked", "error", "failed"
LOCK_TIMEOUT = 10.0  # the trace writer's default
_prestarted: dict[tuple[str, float], CommandHelper] = {}
_let_go: list[subprocess.Popen[str]] = []  # spawned helpers still at work after the command let them go


@dataclass(frozen=True)
class Outcome:
    """How the helper's check and drain went: `ok` (the row is visible), `locked` or `error` with its one-line
    message, or `failed` (the helper did not answer: the caller drains in-process instead)."""

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
    _prestarted[(str(Path(flags["--traces"])), timeout)] = CommandHelper(Path(flags["--traces"]), timeout, fork=True)


def release_prestarted() -> None:
    """Cancel the prestarted helpers the command did not take (argparse or the command refused its input before
    the lookup): they exit having made nothing."""
    while _prestarted:
        _prestarted.popitem()[1].cancel()


def take(path: Path, lock_timeout: float) -> CommandHelper:
    """The helper prestarted for `path` and `lock_timeout`, or a new one (spawned: this process may hold
    threads or DuckDB state, which a fork must not copy)."""
    prestarted = _prestarted.pop((str(path), float(lock_timeout)), None)
    return prestarted if prestarted is not None else CommandHelper(path, lock_timeout)


class CommandHelper:
    """The command's side: start the helper early, `finish()` once the rows are spooled."""

    def __init__(self, path: Path, lock_timeout: float, *, fork: bool = False) -> None:
        self.path = path
        self._opened = False
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
                os.close(to_child)
                os.close(from_child)
                detach_stdio(0, 1)  # the command's caller waits for its stdout to close, never for this helper
                with os.fdopen(from_parent, "r") as requests, os.fdopen(to_parent, "w") as answers:
                    code = _serve(self.path, lock_timeout, requests, answers)
            finally:
                os._exit(code)
        os.close(from_parent)
        os.close(to_parent)
        self._pid = pid
        self._reader, self._writer = os.fdopen(from_child, "r"), os.fdopen(to_child, "w")

    def _spawn(self, lock_timeout: float) -> None:
        child = launch("retrieval.traces.command_helper", str(self.path), repr(lock_timeout), pipes=True)
        self._pid, self._reader, self._writer = child.pid, child.stdout, child.stdin
        self._popen = child  # waited for by close()

    def open(self) -> None:
        """The command's input is good: the helper may make and check the trace file now (beside the lookup)."""
        self._say("open")

    def finish(self) -> Outcome:
        """Read the helper's answer about the file, tell it the row is spooled and, when the file was ready, wait
        until the helper has drained it and the live view shows it."""
        if self._reader is None or self._writer is None:
            return Outcome(FAILED, "the drain helper did not start")
        try:
            self.open()
            outcome = _parsed(self._reader.readline().strip())
            if outcome.status != ERROR:
                self._writer.write("drain\n")
                self._writer.flush()
            if outcome.status == OK:
                outcome = _parsed(self._reader.readline().strip(), done="drained")
        except (OSError, ValueError) as exc:
            outcome = Outcome(FAILED, f"the drain helper stopped: {exc}")
        self.close()
        return outcome

    def cancel(self) -> None:
        """The command recorded nothing: the helper, told before it made anything, exits; then close."""
        if not self._opened:
            self._say("cancel")
        self.close()

    def _say(self, request: str) -> None:
        """Send `open` (once) or `cancel`; a helper that is gone is left to `finish`, which reports it."""
        if self._writer is None or (request == "open" and self._opened):
            return
        self._opened = self._opened or request == "open"
        with contextlib.suppress(OSError, ValueError):
            self._writer.write(request + "\n")
            self._writer.flush()

    def close(self) -> None:
        """Let the helper go: it keeps working as the file's keeper, or exits, on its own (a helper that
        answered `error` exits at once and is collected if it has)."""
        for stream in (self._writer, self._reader):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._reader = self._writer = None
        pid, self._pid = self._pid, 0
        if self._popen is not None:
            if self._popen.poll() is None:  # working on as the keeper: kept referenced, so that dropping it
                _let_go.append(self._popen)  # does not warn "subprocess … is still running" on the command's stderr
            self._popen = None
        elif pid:
            _reap(pid)


def _reap(pid: int) -> None:
    """Collect the forked helper if it has exited (an exited child must not stay a zombie of a long-lived
    caller); a helper still working is left alone, and init collects it after this process."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _parsed(line: str, done: str = "ready") -> Outcome:
    if line == done:
        return Outcome(OK)
    status, _, message = line.partition(": ")
    if status in (OK, LOCKED, ERROR):
        return Outcome(status, message)
    return Outcome(FAILED, f"the drain helper answered {line!r:.80}")


def _serve(path: Path, lock_timeout: float, requests: TextIO, answers: TextIO) -> int:
    """The helper's side: check the file now and say how it is; once the command has spooled its row, drain it
    and say so; then become the file's keeper, or leave the rest to the keeper that runs."""
    from collections import deque

    from retrieval.traces import keeper
    from retrieval.traces.db import TraceStoreError, TraceStoreLocked, one_line
    from retrieval.traces.drain import drain_once
    from retrieval.traces.fold import open_checked, open_folded
    from retrieval.traces.parts import warm_up
    from retrieval.traces.spool import Spool, spool_path
    from retrieval.traces.view import is_marked_live, part_files

    if not sys._xoptions.get("importtime"):  # (-X importtime's report is kept: a test reads the helper's imports)
        # the command's stderr is the user's: one line per problem, said by the command itself (under load, a
        # failed DuckDB open once printed a C++ "terminate called without an active exception" at exit)
        detach_stdio(2)

    def say(line: str) -> None:
        answers.write(line + "\n")
        answers.flush()

    if requests.readline().strip() != "open":  # `cancel`, or the command went away: nothing is made
        return 0
    try:  # the folder, as the command's TraceWriter makes it: the forked helper may get here first
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        say(f"{ERROR}: cannot create the folder of trace file {path}: {exc}")
        return 0
    ready = False
    try:
        if not (keeper.running(path) and is_marked_live(path)):  # (a writing session's file was checked already)
            open_checked(path, timeout=lock_timeout, force=True)
        say("ready")
        ready = True
        warm_up()  # while the command looks up: its drain, waited for, then only writes the part
    except TraceStoreLocked as exc:
        say(f"{LOCKED}: {one_line(exc)}")  # the row waits for the holder; the keeper adds it when it lets go
    except TraceStoreError as exc:
        say(f"{ERROR}: {one_line(exc)}")
        return 0
    asked = requests.readline().strip() == "drain"  # the row is spooled (or the command went away)
    if ready and asked:
        spool = Spool(spool_path(path))
        try:
            drained = drain_once(path, spool, deque(), show_wait=lock_timeout, turn_wait=lock_timeout)
            if drained.shown and len(part_files(path)) > keeper.MAX_LIVE_PARTS:
                # a session of many commands: the keeper would fold the oldest parts the moment this command
                # exits, as its caller's reader opens; fold them now (no checkpoint: only the keeper does that)
                with open_folded(path, spool, deque(), timeout=lock_timeout):
                    pass
            say("drained" if drained.shown else f"{LOCKED}: trace file {path} is locked by {drained.held_by} for "
                                                f"over {lock_timeout:.1f}s")
        except (TraceStoreError, OSError) as exc:
            say(f"{ERROR}: {one_line(exc)}")
        finally:
            spool.close()
    for stream in (requests, answers):
        with contextlib.suppress(OSError):
            stream.close()
    detach_stdio()  # now: the command's caller waits for its stdout and stderr to close, not for this
    fd = keeper.take_lock(path)
    if fd < 0:
        return 0  # a keeper is at work: it drains what comes next (it looks at the spool again before it lets go)
    with contextlib.suppress(OSError):
        os.setsid()  # the command's terminal and process group may go; the keeper stays
    return keeper.serve(path, fd)


if __name__ == "__main__":
    raise SystemExit(_serve(Path(sys.argv[1]), float(sys.argv[2]), sys.stdin, sys.stdout))
