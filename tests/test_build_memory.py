"""What keeps a 1M-chunk build within 4 GB (docs/l1.md, Memory), checked at a small scale: counts held at 8
bytes an entry, BM25 weighted where the counts lie (equal to weighting the CSR rows). The 1M peak itself is
measured by bench/build_memory.py and bench/run.py (docs/benchmarks.md)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from retrieval.l1.arrays import weight_columns
from retrieval.l1.count_parts import csr_of_parts, packed_counts


def _random_counts(rows: int, columns: int, seed: int) -> sparse.csr_matrix:
    rng = np.random.default_rng(seed)
    dense = rng.integers(0, 4, size=(rows, columns)) * (rng.random((rows, columns)) < 0.2)
    dense[:, -1] = 0  # a term no row holds any more (an updated index keeps it): idf 0
    return sparse.csr_matrix(dense.astype(np.float32))


def test_count_parts_hold_eight_bytes_an_entry_and_join_into_the_same_matrix():
    rng = np.random.default_rng(3)
    rows = np.sort(rng.integers(0, 50, 4_000))
    columns = rng.integers(0, 300, 4_000)
    part = packed_counts(rows, columns, 300)
    assert part.columns.dtype == np.int32 and part.counts.dtype == np.float32
    assert part.columns.itemsize + part.counts.itemsize == 8 and part.per_row.size <= 50
    joined = csr_of_parts([part], (50, 300))
    expected = sparse.csr_matrix((np.ones(rows.size, dtype=np.float32), (rows, columns)), shape=(50, 300))
    expected.sum_duplicates()
    assert (joined != expected).nnz == 0


@pytest.mark.parametrize("length_mean", [None, 7.5])
def test_bm25_weighted_where_the_counts_lie_equals_weighting_each_row(length_mean):
    """The stored weights are BM25's term-frequency part (the query applies the idf), normalised by the rows'
    mean length or by a kept one (a delta segment's: its base's)."""
    counts = _random_counts(120, 40, seed=5)
    k1, b = 1.2, 0.75
    got = weight_columns(counts, k1, b, length_mean)
    dense = counts.toarray().astype(np.float64)
    lengths = dense.sum(axis=1)
    doc_freq = (dense > 0).sum(axis=0)
    idf = np.log1p((dense.shape[0] - doc_freq + 0.5) / (doc_freq + 0.5))
    idf[doc_freq == 0] = 0.0
    mean = lengths.mean() if length_mean is None else length_mean
    norm = k1 * (1 - b + b * lengths / mean)
    expected = np.where(dense > 0, dense * (k1 + 1) / (dense + norm[:, None]), 0.0)
    assert got.length_mean == mean
    weights = sparse.csc_matrix((got.weights, got.rows, got.indptr), shape=counts.shape).toarray()
    assert np.allclose(weights, expected, rtol=1e-5, atol=1e-7)
    assert np.array_equal(got.idf, idf)
    assert np.array_equal(sparse.csc_matrix((got.tf, got.rows, got.indptr), shape=counts.shape).toarray(), dense)


def test_rows_are_l2_normalised_to_the_bit_as_scikit_learn_normalises_them():
    """The TF-IDF rows are normalised without importing scikit-learn (an update would pay seconds for it), by
    the same float operations as its `normalize`, so a build's LSA rows keep their bits."""
    from sklearn.preprocessing import normalize

    from retrieval.l1.arrays import l2_normalised_rows

    rng = np.random.default_rng(3)
    for seed in range(3):
        matrix = sparse.random(400, 300, density=0.05, random_state=seed, format="csr", dtype=np.float32)
        matrix.data = (matrix.data * rng.uniform(0.001, 50, matrix.data.size)).astype(np.float32)
        matrix = sparse.vstack([matrix, sparse.csr_matrix((1, 300), dtype=np.float32)]).tocsr()  # an empty row
        ours, theirs = l2_normalised_rows(matrix.copy()), normalize(matrix.copy(), copy=False)
        assert ours.data.dtype == np.float32 and np.array_equal(ours.data, theirs.data)
