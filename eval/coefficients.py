"""Agreement coefficients on grade arrays: Cohen's κ of two annotators (nominal, unweighted, as scikit-learn's
`cohen_kappa_score`) and Krippendorff's α of a reliability matrix with missing values (nominal, ordinal or
interval, as the `krippendorff` package's `alpha`), each also vectorised over bootstrap resamples (eval.agreement).

α: the coincidence matrix o of the values pairable within each page (each ordered pair of values from different
annotators of a page weighted 1 / (m_u − 1); a page with one value adds nothing), n_c its margins, and
α = 1 − (n − 1) Σ o δ² / Σ n_c n_k δ², with the ordinal distance δ²(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k) / 2)².
"""

from __future__ import annotations

import math

import numpy as np

LEVELS = ("nominal", "ordinal", "interval")


def cohen_kappa(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> float | None:
    """Cohen's κ of two annotators' grades of the same pages (nominal, unweighted, as scikit-learn's
    `cohen_kappa_score`); None when undefined (no page, or chance agreement 1: both gave one and the same grade)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) != len(y):
        raise ValueError(f"Cohen's κ needs the same pages from both annotators, got {len(x)} and {len(y)} grades")
    if not len(x):
        return None
    labels = np.unique(np.concatenate([x, y]))
    table = _confusion(x, y, labels)[None, ...]
    value = kappas(table)[0]
    return None if math.isnan(value) else float(value)


def krippendorff_alpha(data: np.ndarray | list[list[float]], level: str = "ordinal") -> float | None:
    """Krippendorff's α of a reliability matrix (annotators × pages, NaN where an annotator did not judge a page)
    at `level` (LEVELS), as the `krippendorff` package computes it; None when undefined (no page judged by two,
    fewer than two values, or no disagreement to expect)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level of measurement {level!r}; known: {', '.join(LEVELS)}")
    matrix = np.asarray(data, dtype=float)
    domain = np.unique(matrix[~np.isnan(matrix)])
    if len(domain) < 2:
        return None
    units = unit_coincidences(matrix, domain)
    value = alphas(units.sum(axis=0)[None, ...], domain, level)[0]
    return None if math.isnan(value) else float(value)


def _confusion(x: np.ndarray, y: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The labels × labels table of (x, y) grade pairs."""
    table = np.zeros((len(labels), len(labels)))
    np.add.at(table, (np.searchsorted(labels, x), np.searchsorted(labels, y)), 1)
    return table


def kappas(tables: np.ndarray) -> np.ndarray:
    """κ of each R × L × L confusion table (NaN where chance agreement is 1 or the table is empty)."""
    n = tables.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(tables, axis1=1, axis2=2) / n
        chance = (tables.sum(axis=2) * tables.sum(axis=1)).sum(axis=1) / n ** 2
        kappa = (observed - chance) / (1 - chance)
    return np.where(np.isclose(chance, 1.0, rtol=0, atol=1e-12) | (n == 0), np.nan, kappa)


def unit_coincidences(matrix: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """Each page's contribution to the coincidence matrix (pages × values × values): the ordered pairs of
    values from different annotators, each weighted 1 / (m_u − 1); a page with one value adds nothing."""
    counts = (matrix.T[..., None] == domain[None, None, :]).sum(axis=1).astype(float)  # pages × values
    m = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(len(domain))[None, ...]
    weight = np.where(m >= 2, 1.0 / np.maximum(m - 1, 1), 0.0)
    return pairs * weight[:, None, None]


def _distances(n_v: np.ndarray, domain: np.ndarray, level: str) -> np.ndarray:
    """δ² between the values of `domain` (R × V × V for R sets of value totals `n_v`, R × V)."""
    size = len(domain)
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(size), (len(n_v), size, size))
    if level == "interval":
        return np.broadcast_to((domain[:, None] - domain[None, :]) ** 2, (len(n_v), size, size))
    cumulative = np.concatenate([np.zeros((len(n_v), 1)), np.cumsum(n_v, axis=1)], axis=1)  # R × (V + 1)
    low, high = np.minimum.outer(np.arange(size), np.arange(size)), np.maximum.outer(np.arange(size), np.arange(size))
    between = cumulative[:, high + 1] - cumulative[:, low]  # Σ_{g = low..high} n_g
    return (between - (n_v[:, low] + n_v[:, high]) / 2) ** 2


def alphas(coincidences: np.ndarray, domain: np.ndarray, level: str) -> np.ndarray:
    """α of each R × V × V coincidence matrix: 1 − (n − 1) Σ o δ² / Σ n_c n_k δ² (NaN where undefined)."""
    n_v = coincidences.sum(axis=1)
    n = n_v.sum(axis=1)
    delta = _distances(n_v, domain, level)
    observed = (coincidences * delta).sum(axis=(1, 2))
    expected = ((n_v[:, :, None] * n_v[:, None, :] - np.eye(len(domain))[None] * n_v[:, :, None]) * delta).sum(
        axis=(1, 2)) / np.where(n > 1, n - 1, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 1 - observed / expected
    return np.where((n <= 1) | np.isclose(expected, 0.0, rtol=0, atol=1e-12), np.nan, value)


def percentiles(values: np.ndarray, level: float) -> tuple[float, float] | None:
    """The central `level` interval of the defined (non-NaN) bootstrap values; None when none is defined."""
    kept = values[~np.isnan(values)]
    if not len(kept):
        return None
    low, high = np.quantile(kept, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def resample_counts(size: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """How often each of `size` items is drawn in each of `resamples` bootstrap samples (resamples × size)."""
    draws = rng.integers(0, size, size=(resamples, size))
    counts = np.zeros((resamples, size))
    np.add.at(counts, (np.repeat(np.arange(resamples), size), draws.ravel()), 1)
    return counts
