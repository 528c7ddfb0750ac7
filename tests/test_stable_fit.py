"""The LSA fit is a function of the content (retrieval/l1/stable_sample.py): two builds of bases that differ by
one page see nearly the same sample, start from the same directions, and give the unchanged chunks nearly the
same LSA cosines, so a full rebuild after an update lands near the updated index (issue 35, item 1)."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval import load_knowledge_base
from retrieval.index.chunk_store import indexable
from retrieval.l1.arrays import build_arrays
from retrieval.l1.config import IndexConfig
from retrieval.l1.stable_sample import content_keys, sample_rows, start_matrix
from retrieval.paths import SAMPLE_KB


def _sample_chunks():
    return [c for c in load_knowledge_base(SAMPLE_KB).chunks if indexable(c)]


def _gram_change(chunks, dropped: str, dims: int) -> float:
    """Mean |change| of the LSA cosines between the chunks kept when page `dropped` is removed and the base rebuilt."""
    config = IndexConfig(svd_dims=dims, svd_sample_rows=100)
    kept = [c for c in chunks if c.source != dropped]
    rows = np.array([i for i, c in enumerate(chunks) if c.source != dropped])
    before, after = build_arrays(chunks, config).lsa[rows], build_arrays(kept, config).lsa
    return float(np.abs(before @ before.T - after @ after.T).mean())


@pytest.mark.parametrize("dropped", ["alerting/alert-rules.md", "alerting/maintenance-windows.md"])
def test_a_rebuild_without_one_page_keeps_the_other_chunks_lsa_cosines(dropped: str):
    chunks = _sample_chunks()
    assert len(chunks) > 250  # three times the sample: the fit sees a sample, not every chunk
    # a fit drawn by position and started by term order moved these cosines by 0.13-0.18 on average
    assert _gram_change(chunks, dropped, 8) < 0.06
    assert _gram_change(chunks, dropped, 16) < 0.04


def test_the_sample_changes_only_where_the_rows_changed():
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2**63, size=5_000, dtype=np.uint64)
    edited = np.concatenate([keys[50:], rng.integers(0, 2**63, size=50, dtype=np.uint64)])  # 1% out, 1% in
    before, after = set(keys[sample_rows(keys, 1_000)]), set(edited[sample_rows(edited, 1_000)])
    assert len(before - after) <= 50 + 1 and len(before ^ after) <= 2 * 51
    assert len(before - after) == len(after - before)


def test_the_sample_is_every_row_when_there_are_no_more_than_asked():
    assert sample_rows(np.arange(5, dtype=np.uint64), 5).tolist() == [0, 1, 2, 3, 4]


def test_a_seed_draws_another_sample():
    keys = np.arange(1_000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    assert sample_rows(keys, 100, 1).tolist() != sample_rows(keys, 100, 0).tolist()


def test_a_key_gets_the_same_start_row_in_any_matrix():
    keys = np.array([11, 22, 33, 44], dtype=np.uint64)
    whole = start_matrix(keys, 12)
    shuffled = start_matrix(keys[[3, 1, 0]], 12)
    assert np.array_equal(shuffled, whole[[3, 1, 0]])
    assert not np.array_equal(start_matrix(keys, 12, seed=1), whole)


def test_start_rows_are_standard_normal():
    values = start_matrix(np.arange(4_000, dtype=np.uint64), 50).ravel()
    assert np.all(np.isfinite(values))
    assert abs(values.mean()) < 0.01 and abs(values.std() - 1.0) < 0.01
    assert abs(np.mean(np.abs(values) < 1.0) - 0.6827) < 0.01  # one standard deviation holds 68.3%


def test_content_keys_follow_source_breadcrumb_and_text_not_position():
    chunks = _sample_chunks()[:3]
    assert np.array_equal(content_keys(chunks[::-1]), content_keys(chunks)[::-1])
    assert len(set(content_keys(chunks).tolist())) == 3
