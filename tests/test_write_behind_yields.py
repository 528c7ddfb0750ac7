"""The cache writer yields to foreground work (retrieval/index/foreground.py): a folder written behind an update
does not start, nor advance, while an update or a lookup runs, and resumes after; `wait_for_writes` returns even
from inside foreground work, and a process exits with its write finished even when a thread never lets go."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.index import foreground
from retrieval.index.array_files import write_array
from retrieval.index.cache import MANIFEST, CachedIndex, read_cache, write_cache
from retrieval.index.digest import file_digest
from retrieval.index.foreground import Foreground, foreground_running, writer_paused, yield_to_foreground
from retrieval.index.write_behind import wait_for_writes, write_behind, writing


def _cached(kb: Path, cache: Path) -> CachedIndex:
    """A real cached index of `kb`, as an update hands it to the writer."""
    open_index(kb, cache_dir=cache)
    (folder,) = [p for p in cache.iterdir() if (p / MANIFEST).is_file()]
    cached = read_cache(folder)
    assert cached is not None
    return cached


def _until(condition, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting until {what}"
        time.sleep(0.005)


def _files(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in folder.iterdir()} if folder.exists() else {}


def _assert_same_index(folder: Path, cached: CachedIndex) -> None:
    written = read_cache(folder)
    assert written is not None and written.kb.fingerprint == cached.kb.fingerprint
    assert np.array_equal(written.l1_rows, cached.l1_rows)
    for field in dataclasses.fields(written.arrays):
        assert np.array_equal(getattr(written.arrays, field.name), getattr(cached.arrays, field.name)), field.name


def test_a_queued_folder_write_does_not_start_while_an_update_runs_and_resumes_after(kb_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(foreground, "MAX_PAUSE_S", 600.0)  # no run-beside-it-anyway within the test
    cached = _cached(kb_dir, tmp_path / "cache")
    target = tmp_path / "behind" / "folder"
    update = Foreground()
    with update:
        write_behind(target, cached)
        _until(writer_paused, "the writer waits")
        time.sleep(0.3)  # three of its looks at the state: it keeps waiting
        assert writer_paused() and writing(target)
        assert not target.parent.exists()  # not started: no temporary folder, no folder
    wait_for_writes()
    assert not writer_paused() and not writing(target)
    _assert_same_index(target, cached)


def test_a_folder_write_does_not_advance_while_foreground_work_runs(kb_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(foreground, "MAX_PAUSE_S", 600.0)
    cached = _cached(kb_dir, tmp_path / "cache")
    target = tmp_path / "written" / "folder"
    update, calls = Foreground(), []

    def checkpoint() -> None:  # an update starts at the writer's fifth checkpoint, mid-folder
        calls.append(len(calls))
        if len(calls) == 5:
            update.__enter__()
        yield_to_foreground()

    writer = threading.Thread(target=write_cache, args=(target, cached, checkpoint))
    writer.start()
    try:
        _until(lambda: len(calls) == 5 and writer_paused(), "the writer waits for the update")
        (temporary,) = target.parent.glob(".building-*")
        before = _files(temporary)
        time.sleep(0.3)
        assert writer_paused() and len(calls) == 5 and _files(temporary) == before
        assert before and MANIFEST not in before and not target.exists()  # mid-folder, none of it served
    finally:
        update.__exit__(None, None, None)
    writer.join(timeout=60)
    assert not writer.is_alive() and len(calls) > 5
    assert not list(target.parent.glob(".building-*"))
    _assert_same_index(target, cached)


def test_wait_for_writes_returns_when_its_caller_holds_foreground_work(kb_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(foreground, "MAX_PAUSE_S", 600.0)
    cached = _cached(kb_dir, tmp_path / "cache")
    target = tmp_path / "behind" / "folder"

    def update_then_wait() -> None:  # as open_index does: it waits for this process's writes from inside
        with Foreground():
            write_behind(target, cached)
            wait_for_writes()

    caller = threading.Thread(target=update_then_wait)
    caller.start()
    caller.join(timeout=60)
    assert not caller.is_alive(), "wait_for_writes waited for the writer, which waited for wait_for_writes' caller"
    _assert_same_index(target, cached)


EXITING = """
import sys, threading
from pathlib import Path
from retrieval.index.cache import read_cache
from retrieval.index.foreground import Foreground
from retrieval.index.write_behind import write_behind
cached = read_cache(Path(sys.argv[1]))
held = threading.Event()

def serve_forever() -> None:  # a daemon thread inside foreground work that never ends
    with Foreground():
        held.set()
        threading.Event().wait()

threading.Thread(target=serve_forever, daemon=True).start()
held.wait()
write_behind(Path(sys.argv[2]), cached)
"""  # the main thread ends here; Python joins the writer


def test_a_process_exits_with_its_write_finished_while_a_daemon_thread_holds_foreground_work(kb_dir, tmp_path):
    _write_in_a_child(EXITING, kb_dir, tmp_path)


IMPATIENT = """
import sys, time
from pathlib import Path
from retrieval.index import foreground
from retrieval.index.cache import read_cache
from retrieval.index.foreground import Foreground, writer_paused
from retrieval.index.write_behind import write_behind, writing
foreground.MAX_PAUSE_S = 600.0  # only the patience can let the writer in before the settle has passed
cached, target = read_cache(Path(sys.argv[1])), Path(sys.argv[2])
with Foreground(settle=600.0):  # updates in a row for ten minutes, gaps between them shorter than the settle
    write_behind(target, cached)
    while not writer_paused():
        time.sleep(0.005)
deadline = time.monotonic() + 60
while writing(target):
    assert time.monotonic() < deadline, "the writer waited for the whole settle"
    time.sleep(0.01)
"""  # in a process of its own: the settle it leaves behind holds back no other test's writes


def test_a_writer_held_back_past_its_patience_takes_a_gap_without_waiting_for_the_settle(kb_dir, tmp_path):
    _write_in_a_child(IMPATIENT, kb_dir, tmp_path)


def _write_in_a_child(script: str, kb_dir, tmp_path) -> None:
    """Run `script` (given a cached folder and a target) in a process of its own; the target must then hold
    the same index."""
    cached = _cached(kb_dir, tmp_path / "cache")
    (source,) = [p for p in (tmp_path / "cache").iterdir() if (p / MANIFEST).is_file()]
    target = tmp_path / "behind" / "folder"
    child = subprocess.run([sys.executable, "-c", script, str(source), str(target)], capture_output=True,
                           timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert child.returncode == 0, child.stderr.decode()
    _assert_same_index(target, cached)


def test_open_index_and_lookups_run_as_foreground_work(kb_dir, tmp_path):
    seen = []
    index = open_index(kb_dir, cache_dir=tmp_path / "cache", progress=lambda *_: seen.append(foreground_running()))
    lookup_knowledge("billing invoices", index=index, config=LookupConfig(top_k=3),
                     recorder=lambda _: seen.append(foreground_running()))
    assert len(seen) > 2 and min(seen) >= 1
    assert foreground_running() == 0  # let go after, errors included
    with pytest.raises(ValueError, match="query must be a non-empty string"):
        lookup_knowledge(" ", index=index)
    assert foreground_running() == 0


def test_a_negative_settle_is_refused_with_what_to_pass():
    with pytest.raises(ValueError, match="settle must be 0 or more seconds, got -1"):
        Foreground(settle=-1)


@pytest.mark.parametrize("array", [
    np.arange(12, dtype=np.float32).reshape(3, 4), np.arange(5, dtype=">i8"), np.array([b"ab", b"c"]),
    np.array(["ünï", "x"]), np.zeros((0, 3), dtype=np.float16), np.array(7), np.arange(20).reshape(4, 5)[:, 1:3],
    np.asfortranarray(np.arange(6.0).reshape(2, 3)), np.arange(3 * 2**20, dtype=np.int8)],
    ids=["float32", "big-endian", "bytes", "unicode", "empty", "0-d", "strided", "fortran", "several-blocks"])
def test_a_cache_array_is_written_as_np_save_writes_it_and_hashed_as_written(array, tmp_path):
    calls = []
    entry = write_array(tmp_path / "a.npy", array, lambda: calls.append(1))
    np.save(tmp_path / "b.npy", array if array.flags.c_contiguous else array.copy(order="C"), allow_pickle=False)
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
    assert entry["xxh3_128"] == file_digest(tmp_path / "a.npy")
    assert entry["bytes"] == (tmp_path / "a.npy").stat().st_size and entry["shape"] == list(array.shape)
    assert np.array_equal(np.load(tmp_path / "a.npy"), array) and len(calls) >= 1 + array.nbytes // 2**21
