"""The index cache is data only: arrays plus a checked JSON manifest; anything wrong is a warning and a rebuild."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.index.cache import CacheWarning, prune
from retrieval.index.integrity import file_digest


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


def _rewrite(folder, manifest, name, array):
    """Replace one cached array and make the manifest agree with it (size and hash): only the checks of the
    arrays against each other can catch it."""
    path = folder / f"{name}.npy"
    np.save(path, array)
    spec = manifest["files"][name]
    spec.update(bytes=path.stat().st_size, xxh3_128=file_digest(path), dtype=array.dtype.str, shape=list(array.shape))
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("damage", ["garbled_array", "wrong_manifest_type", "missing_file", "wrong_shape",
                                    "file_outside_folder", "garbled_entries", "truncated_array", "garbled_l0",
                                    "byte_flipped_in_the_middle", "offsets_past_the_text", "chunks_out_of_order",
                                    "l0_rows_out_of_range", "old_format"])
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
        manifest["files"]["page_idf"].update(bytes=(folder / "page_idf.npy").stat().st_size,
                                             xxh3_128=file_digest(folder / "page_idf.npy"))
        (folder / "manifest.json").write_text(json.dumps(manifest))
    elif damage == "file_outside_folder":
        manifest["files"]["lsa"]["file"] = "../../etc/passwd"
        (folder / "manifest.json").write_text(json.dumps(manifest))
    elif damage == "garbled_entries":
        data = bytearray((folder / "entry_title_blob.npy").read_bytes())
        data[-1] ^= 0x20
        (folder / "entry_title_blob.npy").write_bytes(bytes(data))
    elif damage == "truncated_array":
        data = (folder / "text_blob.npy").read_bytes()
        (folder / "text_blob.npy").write_bytes(data[:-100])
    elif damage == "garbled_l0":
        data = bytearray((folder / "l0_column_values.npy").read_bytes())
        data[-3] ^= 0x01
        (folder / "l0_column_values.npy").write_bytes(bytes(data))
    elif damage == "byte_flipped_in_the_middle":
        data = bytearray((folder / "text_blob.npy").read_bytes())
        data[len(data) // 2] ^= 0x04
        (folder / "text_blob.npy").write_bytes(bytes(data))
    elif damage == "offsets_past_the_text":
        offsets = np.load(folder / "text_offsets.npy").copy()
        offsets[1] = offsets[-1] + 10
        _rewrite(folder, manifest, "text_offsets", offsets)
    elif damage == "chunks_out_of_order":
        entry_of = np.load(folder / "chunk_entry.npy")[::-1].copy()
        _rewrite(folder, manifest, "chunk_entry", entry_of)
    elif damage == "l0_rows_out_of_range":
        rows = np.load(folder / "l0_column_rows.npy").copy()
        rows[0] = 10**6
        _rewrite(folder, manifest, "l0_column_rows", rows)
    else:
        manifest["format"] = 3
        (folder / "manifest.json").write_text(json.dumps(manifest))
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
    from retrieval.index import build as index_module

    open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    monkeypatch.setattr(index_module, "_library_versions", lambda: ("numpy==0.0",))
    assert not open_index(kb_dir, svd_dims=16, cache_dir=tmp_path).from_cache


def test_edited_file_of_the_same_size_is_not_served_from_the_cache(kb_dir, tmp_path):
    import shutil

    kb = tmp_path / "kb"
    shutil.copytree(kb_dir, kb)
    open_index(kb, svd_dims=16, cache_dir=tmp_path / "cache")
    page = next(kb.rglob("*.md"))
    text = page.read_text()
    page.write_text(text.replace("a", "e", 1) if "a" in text else text.upper())
    assert page.stat().st_size == len(text.encode())
    assert not open_index(kb, svd_dims=16, cache_dir=tmp_path / "cache").from_cache


def test_cached_chunks_read_as_the_built_ones(kb_dir, tmp_path):
    built = open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    loaded = open_index(kb_dir, svd_dims=16, cache_dir=tmp_path)
    assert loaded.kb.chunks == built.kb.chunks
    assert list(loaded.l1.chunks) == list(built.l1.chunks)
    assert [e.source for e in loaded.kb.entries] == [e.source for e in built.kb.entries]
    assert loaded.kb.fingerprint == built.kb.fingerprint
