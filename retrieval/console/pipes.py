"""What every command-line entry point does at its edge: end quietly when the reader of its output goes away.

`python -m retrieval lookup … | head -1` closes the pipe after one line; the command's next write then raises
BrokenPipeError. That is the reader's choice, not a failure of the command, so the entry points (`python -m
retrieval`, `python -m eval` and the `lookup-knowledge` console script) run their work through
`quiet_when_reader_leaves`: no traceback, stdout pointed at /dev/null so the interpreter's own flush at exit
cannot complain either, and status 141 (128 + SIGPIPE), what a shell reports for `cat` or `grep` stopped the
same way. The recipe is Python's own ("Note on SIGPIPE" in the `signal` module's documentation).

Whatever the command did before writing stays done: a lookup's trace row is recorded (and shown in the trace
file) before its result is printed.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence

CLOSED_PIPE_STATUS = 141  # 128 + SIGPIPE (13)

Main = Callable[[Sequence[str] | None], int]


def quiet_when_reader_leaves(main: Main, argv: Sequence[str] | None = None) -> int:
    """`main(argv)`'s status, its output flushed before returning; CLOSED_PIPE_STATUS, quietly, when the reader
    of stdout closed the pipe before the command finished writing."""
    try:
        status = main(argv)
        sys.stdout.flush()  # here, not at interpreter exit, so a closed pipe is caught here
        return status
    except BrokenPipeError:
        _stdout_to_devnull()
        return CLOSED_PIPE_STATUS


def _stdout_to_devnull() -> None:
    """Point stdout's file descriptor at /dev/null: what is still buffered is dropped without another error."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
