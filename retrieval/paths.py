"""Default locations: the sample knowledge base shipped in `data/` and the trace file in the working folder."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_KB = PROJECT_ROOT / "data" / "kb"
SAMPLE_QUERIES = PROJECT_ROOT / "data" / "queries.jsonl"


def default_kb() -> Path:
    """`$LOOKUP_KNOWLEDGE_KB`, else the sample knowledge base in `data/kb`."""
    return Path(os.environ.get("LOOKUP_KNOWLEDGE_KB") or SAMPLE_KB)


def default_traces() -> Path:
    """`$LOOKUP_KNOWLEDGE_TRACES`, else `traces.duckdb` in the working folder."""
    return Path(os.environ.get("LOOKUP_KNOWLEDGE_TRACES") or "traces.duckdb")
