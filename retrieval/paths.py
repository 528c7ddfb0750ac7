"""Default locations: the sample knowledge base shipped in `data/` and the trace file in the working folder.

`$LOOKUP_KNOWLEDGE_TRACES` names the trace file, or a folder of trace files, or several of either separated by
the path separator (`:`): readers (the app, eval, `traces` commands) read them all as one
(retrieval/traces/sources.py), and a writer writes the first, in a folder as `<host tag>.duckdb`, so hosts
sharing a folder each write their own.
"""

from __future__ import annotations

import os
from pathlib import Path

from retrieval.traces.rows import host_tag

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_KB = PROJECT_ROOT / "data" / "kb"
SAMPLE_QUERIES = PROJECT_ROOT / "data" / "queries.jsonl"
TRACES_ENV = "LOOKUP_KNOWLEDGE_TRACES"


def default_kb() -> Path:
    """`$LOOKUP_KNOWLEDGE_KB`, else the sample knowledge base in `data/kb`."""
    return Path(os.environ.get("LOOKUP_KNOWLEDGE_KB") or SAMPLE_KB)


def default_traces() -> Path:
    """The trace file this process writes: `$LOOKUP_KNOWLEDGE_TRACES` (its first entry when it names several;
    `<host tag>.duckdb` in it when that is a folder), else `traces.duckdb` in the working folder."""
    entries = _entries()
    if not entries:
        return Path("traces.duckdb")
    first = entries[0]
    return first / f"{host_tag()}.duckdb" if first.is_dir() else first


def trace_sources() -> tuple[Path, ...]:
    """What readers read as one: every entry of `$LOOKUP_KNOWLEDGE_TRACES` (a folder stands for its `*.duckdb`
    files), with the file this process writes; else `default_traces()` alone."""
    entries = _entries()
    written = default_traces()
    return (written,) if not entries else tuple(dict.fromkeys([*entries, written]))


def _entries() -> list[Path]:
    value = os.environ.get(TRACES_ENV) or ""
    return [Path(entry) for entry in value.split(os.pathsep) if entry.strip()]
