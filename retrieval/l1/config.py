"""Settings of the index itself (what a build fixes), apart from the per-call `LookupConfig`."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from retrieval.config import DEFAULT_SVD_DIMS


@dataclass(frozen=True)
class IndexConfig:
    """How L1 is built: LSA dimensions, BM25's k1/b for sections and pages, and the SVD's row sample.

    These change the index, so they are part of the cache key; the trace records them as built.
    """

    svd_dims: int = DEFAULT_SVD_DIMS
    k1: float = 1.2
    b: float = 0.75
    page_b: float = 0.9  # pages vary in length more than sections; stronger length normalisation
    page_pair_weight: float = 0.5  # a query word pair in the page score, as a share of a single word (as in SDM)
    svd_sample_rows: int = 20_000  # the SVD is fitted on at most this many chunks, then projects every chunk
    random_state: int = 0

    def __post_init__(self) -> None:
        checks = (("svd_dims", 1, 4096), ("k1", 0.0, 10.0), ("b", 0.0, 1.0), ("page_b", 0.0, 1.0),
                  ("page_pair_weight", 0.0, 10.0), ("svd_sample_rows", 100, 10_000_000))
        for name, low, high in checks:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise ValueError(f"index setting {name} must be a number from {low} to {high}, got {value!r}")
        if not isinstance(self.svd_dims, int) or not isinstance(self.svd_sample_rows, int):
            raise ValueError("index settings svd_dims and svd_sample_rows must be whole numbers")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # scalars: asdict's result, cheaper
