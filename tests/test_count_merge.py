"""An update's merged term-count columns (retrieval/l1/count_merge.py) equal the columns built from scratch: the
kept rows' entries renumbered, the removed rows' gone, the new rows' merged in, whichever path copies them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from retrieval.l1 import count_merge
from retrieval.l1.count_merge import merged_counts


def _case(rng: np.random.Generator, n_old: int, n_cols: int, removed: int, added: int, new_columns: int,
          appended: bool):
    """A random old CSC matrix, rows removed and added (each row's new place keeps the kept rows' order), and
    new rows' counts over old and new columns: new columns interleaved with the old ones, as pair keys are, or
    (`appended`) after them, as new words are."""
    old = sparse.random(n_old, n_cols, density=0.2, random_state=rng.integers(1 << 30), format="csc",
                        data_rvs=lambda k: rng.integers(1, 5, k).astype(np.float32))
    old.sort_indices()
    kept = np.sort(rng.choice(n_old, n_old - removed, replace=False))
    n_rows = kept.size + added
    new_places = np.sort(rng.choice(n_rows, added, replace=False))
    kept_places = np.setdiff1d(np.arange(n_rows), new_places)
    final_of_old = np.full(n_old, -1, dtype=np.int64)
    final_of_old[kept] = kept_places
    n_columns = n_cols + new_columns
    old_columns = np.arange(n_cols) if appended else np.sort(rng.choice(n_columns, n_cols, replace=False))
    local_columns = rng.integers(3, 9)
    new = sparse.random(added, local_columns, density=0.5, random_state=rng.integers(1 << 30), format="csr",
                        data_rvs=lambda k: rng.integers(1, 5, k).astype(np.float32))
    to_columns = np.sort(rng.choice(n_columns, local_columns, replace=False))
    return old, final_of_old, old_columns, new, new_places, to_columns, n_rows, n_columns


def _reference(old, final_of_old, old_columns, new, final_of_new, new_columns, n_rows, n_columns):
    coo = old.tocoo()
    keep = final_of_old[coo.row] >= 0
    fresh = new.tocoo()
    rows = np.r_[final_of_old[coo.row[keep]], final_of_new[fresh.row]]
    cols = np.r_[old_columns[coo.col[keep]], new_columns[fresh.col]]
    values = np.r_[coo.data[keep], fresh.data].astype(np.float32)
    built = sparse.csc_matrix((values, (rows, cols)), shape=(n_rows, n_columns))
    built.sort_indices()
    return built.indptr.astype(np.int64), built.indices.astype(np.int32), built.data


@pytest.mark.parametrize("appended", [False, True], ids=["columns interleaved", "columns appended"])
@pytest.mark.parametrize("max_runs", [count_merge.MAX_RUNS, 3], ids=["runs copied one by one", "masked passes"])
@pytest.mark.parametrize(("removed", "added", "new_columns"), [(0, 4, 0), (5, 0, 0), (7, 6, 9), (40, 40, 30),
                                                              (60, 3, 2)])
def test_merged_columns_equal_the_columns_built_from_scratch(monkeypatch, max_runs, removed, added, new_columns,
                                                             appended):
    monkeypatch.setattr(count_merge, "MAX_RUNS", max_runs)
    monkeypatch.setattr(count_merge, "SCAN_ENTRIES", 37)  # several blocks when looking for removed entries
    rng = np.random.default_rng(removed * 1000 + added * 10 + new_columns)
    for _ in range(5):
        old, final_of_old, old_columns, new, final_of_new, to_columns, n_rows, n_columns = _case(
            rng, 60, 25, removed, added, new_columns, appended)
        got = merged_counts(old.indptr.astype(np.int64), old.indices.astype(np.int32), old.data.astype(np.float32),
                            final_of_old, None if appended else old_columns, new, final_of_new, to_columns, n_columns)
        expected = _reference(old, final_of_old, old_columns, new, final_of_new, to_columns, n_rows, n_columns)
        for part, want in zip(got, expected, strict=True):
            np.testing.assert_array_equal(part, want)
        assert got[1].dtype == np.int32 and got[2].dtype == np.float32
