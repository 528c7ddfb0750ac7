"""The LSA fit, step by step: scikit-learn's randomized TruncatedSVD, run here so each power iteration can be
reported to a progress callback.

The steps are exactly those of `TruncatedSVD(n_components, random_state=seed).fit(X).components_`
(scikit-learn 1.x, algorithm "randomized": 5 power iterations with LU normalisation, 10 oversamples, the
range found on the narrower side, sign fixed by `svd_flip(u_based_decision=False)`), so the components are
bit-identical; `tests/test_build_progress.py` pins that against TruncatedSVD itself. Given the keys of the
matrix's rows and columns, the random start matrix is made from them instead (retrieval/l1/stable_sample.py:
the same row or term gets the same start in every fit); the steps after it are the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from retrieval.l1.stable_sample import start_matrix

N_ITER = 5  # TruncatedSVD's default
N_OVERSAMPLES = 10  # TruncatedSVD's default
STEPS = 2 * N_ITER + 2  # two products per power iteration, the range's basis, the small SVD


def fit_components(matrix: Any, n_components: int, random_state: int,
                   progress: Callable[[float], None] | None = None,
                   keys: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """TruncatedSVD's `components_` (n_components x columns) of a sparse `matrix`; `progress(fraction)`
    after every power-iteration product and at the end (1.0). With `keys` (uint64 per row, per column), the
    start matrix's rows come from the keys of the side it starts from (and `random_state`)."""
    from scipy import linalg
    from sklearn.utils.extmath import svd_flip

    if n_components < 1 or n_components > matrix.shape[1]:
        raise ValueError(f"n_components must be from 1 to {matrix.shape[1]} (the matrix's columns), got {n_components}")
    step = _stepper(progress)
    rng = np.random.RandomState(random_state)
    transpose = matrix.shape[0] < matrix.shape[1]
    m = matrix.T if transpose else matrix
    if keys is None:
        q = rng.normal(size=(m.shape[1], n_components + N_OVERSAMPLES))
    else:
        q = start_matrix(keys[0] if transpose else keys[1], n_components + N_OVERSAMPLES, m.dtype, random_state)
    if m.dtype == np.float32:
        q = q.astype(np.float32, copy=False)
    for _ in range(N_ITER):
        q, _ = linalg.lu(m @ q, permute_l=True, check_finite=False)
        step()
        q, _ = linalg.lu(m.T @ q, permute_l=True, check_finite=False)
        step()
    q, _ = linalg.qr(m @ q, mode="economic", check_finite=False)
    step()
    u_hat, _, vt = linalg.svd(q.T @ m, full_matrices=False, lapack_driver="gesdd")
    u = q @ u_hat
    if transpose:
        u, vt = vt[:n_components, :].T, u[:, :n_components].T
    else:
        u, vt = u[:, :n_components], vt[:n_components, :]
    _, vt = svd_flip(u, vt, u_based_decision=False)
    step()
    return vt


def _stepper(progress: Callable[[float], None] | None) -> Callable[[], None]:
    done = [0]

    def step() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0] / STEPS)

    return step
