"""The cache folder's stamp (retrieval/index/integrity.py): files unchanged since their hashes were known
good are not hashed again; any write to one (same bytes, or a flipped byte with its times set back) has it
hashed, and a damaged one still fails; on a coarse clock only files changed well before the stamp are
trusted. Real cache folders on disk."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

from retrieval import open_index
from retrieval.index import integrity
from retrieval.index.cache import CacheWarning


def _folder(kb_dir: Path, cache: Path) -> Path:
    open_index(kb_dir, svd_dims=16, cache_dir=cache)
    [folder] = [p for p in cache.iterdir() if (p / "manifest.json").is_file()]
    return folder


def _open(kb_dir: Path, cache: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        index = open_index(kb_dir, svd_dims=16, cache_dir=cache)
    return index, [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


def test_the_writers_stamp_spares_the_first_open_the_hashing(kb_dir, tmp_path, hashed):
    folder = _folder(kb_dir, tmp_path)
    hashed.clear()
    index, warned = _open(kb_dir, tmp_path)
    assert index.from_cache and not warned
    stamp = json.loads((folder / integrity.STAMP).read_text())
    if stamp["fine_clock"]:  # a later write always gets a new change time: the stamp is trusted at once
        assert hashed == []
    else:  # a coarse clock: files written within RACY_NS of the stamp are hashed, then the stamp is refreshed
        assert hashed
        hashed.clear()
        _open(kb_dir, tmp_path)
        assert hashed == [] or (json.loads((folder / integrity.STAMP).read_text())["at_ns"] > stamp["at_ns"])


def test_a_file_written_again_with_the_same_bytes_is_hashed_alone_and_trusted_after(kb_dir, tmp_path, hashed):
    folder = _folder(kb_dir, tmp_path)
    target = folder / "text_blob.npy"
    target.write_bytes(target.read_bytes())
    hashed.clear()
    index, warned = _open(kb_dir, tmp_path)
    assert index.from_cache and not warned
    assert "text_blob.npy" in hashed
    if json.loads((folder / integrity.STAMP).read_text())["fine_clock"]:
        assert hashed == ["text_blob.npy"]
        hashed.clear()
        _open(kb_dir, tmp_path)
        assert hashed == []  # the refreshed stamp vouches for it now


def test_a_flipped_byte_with_its_times_set_back_is_still_found(kb_dir, tmp_path):
    folder = _folder(kb_dir, tmp_path)
    target = max(folder.glob("*.npy"), key=lambda p: p.stat().st_size)
    before = target.stat()
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime restored; ctime cannot be
    index, warned = _open(kb_dir, tmp_path)
    assert not index.from_cache
    assert any("checksum" in message for message in warned)


def test_on_a_coarse_clock_only_files_changed_well_before_the_stamp_are_trusted(tmp_path):
    path = tmp_path / "a.npy"
    path.write_bytes(b"x" * 10)
    state = integrity.state_of(path)
    ctime = state[3]
    for at, fine, trusted in ((ctime + 1, True, True), (ctime + 1, False, False),
                              (ctime + integrity.RACY_NS + 1, False, True)):
        integrity.record(tmp_path, {"a.npy": state}, at, fine)
        assert integrity.vouched(tmp_path, {"a.npy": state}) == ({"a.npy"} if trusted else set())
    other = (state[0] + 1, *state[1:])  # another inode: a file replaced by one of the same size and times
    assert integrity.vouched(tmp_path, {"a.npy": other}) == set()


def test_a_stamp_that_is_not_ours_vouches_for_nothing(tmp_path):
    path = tmp_path / "a.npy"
    path.write_bytes(b"x")
    state = integrity.state_of(path)
    for text in ("not json", json.dumps({"files": {}}), json.dumps([1, 2]),
                 json.dumps({"at_ns": "soon", "fine_clock": True, "files": {"a.npy": list(state)}})):
        (tmp_path / integrity.STAMP).write_text(text)
        assert integrity.vouched(tmp_path, {"a.npy": state}) == set()
