"""`python -m retrieval traces compact`: the trace file rewritten whole, in its own storage format or in DuckDB's
v1.5.0 one, which about halves a file of real rows (issue 31: what it would take to halve the bytes a row takes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from retrieval.traces.compact import compact

ROOT = Path(__file__).resolve().parents[1]


def _rows(path: Path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:  # a plain client, as an analyst opens the file
        return con.execute("SELECT id, query, retrieval_details::VARCHAR FROM tool_invocation ORDER BY id").fetchall()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "retrieval", "traces", "compact", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def test_compact_to_storage_v1_5_keeps_every_row_and_shrinks_the_file(recorded, tmp_path):
    path = tmp_path / "traces.duckdb"
    path.write_bytes(recorded.read_bytes())
    rows = _rows(path)
    done = _cli("--traces", str(path), "--storage-version", "v1.5.0")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["storage_version"] == "v1.5.0"
    assert report["bytes_after"] < 0.75 * report["bytes_before"], report  # measured: about half
    assert _rows(path) == rows
    with duckdb.connect(str(path), read_only=True) as con:
        decisions = con.execute("SELECT count(*) FROM tool_invocation "
                                "WHERE retrieval_details->>'$.filter.decision' IS NOT NULL").fetchone()[0]
    assert decisions == len(rows)


def test_compact_keeps_the_files_own_storage_version_unless_asked(recorded, tmp_path):
    path = tmp_path / "traces.duckdb"
    path.write_bytes(recorded.read_bytes())
    compact(path, "v1.5.0")
    done = _cli("--traces", str(path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["storage_version"] == "v1.5.0"  # a later compaction does not undo it
    back = _cli("--traces", str(path), "--storage-version", "v1.0.0")
    assert back.returncode == 0 and json.loads(back.stdout)["storage_version"] == "v1.0.0", back.stderr


def test_compact_refuses_an_unknown_storage_version_and_keeps_the_file(recorded, tmp_path):
    path = tmp_path / "traces.duckdb"
    path.write_bytes(recorded.read_bytes())
    rows = _rows(path)
    with pytest.raises(ValueError, match="unknown storage version 'v9'; use one of v1.0.0, v1.5.0"):
        compact(path, "v9")
    done = _cli("--traces", str(path), "--storage-version", "v9")
    assert done.returncode == 2 and "invalid choice: 'v9'" in done.stderr
    assert _rows(path) == rows
