"""Issue 49 item 5: a run made from the command line in one folder is readable from another.

`python -m eval sweep --dataset set …` run in a folder recorded `set` and `set/kb` as typed, so the app, started
elsewhere, could not read the run's labels again ("knowledge-base root not found: set/set/kb") and the judging
queue fell back to the stored relevant pages at grade 1 without a word. Runs now record absolute paths; a run
stored before is read through the folder its lookups recorded, or says plainly that its knowledge base is not
found and how to fix it.

Real processes for the runs (cwd a temporary folder, the dataset given relative to it), a real trace file; the
reading is done from the test's own working folder, which is another one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from eval import holes
from eval.run_labels import run_labels
from eval.storage import load_per_query, load_run_row
from retrieval import TraceStore
from tests.eval_helpers import write_dataset

TIMEOUT = 300
RUN_FLAGS = ["--no-progress", "--no-oracle", "--no-baseline", "--no-attribution", "--set", "svd_dims=16"]


def _sweep_from(folder: Path, traces: Path) -> list[str]:
    """`python -m eval sweep --dataset set --grid l1_enabled=true,false` run in `folder`; the two run ids."""
    write_dataset(folder / "set")
    env = {k: v for k, v in os.environ.items() if k != "LOOKUP_KNOWLEDGE_TRACES"}
    done = subprocess.run([sys.executable, "-m", "eval", "sweep", "--dataset", "set", "--grid",
                           "l1_enabled=true,false", "--traces", str(traces), *RUN_FLAGS], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    return TraceStore(traces).query("SELECT run_id FROM eval_run ORDER BY created_at")["run_id"].tolist()


def _as_stored_before(store: TraceStore, run_id: str, folder: Path) -> None:
    """Make `run_id`'s row record its paths as runs did before, relative to `folder` (the one it was made in)."""
    row = load_run_row(store, run_id)
    info = row["dataset_info"]
    for key in ("path", "kb_path", "queries_file"):
        info[key] = os.path.relpath(info[key], folder)
    with store.connect() as con:
        con.execute("UPDATE eval_run SET dataset_path = ?, dataset_info = ? WHERE run_id = ?",
                    [info["path"], json.dumps(info), run_id])


def test_sweep_made_in_another_folder_records_absolute_paths(tmp_path: Path) -> None:
    traces = tmp_path / "traces.duckdb"
    ids = _sweep_from(tmp_path / "work", traces)
    store = TraceStore(traces)
    for run_id in ids:
        row = load_run_row(store, run_id)
        assert row["dataset_path"] == str((tmp_path / "work" / "set").resolve())
        assert row["dataset_info"]["kb_path"] == str((tmp_path / "work" / "set" / "kb").resolve())
        assert row["dataset_info"]["queries_file"] == str((tmp_path / "work" / "set" / "queries.jsonl").resolve())


def test_judging_queue_of_a_sweep_made_in_another_folder_reads_its_labels_again(tmp_path: Path) -> None:
    traces = tmp_path / "traces.duckdb"
    run_a, run_b = _sweep_from(tmp_path / "work", traces)
    assert Path.cwd() != tmp_path / "work"
    queue = holes.judging_queue(TraceStore(traces), run_a, run_b)
    assert queue.labels.startswith(f"read again from {(tmp_path / 'work' / 'set').resolve()}"), queue.labels
    assert queue.labels_warning == ""


def test_run_stored_with_relative_paths_is_read_through_the_folder_its_lookups_recorded(tmp_path: Path) -> None:
    traces = tmp_path / "traces.duckdb"
    run_a, _ = _sweep_from(tmp_path / "work", traces)
    store = TraceStore(traces)
    _as_stored_before(store, run_a, tmp_path / "work")
    row = load_run_row(store, run_a)
    assert row["dataset_path"] == "set" and row["dataset_info"]["kb_path"] == os.path.join("set", "kb")
    labels = run_labels(row, load_per_query(store, run_a), store)
    assert labels.source.startswith(f"read again from {(tmp_path / 'work' / 'set').resolve()}"), labels.source
    assert labels.warning == "" and "set/set" not in labels.source


def test_run_stored_with_relative_paths_and_no_lookups_says_its_knowledge_base_is_not_found(tmp_path: Path) -> None:
    traces = tmp_path / "traces.duckdb"
    run_a, run_b = _sweep_from(tmp_path / "work", traces)
    store = TraceStore(traces)
    _as_stored_before(store, run_a, tmp_path / "work")
    with store.connect() as con:  # its lookups are gone: the folder it was made in cannot be known
        con.execute("DELETE FROM tool_invocation WHERE run_id = ?", [run_a])
    labels = run_labels(load_run_row(store, run_a), load_per_query(store, run_a), store)
    assert "the run's knowledge base is not found" in labels.warning
    assert "open the app (or run the command) from the folder the run was made in" in labels.warning
    assert "each at grade 1" in labels.warning
    queue = holes.judging_queue(store, run_a, run_b)
    assert queue.labels_warning == labels.warning and "knowledge base is not found" in queue.sentence()


def test_a_run_stored_with_relative_paths_compares_with_one_stored_since_on_the_same_folder(tmp_path: Path) -> None:
    """The Compare page groups runs by dataset path: an old run's `set` and a new run's absolute path are one."""
    from appui.data import runs as runs_data
    from eval import runs

    traces = tmp_path / "traces.duckdb"
    run_a, run_b = _sweep_from(tmp_path / "work", traces)
    store = TraceStore(traces)
    _as_stored_before(store, run_a, tmp_path / "work")
    table = runs_data.run_table(store, runs.list_runs(store))
    runs_data.check_comparable(table, run_a, run_b)  # raised IncomparableRunsError before
    paths = table.set_index("run_id")["dataset_path"]
    assert paths[run_a] == paths[run_b] == str((tmp_path / "work" / "set").resolve())
