"""A one-shot command's trace file, checked in a helper process while the command works, which then drains
the command's row in the background as the file's keeper.

Importing DuckDB and opening the trace file take about 0.2 s, as long as a whole traced lookup's
overhead may be. So `python -m retrieval lookup` starts this module as a child process first: the child
imports DuckDB, checks (and makes or migrates) the file, and says so, beside the lookup, on a second core.
When the row is spooled the command tells it and exits at once: it does not wait for a drain. The child then
becomes the file's keeper (trace_keeper) in its own session: it drains the row into the live folder, where
a plain DuckDB client sees it within about a second, and folds it into the file once writers are idle. If
another keeper runs, that one drains it; and when one runs before the command starts, no helper is started
at all: the command spools its row and leaves it to that keeper (trace_keeperlock says how neither misses
the other). The protocol is one line each way: the child says `ready`, `locked: …` (another process
held the file for the lock timeout: the row waits and arrives when it lets go) or `error: …` (a file it
cannot use); the command answers `drain` once its row is spooled (or just goes away).

`python -m retrieval` forks the helper before its own heavy imports (`prestart`); `lookup-knowledge` (the
console script) starts it later, as a fresh interpreter in a new session.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from retrieval.traces.keeperlock import running as keeper_running

OK, LOCKED, ERROR, FAILED = "ok", "locked", "error", "failed"
LOCK_TIMEOUT = 10.0  # the trace writer's default
_prestarted: dict[tuple[str, float], ExitDrain] = {}


@dataclass(frozen=True)
class Outcome:
    """How the helper's check of the file went: `ok` (it drains the row in the background), `locked` or
    `error` with its one-line message, or `failed` (the helper did not answer: the caller drains in-process
    instead)."""

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
    if keeper_running(Path(flags["--traces"])):
        return  # the keeper at work drains the row: no helper (`take` says so)
    _prestarted[(str(Path(flags["--traces"])), timeout)] = ExitDrain(Path(flags["--traces"]), timeout, fork=True)


def take(path: Path, lock_timeout: float) -> ExitDrain | None:
    """The helper prestarted for `path` and `lock_timeout`, or a new one (spawned: this process may hold
    threads or DuckDB state, which a fork must not copy); None when a keeper of the file is at work: it
    drains the row (the caller starts one after spooling if it has gone meanwhile)."""
    prestarted = _prestarted.pop((str(path), float(lock_timeout)), None)
    if prestarted is not None:
        return prestarted
    return None if keeper_running(path) else ExitDrain(path, lock_timeout)


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
                _drop_stdin_stdout()  # the command's caller waits for its stdout to close, never for this helper
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
                                 env=env, start_new_session=True)
        self._pid, self._reader, self._writer = child.pid, child.stdout, child.stdin
        self._popen = child  # waited for by close()

    def finish(self) -> Outcome:
        """Read the helper's answer about the file and tell it the row is spooled; the helper drains it after
        this process has gone (nothing here waits for a drain)."""
        if self._reader is None or self._writer is None:
            return Outcome(FAILED, "the drain helper did not start")
        try:
            outcome = _parsed(self._reader.readline().strip())
            if outcome.status != ERROR:
                self._writer.write("drain\n")
                self._writer.flush()
        except (OSError, ValueError) as exc:
            outcome = Outcome(FAILED, f"the drain helper stopped: {exc}")
        self.close()
        return outcome

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
            self._popen.poll()
            self._popen = None
        elif pid:
            _reap(pid)


def _reap(pid: int) -> None:
    """Collect the forked helper if it has exited (an exited child must not stay a zombie of a long-lived
    caller); a helper still working is left alone, and init collects it after this process."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _parsed(line: str) -> Outcome:
    if line == "ready":
        return Outcome(OK)
    status, _, message = line.partition(": ")
    if status in (OK, LOCKED, ERROR):
        return Outcome(status, message)
    return Outcome(FAILED, f"the drain helper answered {line!r:.80}")


def _drop_stdin_stdout() -> None:
    """Point the forked helper's stdin and stdout (the command's) at /dev/null: it talks through its own pipes."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)


def _quiet_stderr() -> None:
    """Send the helper's own stderr to /dev/null: under load, a failed DuckDB open once printed a C++
    "terminate called without an active exception" at the helper's exit, a second line on the command's
    stderr after its one warning."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)


def _serve(path: Path, lock_timeout: float, requests: TextIO, answers: TextIO) -> int:
    """The child's side: check the file now and say how it is; once the command has spooled its row (or gone
    away), become the file's keeper, or leave the row to the keeper that runs."""
    from retrieval.traces import keeper
    from retrieval.traces.db import TraceStoreError, TraceStoreLocked, one_line
    from retrieval.traces.file import open_checked

    if not sys._xoptions.get("importtime"):  # (-X importtime's report is kept: a test reads the helper's imports)
        _quiet_stderr()  # the command's stderr is the user's: one line per problem, said by the command itself

    def say(line: str) -> None:
        answers.write(line + "\n")
        answers.flush()

    try:  # the folder, as the command's TraceWriter makes it: the forked helper may get here first
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        say(f"{ERROR}: cannot create the folder of trace file {path}: {exc}")
        return 0
    try:
        open_checked(path, timeout=lock_timeout, force=True)
        say("ready")
    except TraceStoreLocked as exc:
        say(f"{LOCKED}: {one_line(exc)}")  # the row waits for the holder; the keeper adds it when it lets go
    except TraceStoreError as exc:
        say(f"{ERROR}: {one_line(exc)}")
        return 0
    requests.readline()  # the row is spooled (or the command went away)
    for stream in (requests, answers):
        with contextlib.suppress(OSError):
            stream.close()
    keeper.detach_stdio()  # now: the command's caller waits for its stdout and stderr to close, not for this
    fd = keeper.take_lock(path)
    if fd < 0:
        return 0  # a keeper is at work: it drains the row (it looks at the spool again before it lets go)
    with contextlib.suppress(OSError):
        os.setsid()  # the command's terminal and process group may go; the keeper stays
    return keeper.serve(path, fd)


if __name__ == "__main__":
    raise SystemExit(_serve(Path(sys.argv[1]), float(sys.argv[2]), sys.stdin, sys.stdout))
