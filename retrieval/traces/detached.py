"""Helper processes that outlive their caller: started as `python -S -m MODULE` in a new session, and their
standard streams let go of, so a kill of the caller never reaches them and a caller waiting for its output
to close (a shell's `$(…)`, `subprocess.run`) never waits for them.

Three run this way: the keeper (keeper.py), the lookup command's helper (command_helper.py, when it is not
forked) and the fold before a compaction (fold.py, run by compact.py).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path


def launch(module: str, *args: str, pipes: bool = False) -> subprocess.Popen[str]:
    """Start `python -S -m module args…` in a new session: `-S` skips `site` and its .pth files (a large share
    of a start), so the child gets this process's sys.path, with the folder this package is in. With `pipes`
    its stdin and stdout are pipes to this process (text), else /dev/null; its stderr is always /dev/null."""
    holder = str(Path(__file__).resolve().parents[2])  # the folder holding `retrieval`
    paths = [holder, *(p for p in sys.path if p)]
    stream = subprocess.PIPE if pipes else subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "-S", "-m", module, *args], start_new_session=True,
                            stdin=stream, stdout=stream, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})


def detach_stdio(*fds: int) -> None:
    """Point the standard streams `fds` (default all three) at /dev/null: a helper must not hold its caller's
    terminal or pipes open."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in fds or (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
