"""The query-time postings sum: scipy's compiled column product gives numpy's sums, term by term in order."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.l1 import postings
from retrieval.l1.postings import COMPILED_MIN_POSTINGS, columns_from_triples, postings_sum


def _columns(n_rows: int, n_columns: int, seed: int, dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random CSC matrix whose columns hold from a few to most of the rows (long columns take the compiled
    path, short ones numpy's)."""
    rng = np.random.default_rng(seed)
    rows, columns = [], []
    for column in range(n_columns):
        taken = np.sort(rng.choice(n_rows, int(rng.integers(1, n_rows)), replace=False))
        rows.append(taken)
        columns.append(np.full(taken.size, column))
    joined = np.concatenate(rows)
    values = rng.random(joined.size).astype(dtype)
    return columns_from_triples(joined.astype(np.int32), np.concatenate(columns), values, n_columns)


def _numpy_reference(indptr, rows, values, ids, weights, size, dtype) -> np.ndarray:
    """Each row's terms added in query order, one product and one add at a time, in `dtype`."""
    summed = np.zeros(size, dtype=dtype)
    for column, weight in zip(ids, weights, strict=True):
        span = slice(indptr[column], indptr[column + 1])
        np.add.at(summed, rows[span], values[span] * np.dtype(dtype).type(weight))
    return summed


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_compiled_sum_equals_numpys_term_by_term_sum(dtype: type) -> None:
    size = 3 * COMPILED_MIN_POSTINGS
    indptr, rows, values = _columns(size, 6, seed=3, dtype=dtype)
    ids = np.array([4, 0, 5, 2])
    weights = np.array([0.31, 1.7, 0.05, 2.2])
    expected = _numpy_reference(indptr, rows, values, ids, weights, size, dtype)
    summed = postings_sum(indptr, rows, values, ids, weights, size, dtype)
    assert summed.dtype == dtype
    assert int(np.diff(indptr)[ids].sum()) >= COMPILED_MIN_POSTINGS  # the compiled path ran
    np.testing.assert_array_max_ulp(summed, expected, maxulp=1)  # equal on x86-64; an FMA may round once less
    assert np.count_nonzero(summed != expected) <= size // 1000


def test_short_postings_never_import_scipy_and_sum_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable():
        raise AssertionError("scipy's product was asked for under COMPILED_MIN_POSTINGS postings")

    monkeypatch.setattr(postings, "_scipy_column_add", unreachable)
    indptr, rows, values = _columns(500, 4, seed=5, dtype=np.float32)
    ids, weights = np.array([1, 3]), np.array([0.5, 1.5])
    summed = postings_sum(indptr, rows, values, ids, weights, 500, np.float32)
    assert np.array_equal(summed, _numpy_reference(indptr, rows, values, ids, weights, 500, np.float32))


def test_float64_values_summed_in_float32_take_numpys_path_with_the_same_rounding() -> None:
    size = 3 * COMPILED_MIN_POSTINGS
    indptr, rows, values = _columns(size, 3, seed=7, dtype=np.float64)
    ids, weights = np.array([0, 1, 2]), np.array([1.0, 0.25, 3.0])
    summed = postings_sum(indptr, rows, values, ids, weights, size, np.float32)
    reference = np.zeros(size, dtype=np.float32)
    for column, weight in zip(ids, weights, strict=True):
        span = slice(indptr[column], indptr[column + 1])
        np.add.at(reference, rows[span], (values[span] * weight).astype(np.float32))
    assert summed.dtype == np.float32 and np.array_equal(summed, reference)


def test_a_query_without_postings_sums_to_zeros() -> None:
    indptr, rows, values = _columns(100, 2, seed=1, dtype=np.float32)
    empty_column = np.r_[indptr, indptr[-1]]  # a third column with no entries
    summed = postings_sum(empty_column, rows, values, np.array([2]), np.array([1.0]), 100, np.float32)
    assert summed.dtype == np.float32 and not summed.any()


def test_float32_values_summed_in_float64_take_the_compiled_path_with_numpys_sums(monkeypatch) -> None:
    """L1's page scores: float32 weights summed in float64 (exact widening, then numpy's float64 arithmetic)."""
    size = 3 * COMPILED_MIN_POSTINGS
    indptr, rows, values = _columns(size, 4, seed=11, dtype=np.float32)
    ids, weights = np.array([3, 1, 0]), np.array([0.7, 1.0, 0.45])
    taken = []
    real = postings._scipy_column_add

    def watched():
        taken.append(True)
        return real()

    monkeypatch.setattr(postings, "_scipy_column_add", watched)
    summed = postings_sum(indptr, rows, values, ids, weights, size)
    reference = np.zeros(size)
    for column, weight in zip(ids, weights, strict=True):
        span = slice(indptr[column], indptr[column + 1])
        np.add.at(reference, rows[span], values[span] * np.float64(weight))
    assert taken and summed.dtype == np.float64
    np.testing.assert_array_max_ulp(summed, reference, maxulp=1)
    assert np.count_nonzero(summed != reference) <= size // 1000


def test_a_scipy_whose_private_product_changed_falls_back_to_numpys_sums(monkeypatch) -> None:
    """The compiled product is scipy's private `csc_matvec`: checked on one known sum before it is used."""
    from scipy.sparse import _sparsetools

    size = 3 * COMPILED_MIN_POSTINGS
    indptr, rows, values = _columns(size, 3, seed=13, dtype=np.float32)
    ids, weights = np.array([0, 2]), np.array([1.0, 0.5])
    expected = _numpy_reference(indptr, rows, values, ids, weights, size, np.float32)
    for changed in (lambda *args: None, lambda n_rows, n_columns, *rest: (_ for _ in ()).throw(TypeError("args"))):
        postings._scipy_column_add.cache_clear()
        monkeypatch.setattr(_sparsetools, "csc_matvec", changed)
        assert postings._scipy_column_add() is None
        assert np.array_equal(postings_sum(indptr, rows, values, ids, weights, size, np.float32), expected)
    monkeypatch.undo()
    postings._scipy_column_add.cache_clear()
    assert postings._scipy_column_add() is _sparsetools.csc_matvec
