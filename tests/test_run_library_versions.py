"""Every evaluation run records the versions of the libraries that decide its numbers, and `compare_runs`, the
`eval compare` CLI and the Compare page warn when two runs differ in them (a warning, never a refusal); a run
stored without them reads as "not recorded". Runs are real runs on the sample knowledge base (data/) in a real
DuckDB file; a run "made on another machine" is one whose stored versions are changed with SQL."""

from __future__ import annotations

import json
import platform
import shutil
from importlib import metadata
from pathlib import Path

import duckdb
from streamlit.testing.v1 import AppTest

from appui.data import replay
from eval import cli, compare, replays, runs
from eval.datasets import load_dataset
from eval.parallel.fanout import run_parallel
from eval.parallel.pool import Pool
from eval.reports import render
from eval.versions import WORKERS_KEY, worker_mismatch
from retrieval import LookupConfig, TraceStore, lookup_knowledge
from retrieval.lookup import LIBRARIES, library_versions
from tests.app_helpers import APP, ok
from tests.kb_fixture import write_kb
from tests.parallel_helpers import ROOT, write_many

CONFIG = LookupConfig(svd_dims=16)
SAMPLE = 12  # questions of data/queries.jsonl per run: enough to compare, quick to run
OLD_NUMPY = "1.26.4"  # numpy 2 is the oldest we allow, so never the installed one
OTHER_SKLEARN = "0.24.2"  # older than any scikit-learn we allow (the oldest-versions CI job installs 1.5.0)


def _installed() -> dict[str, str | None]:
    """What importlib.metadata says, library by library (Python from the interpreter)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in LIBRARIES[1:]:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _set_stored_version(path: Path, run_id: str, library: str, version: str) -> None:
    """Change one run's recorded version in the trace file, as a run made on another machine would have it."""
    with TraceStore(path).connect() as con:
        con.execute("UPDATE eval_run SET library_versions = ? WHERE run_id = ?",
                    [json.dumps({**library_versions(), library: version}), run_id])


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_run_records_all_eight_library_versions_as_importlib_metadata_reports_them(store):
    dataset = load_dataset(ROOT / "data").sample(SAMPLE)
    result = runs.run_evaluation(dataset, CONFIG, store=store, baseline=False, oracle=False)
    expected = _installed()
    assert list(expected) == ["python", "numpy", "scipy", "scikit-learn", "duckdb", "rank-bm25", "wordllama",
                              "PyStemmer"]
    assert result.library_versions == expected == library_versions()
    assert all(expected[name] for name in expected)  # every one is installed with the project
    stored = store.query("SELECT library_versions FROM eval_run WHERE run_id = ?", [result.run_id])
    assert json.loads(stored["library_versions"][0]) == expected  # in the eval_run row, not only in memory
    assert result.to_dict()["library_versions"] == expected
    assert f"numpy {expected['numpy']}" in render(result, "markdown")


def test_two_runs_differing_only_in_a_recorded_library_version_are_flagged_by_compare_runs(run_pair):
    store, a, b = run_pair  # two runs of the same questions with the same settings on data/
    _set_stored_version(store.path, b, "numpy", OLD_NUMPY)
    comparison = compare.compare_runs(store, a, b)
    assert comparison.config_diff == {}  # the settings are the same: only the library differs
    assert comparison.library_diff == {"numpy": [metadata.version("numpy"), OLD_NUMPY]}
    (note,) = comparison.library_notes()
    assert note.level == "warning"
    assert note.line() == (f"warning: runs used different library versions (numpy {metadata.version('numpy')} vs "
                           f"{OLD_NUMPY}; A vs B): metric differences may come from the libraries, not the settings")
    assert comparison.to_dict()["library_diff"] == {"numpy": [metadata.version("numpy"), OLD_NUMPY]}
    assert comparison.metrics  # compared all the same: a warning, not a refusal


def test_the_eval_compare_cli_warns_when_library_versions_differ(run_pair, capsys):
    store, a, b = run_pair  # two runs of the same questions with the same settings on data/
    _set_stored_version(store.path, a, "scikit-learn", OTHER_SKLEARN)
    warning = (f"warning: runs used different library versions (scikit-learn {OTHER_SKLEARN} vs "
               f"{metadata.version('scikit-learn')}; A vs B)")
    code, out, err = _cli(["compare", a, b, "--traces", store.path], capsys)
    assert code == 0 and warning in err
    assert warning in out  # the Markdown report says it too
    code, out, err = _cli(["compare", a, b, "--traces", store.path, "--json"], capsys)
    assert code == 0 and warning in err
    shown = json.loads(out)
    assert shown["library_diff"] == {"scikit-learn": [OTHER_SKLEARN, metadata.version("scikit-learn")]}
    assert shown["library_notes"][0].startswith(warning)


def test_identical_library_versions_give_no_warning(run_pair, capsys):
    store, a, b = run_pair  # two runs of the same questions with the same settings on data/
    comparison = compare.compare_runs(store, a, b)
    assert comparison.library_diff == {} and comparison.library_notes() == []
    assert comparison.library_versions == (library_versions(), library_versions())
    code, out, err = _cli(["compare", a, b, "--traces", store.path], capsys)
    assert code == 0 and "library" not in err and "library versions" not in out


def test_a_run_stored_without_library_versions_gives_a_not_recorded_note(tmp_path, run_pair, capsys):
    store, a, b = run_pair  # two runs of the same questions with the same settings on data/
    store.close()
    # the file as the previous schema (v7) left it: no library_versions column; opening it adds the column
    with duckdb.connect(str(store.path)) as con:
        con.execute("ALTER TABLE eval_run DROP COLUMN library_versions")
        con.execute("DELETE FROM schema_version WHERE version >= 8")
    old = tmp_path / "v7.duckdb"
    shutil.copy(store.path, old)
    older = TraceStore(old)
    with older.connect() as con:  # B stored since, with its versions; A's row stays null
        con.execute("UPDATE eval_run SET library_versions = ? WHERE run_id = ?", [json.dumps(library_versions()), b])
    assert older.query("SELECT library_versions FROM eval_run WHERE run_id = ?", [a])["library_versions"].isna().all()
    assert runs.load_run(older, a).library_versions is None
    comparison = compare.compare_runs(older, a, b)
    assert comparison.library_diff == {}  # unknown is not a difference
    (note,) = comparison.library_notes()
    assert note.level == "note" and f"library versions were not recorded for run A ({a})" in note.text
    code, out, err = _cli(["compare", a, b, "--traces", old], capsys)
    assert code == 0 and f"note: library versions were not recorded for run A ({a})" in err
    assert "warning" not in err
    assert "libraries: not recorded" in render(runs.load_run(older, a), "markdown")


def test_a_run_with_local_workers_records_the_versions_and_no_worker_difference(tmp_path, store):
    dataset = load_dataset(write_many(tmp_path / "set", 2))
    result = run_parallel(dataset, CONFIG, store=store, pool=Pool(workers=2), baseline=False, oracle=False)
    assert result.library_versions == _installed()
    assert WORKERS_KEY not in result.diagnostics  # the workers ran with the parent's libraries


def test_workers_with_other_versions_are_named_and_compared_with_a_warning(run_pair):
    parent = library_versions()
    other = {**parent, "numpy": OLD_NUMPY}
    assert worker_mismatch(parent, [parent, None, parent]) == {}
    assert worker_mismatch(parent, [parent, other, {**other, "scipy": None}]) == {
        "numpy": [OLD_NUMPY], "scipy": ["not installed"]}
    store, a, b = run_pair  # two runs of the same questions with the same settings on data/
    # a Dask run whose workers had another numpy stores it in its diagnostics (eval.parallel.fanout)
    with store.connect() as con:
        con.execute("UPDATE eval_run SET diagnostics = json_merge_patch(diagnostics, ?) WHERE run_id = ?",
                    [json.dumps({WORKERS_KEY: {"numpy": [OLD_NUMPY]}}), b])
    comparison = compare.compare_runs(store, a, b)
    assert comparison.library_diff == {}  # the runs' own (parent) versions agree
    assert [n.line() for n in comparison.library_notes()] == [
        f"warning: run B ({b}) looked up on workers with other library versions than it recorded (numpy {OLD_NUMPY})"]


def test_a_saved_replay_records_the_versions_and_its_recorded_calls_say_not_recorded(store, index):
    on_index = LookupConfig(svd_dims=64)  # the `index` fixture's dimensions
    for query in ("rotate an API token", "download invoices"):
        lookup_knowledge(query, index=index, config=on_index, recorder=store)
    calls = replay.recorded_calls(store, limit=20)
    run_id = replay.new_run_id()
    replay.replay(calls, index=index, config=on_index, store=store, run_id=run_id)
    a, b = replays.save_replay_run(store, run_id, calls, index=index, config=on_index.to_dict(), source_run=None)
    assert runs.load_run(store, b).library_versions == _installed()
    assert runs.load_run(store, a).library_versions is None  # made earlier, by a process no row describes
    notes = compare.compare_runs(store, a, b).library_notes()
    assert [n.level for n in notes] == ["note"] and f"run A ({a})" in notes[0].text


def test_a_library_a_run_did_not_name_reads_not_recorded_and_one_recorded_as_none_not_installed(run_pair):
    store, a, b = run_pair  # two runs of the same questions with the same settings on data/
    with store.connect() as con:  # B made with another list of libraries, and without PyStemmer installed
        con.execute("UPDATE eval_run SET library_versions = ? WHERE run_id = ?",
                    [json.dumps({**{k: v for k, v in library_versions().items() if k != "wordllama"},
                                 "PyStemmer": None}), b])
    comparison = compare.compare_runs(store, a, b)
    assert comparison.library_diff == {"wordllama": [metadata.version("wordllama"), None],
                                       "PyStemmer": [metadata.version("PyStemmer"), None]}
    (note,) = comparison.library_notes()
    assert (f"wordllama {metadata.version('wordllama')} vs not recorded, PyStemmer {metadata.version('PyStemmer')} "
            "vs not installed; A vs B") in note.text


def test_the_compare_page_warns_when_the_runs_library_versions_differ(stored, tmp_path, monkeypatch):
    traces = tmp_path / "traces.duckdb"
    shutil.copy(stored["traces"], traces)
    changed = stored["sweep"][1]
    _set_stored_version(traces, changed, "numpy", OLD_NUMPY)
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_KB", str(write_kb(tmp_path / "kb")))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(traces))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at = ok(at.switch_page("appui/pages/compare.py").run())
    assert {at.selectbox(key="eval_run_a").value, at.selectbox(key="eval_run_b").value} == set(stored["sweep"])
    warnings = [w.value for w in at.warning if "different library versions" in w.value]
    assert len(warnings) == 1 and "numpy" in warnings[0] and OLD_NUMPY in warnings[0]
    assert metadata.version("numpy") in warnings[0]
    assert any("Metric deltas" in m.value for m in at.markdown)  # still compared: a warning, not a refusal


def test_the_compare_page_says_nothing_of_libraries_when_they_agree(app):
    assert not [w.value for w in app.warning if "library versions" in w.value]
    assert not [c.value for c in app.caption if "library versions" in c.value]


def test_runs_on_different_knowledge_bases_are_compared_with_a_warning(store, tmp_path, capsys):
    """As for library versions: the CLI compares the pair and says the pages may have moved the metrics."""
    copy = tmp_path / "copy" / "data"
    shutil.copytree(ROOT / "data", copy)
    page = next(iter(sorted((copy / "kb").rglob("*.md"))))
    page.write_text(page.read_text(encoding="utf-8") + "\n\nOne more sentence, so the base differs.\n",
                    encoding="utf-8")
    ids = [runs.run_evaluation(load_dataset(folder).sample(SAMPLE), CONFIG, store=store, baseline=False,
                               oracle=False).run_id for folder in (ROOT / "data", copy)]
    comparison = compare.compare_runs(store, *ids)
    fingerprints = comparison.kb_fingerprints
    assert all(fingerprints) and fingerprints[0] != fingerprints[1]
    assert [note.level for note in comparison.base_notes()] == ["warning"]
    code, _out, err = _cli(["compare", *ids, "--traces", store.path], capsys)
    assert code == 0 and "different knowledge bases" in err and fingerprints[0][:12] in err
    same = compare.compare_runs(store, ids[0], ids[0])
    assert same.base_notes() == [] and "different knowledge bases" not in json.dumps(same.to_dict())
