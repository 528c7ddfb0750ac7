"""What the command-line entry points (`python -m retrieval`, `python -m eval`, `lookup-knowledge`) share at
their edge: ending quietly when the reader of their output goes away (`| head -1`)."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "pipes": "CLOSED_PIPE_STATUS quiet_when_reader_leaves",
})
