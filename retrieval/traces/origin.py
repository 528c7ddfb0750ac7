"""Where a trace row comes from: the host tag and the process id every recorded row carries (schema v9).

The host tag is `$LOOKUP_KNOWLEDGE_HOST` when set (a stable name for a machine, a container or a test's
pretend host), else the machine's host name. Several trace files read as one (trace_sources) keep these
columns, so each row still says which host and which process wrote it.
"""

from __future__ import annotations

import functools
import os
import socket

HOST_ENV = "LOOKUP_KNOWLEDGE_HOST"


def host_tag() -> str:
    """`$LOOKUP_KNOWLEDGE_HOST`, else this machine's host name (read on every call: cheap, and a test may set it)."""
    return os.environ.get(HOST_ENV) or _hostname()


@functools.lru_cache(maxsize=1)
def _hostname() -> str:
    return socket.gethostname() or "localhost"
