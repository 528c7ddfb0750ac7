"""The cache folder's check begun ahead (retrieval/index/cache_check.py): `open_index` hashes the folder its
corpus walk will most likely name while it walks, and takes that verdict only for the same manifest; a damaged
folder found that way is rebuilt, never served. Real cache folders on disk."""

from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path

from retrieval import open_index
from retrieval.index import cache_check, cache_stamp
from retrieval.index.cache import CacheWarning
from retrieval.index.write_behind import forget


def _cached(kb_dir: Path, cache: Path, *, stamped: bool = False) -> Path:
    """A cache folder of the base, forgotten by this process (the next open reads it, as a fresh process does);
    without its stamp unless `stamped` (so its files are hashed)."""
    open_index(kb_dir, svd_dims=16, cache_dir=cache)
    forget()
    [folder] = [p for p in cache.iterdir() if (p / "manifest.json").is_file()]
    if not stamped:
        (folder / cache_stamp.STAMP).unlink()
    return folder


def _listed(folder: Path) -> list[tuple[Path, dict]]:
    files = json.loads((folder / "manifest.json").read_text())["files"]
    return [(folder / spec["file"], spec) for spec in files.values()]


def test_opening_a_cached_index_checks_its_folder_once_on_the_thread_begun_before_the_walk(kb_dir, tmp_path,
                                                                                            checks):
    _cached(kb_dir, tmp_path)
    checks.clear()
    index = open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    assert index.from_cache
    assert checks == ["cache-check"]


def test_a_damaged_file_found_by_the_check_begun_ahead_is_rebuilt_never_served(kb_dir, tmp_path):
    folder = _cached(kb_dir, tmp_path)
    target = max(folder.glob("*.npy"), key=lambda p: p.stat().st_size)
    data = bytearray(target.read_bytes())
    data[-1] ^= 0xFF  # same size: only the hash can tell
    target.write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        index = open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    assert not index.from_cache
    assert any(issubclass(w.category, CacheWarning) and "checksum" in str(w.message) for w in caught)


def test_the_verdict_begun_ahead_is_taken_only_for_the_same_manifest(kb_dir, tmp_path, checks):
    folder = _cached(kb_dir, tmp_path)
    files = _listed(folder)
    cache_check.prefetch(folder)
    cache_check.check(folder, files)
    assert checks == ["cache-check"]  # checked once, ahead; the caller took its verdict
    checks.clear()
    (folder / cache_stamp.STAMP).unlink()
    cache_check.prefetch(folder)
    manifest = folder / "manifest.json"
    text = manifest.read_text()
    manifest.unlink()
    manifest.write_text(text)  # a folder rewritten meanwhile: another inode
    cache_check.check(folder, files)
    assert checks == ["cache-check", threading.current_thread().name]  # checked again, now


def test_a_check_begun_ahead_never_reads_a_file_outside_its_folder(kb_dir, tmp_path, checks):
    folder = _cached(kb_dir, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    next(iter(manifest["files"].values()))["file"] = "../../elsewhere.npy"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    cache_check.prefetch(folder)
    assert checks == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not open_index(kb_dir, svd_dims=16, cache_dir=tmp_path).from_cache
    assert any("outside its folder" in str(w.message) for w in caught)
