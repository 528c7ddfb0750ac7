"""The index cache is data only: arrays plus a checked JSON manifest; anything wrong is a warning and a rebuild."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.index_cache import CacheWarning, prune


def _folder(cache):
    folders = [p for p in cache.iterdir() if (p / "manifest.json").is_file()]
    assert len(folders) == 1
    return folders[0]


def _answers(index):
    return [[b.source for b in lookup_knowledge(q, index=index, config=LookupConfig()).evidence_blocks]
            for q in ("silence alerts", "invoice refund", "rotate the OAuth token")]


def test_cache_round_trip_gives_the_same_answers(kb_dir, tmp_path):
    built = open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    loaded = open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    assert not built.from_cache and loaded.from_cache
    assert _answers(built) == _answers(loaded)
    assert loaded.settings() == built.settings()
    assert not list(tmp_path.rglob("*.pkl"))


def test_planted_pickle_never_runs(kb_dir, tmp_path):
    open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    folder = _folder(tmp_path)
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    for npy in folder.glob("*.npy"):
        npy.write_bytes(pickle.dumps(Exploit()))
    with pytest.warns(CacheWarning, match="rebuilding"):
        index = open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    assert not marker.exists() and not index.from_cache


@pytest.mark.parametrize("damage", ["garbled_array", "wrong_manifest_type", "missing_file", "wrong_shape",
                                    "file_outside_folder", "garbled_entries"])
def test_damaged_cache_is_rebuilt_with_a_warning(kb_dir, tmp_path, damage):
    reference = _answers(open_index(kb_dir, svd_dims=16, cache_dir=tmp_path))
    folder = _folder(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    if damage == "garbled_array":
        data = bytearray((folder / "lsa.npy").read_bytes())
        data[-16:] = bytes(16)
        (folder / "lsa.npy").write_bytes(bytes(data))
    elif damage == "wrong_manifest_type":
        (folder / "manifest.json").write_text("[1, 2, 3]")
    elif damage == "missing_file":
        (folder / "section_weights.npy").unlink()
    elif damage == "wrong_shape":
        np.save(folder / "page_idf.npy", np.zeros(3))
        manifest["files"]["page_idf"]["sha256"] = __import__("retrieval.index_cache").index_cache._sha256(
            folder / "page_idf.npy")
        (folder / "manifest.json").write_text(json.dumps(manifest))
    elif damage == "file_outside_folder":
        manifest["files"]["lsa"]["file"] = "../../etc/passwd"
        (folder / "manifest.json").write_text(json.dumps(manifest))
    else:
        (folder / "entries.json").write_text('[{"source": 1}]')
    with pytest.warns(CacheWarning):
        index = open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    assert not index.from_cache and _answers(index) == reference
    assert open_index(kb_dir, svd_dims=16, cache_dir=tmp_path).from_cache  # rewritten whole


def test_cache_write_failure_is_reported_not_raised(kb_dir, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    with pytest.warns(CacheWarning, match="could not write the index cache"):
        index = open_index(kb_dir, svd_dims=16, cache_dir=blocker / "cache")
    assert index.l1 is not None


def test_cache_folder_is_bounded_in_size(kb_dir, tmp_path, monkeypatch):
    for dims in (8, 16, 32):
        open_index(kb_dir, svd_dims=dims, cache_dir=tmp_path)
    sizes = {p: sum(f.stat().st_size for f in p.iterdir()) for p in tmp_path.iterdir()}
    newest = max(sizes, key=lambda p: (p / "manifest.json").stat().st_mtime)
    prune(tmp_path, keep=16, max_bytes=sizes[newest] + 1)
    assert [p for p in tmp_path.iterdir()] == [newest]
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_CACHE_MAX_MB", "0.000001")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        open_index(kb_dir, svd_dims=64, cache_dir=tmp_path)
    assert len(list(tmp_path.iterdir())) == 1  # the newest always stays


def test_cache_key_includes_the_library_versions(kb_dir, tmp_path, monkeypatch):
    from retrieval import index as index_module

    open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    monkeypatch.setattr(index_module, "_library_versions", lambda: ("numpy==0.0",))
    assert not open_index(kb_dir, svd_dims=16, cache_dir=tmp_path).from_cache
