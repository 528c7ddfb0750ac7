"""Issue 49 items 8 and 10: the command line refuses what would match nothing, and a refused command leaves nothing.

- a filter value no row can have (`traces export --filter-decision foo`) is an error listing the values; the
  help's own example (`ambiguous`) selects the rows stored as `skipped_ambiguous`;
- `lookup --category weather` is refused as the MCP tool refuses it (same words, exit 2) and the refused call is
  in the trace file when the command exits;
- a lookup refused before it looked up (`lookup ""`, a bad flag, a missing knowledge base) creates no file;
- `explain` takes `--no-trace` as `lookup` does; `python -m eval --help` ends its sentence; the library's error
  for a missing knowledge base names the function's argument where the command line's names `--kb`.

Real processes, cwd a temporary folder (so the default `traces.duckdb` would land there), real DuckDB files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from retrieval import load_knowledge_base

TIMEOUT = 180


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("LOOKUP_KNOWLEDGE_TRACES", "LOOKUP_KNOWLEDGE_KB")}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def _categories(kb_dir: Path) -> str:
    """The knowledge base's categories as the refusal lists them."""
    return ", ".join(sorted(load_knowledge_base(kb_dir).domains()))


def _trace_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if "duckdb" in p.name or p.name.startswith("traces"))


def _export(decisions_file: Path, *flags: str) -> tuple[subprocess.CompletedProcess, Path]:
    output = decisions_file.parent / "o.csv"
    done = _run(["-m", "retrieval", "traces", "export", "--traces", str(decisions_file), "--format", "csv",
                 "--output", str(output), *flags], decisions_file.parent)
    return done, output


# item 8: filters that match nothing

def test_export_filter_decision_ambiguous_selects_the_skipped_ambiguous_rows(decisions_file: Path) -> None:
    done, output = _export(decisions_file, "--filter-decision", "ambiguous")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"] == 1
    assert "skipped_ambiguous" in output.read_text()


def test_export_unknown_filter_decision_is_refused_with_the_valid_values(decisions_file: Path) -> None:
    done, output = _export(decisions_file, "--filter-decision", "foo")
    assert done.returncode == 2
    assert done.stderr.startswith("error: --filter-decision takes one of applied, skipped_no_domain, "
                                  "skipped_ambiguous, disabled, caller, got 'foo'"), done.stderr
    assert "Traceback" not in done.stderr and not output.exists()


@pytest.mark.parametrize("flag, value, valid", [("--layer", "L2", "L0+L1, L0, L1, none"),
                                                ("--l1-status", "broken", "ok, empty, failed, timeout")])
def test_export_unknown_layer_or_l1_status_is_refused(decisions_file: Path, flag: str, value: str,
                                                      valid: str) -> None:
    done, output = _export(decisions_file, flag, value)
    assert done.returncode == 2 and f"{flag} takes one of {valid}" in done.stderr, done.stderr
    assert not output.exists()


def test_export_help_example_of_filter_decision_is_a_stored_value() -> None:
    done = _run(["-m", "retrieval", "traces", "export", "--help"], Path.cwd())
    assert "skipped_ambiguous" in " ".join(done.stdout.split())


def test_lookup_with_a_category_the_base_lacks_is_refused_like_mcp_and_recorded(kb_dir: Path,
                                                                                 tmp_path: Path) -> None:
    traces = tmp_path / "t.duckdb"
    done = _run(["-m", "retrieval", "lookup", "PagerDuty", "--category", "weather", "--kb", str(kb_dir),
                 "--traces", str(traces)], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    message = f"category must be one of {_categories(kb_dir)} or omitted, got 'weather'"
    assert done.stderr.strip() == f"error: {message}"
    with duckdb.connect(str(traces), read_only=True) as con:  # opened the moment the command returned
        rows = con.execute("SELECT query, status, error FROM tool_invocation").fetchall()
    assert rows == [("PagerDuty", "error", f"ValueError: {message}")]


def test_lookup_with_a_known_category_in_another_case_is_not_refused(kb_dir: Path, tmp_path: Path) -> None:
    done = _run(["-m", "retrieval", "lookup", "PagerDuty", "--category", "Alerting", "--kb", str(kb_dir),
                 "--no-trace"], tmp_path)
    assert done.returncode == 0, done.stderr


def test_explain_with_a_category_the_base_lacks_is_refused(kb_dir: Path, tmp_path: Path) -> None:
    done = _run(["-m", "retrieval", "explain", "PagerDuty", "--category", "weather", "--source", "alerting/routing.md",
                 "--kb", str(kb_dir)], tmp_path)
    assert done.returncode == 2 and f"category must be one of {_categories(kb_dir)} or omitted" in done.stderr


# item 10: a refused lookup leaves nothing; explain --no-trace; eval --help; the library's wording

@pytest.mark.parametrize("args", [[""], ["x", "--top-k", "abc"], ["x", "--kb", "/no/such/folder"],
                                  ["x", "--l1-min-score", "7"], ["x", "--lock-timeout", "-1"]],
                         ids=["empty-query", "argparse-refusal", "missing-kb", "bad-setting", "bad-lock-timeout"])
def test_rejected_lookup_creates_no_trace_files(args: list[str], tmp_path: Path) -> None:
    done = _run(["-m", "retrieval", "lookup", *args], tmp_path)
    assert done.returncode == 2, done.stderr
    assert _trace_files(tmp_path) == []


def test_rejected_lookup_of_the_console_script_creates_no_trace_files(tmp_path: Path) -> None:
    """`lookup-knowledge` starts its helper later (a fresh interpreter), after the flags were read."""
    traces = tmp_path / "new" / "t.duckdb"
    done = _run(["-c", "import sys; from retrieval.cli import main; sys.exit(main())", "lookup", "x", "--kb",
                 "/no/such/folder", "--traces", str(traces)], tmp_path)
    assert done.returncode == 2 and "knowledge base not found" in done.stderr
    assert _trace_files(tmp_path) == [] and not traces.parent.exists()


def test_rejected_lookup_leaves_an_existing_trace_file_in_place(kb_dir: Path, tmp_path: Path) -> None:
    traces = tmp_path / "t.duckdb"
    assert _run(["-m", "retrieval", "lookup", "invoice", "--kb", str(kb_dir), "--traces", str(traces)],
                tmp_path).returncode == 0
    assert _run(["-m", "retrieval", "lookup", "x", "--kb", "/no/such/folder", "--traces", str(traces)],
                tmp_path).returncode == 2
    with duckdb.connect(str(traces), read_only=True) as con:
        assert con.execute("SELECT query FROM tool_invocation").fetchall() == [("invoice",)]


def test_explain_accepts_no_trace_as_lookup_does(kb_dir: Path, tmp_path: Path) -> None:
    done = _run(["-m", "retrieval", "explain", "invoice", "--source", "billing/invoices.md", "--kb", str(kb_dir),
                 "--no-trace", "--compact"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["query"] == "invoice"
    assert _trace_files(tmp_path) == []


def test_eval_help_ends_its_first_sentence() -> None:
    done = _run(["-m", "eval", "--help"], Path.cwd())
    description = " ".join(done.stdout.split("\n\n")[1].split())
    assert description.endswith("a thin layer over the eval library."), description


def test_library_quick_start_outside_the_repo_root_names_the_function_argument(tmp_path: Path) -> None:
    """The README's quick start, run from another folder: `data/kb` is not there. The library says what to pass
    to `open_index`; the command line, run the same way, says `--kb`."""
    done = _run(["-c", "from retrieval import open_index\nopen_index('data/kb')"], tmp_path)
    last = done.stderr.strip().splitlines()[-1]
    assert "knowledge base not found: data/kb" in last and f"relative to the working folder {tmp_path}" in last
    assert "open_index(" in last and "--kb" not in last
    cli = _run(["-m", "retrieval", "lookup", "x", "--kb", "data/kb", "--no-trace"], tmp_path)
    assert cli.returncode == 2 and "pass --kb with a folder" in cli.stderr and "open_index" not in cli.stderr
