"""An LSA fit that is a function of the content, not of row positions: two fits on nearly the same chunks
(a base before and after an edit) see nearly the same sample and start from the same random directions.

The SVD's row sample is the chunks with the smallest content keys (XXH3 of source, breadcrumb and text), so
an edit changes the sample only where it changes chunks; the randomized SVD's start matrix has one row per
chunk or term (whichever side it starts from), made from that chunk's or term's key alone, so a row or term
keeps its random start whatever else is added, removed or reordered. A rebuild then lands near the basis an
updated index folded its new rows into (docs/l1.md, "Incremental updates").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import xxhash

from retrieval.kb.model import Chunk

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_BLOCK_ROWS = 4096  # start-matrix rows made at a time: bounds the uint64 temporaries


def content_keys(chunks: Sequence[Chunk]) -> np.ndarray:
    """Each chunk's content key (uint64): XXH3 of its source, breadcrumb and text, the same in every process."""
    texts = (f"{c.source}\0{c.breadcrumb}\0{c.text}".encode("utf-8", "surrogatepass") for c in chunks)
    return np.fromiter(map(xxhash.xxh3_64_intdigest, texts), dtype=np.uint64, count=len(chunks))


def term_keys(terms: Iterable[str]) -> np.ndarray:
    """Each term's key (uint64): XXH3 of its UTF-8 bytes."""
    return np.fromiter((xxhash.xxh3_64_intdigest(t.encode("utf-8", "surrogatepass")) for t in terms), dtype=np.uint64)


def sample_rows(keys: np.ndarray, size: int, seed: int = 0) -> np.ndarray:
    """Positions (sorted) of the `size` rows with the smallest keys mixed with `seed` (all rows when there
    are no more): adding or removing a row changes the sample by that row and at most one at its edge."""
    keys = np.asarray(keys, dtype=np.uint64)
    if keys.size <= size:
        return np.arange(keys.size, dtype=np.int64)
    ranks = _splitmix(keys ^ _seeded(seed)) if seed else keys
    return np.sort(np.argsort(ranks, kind="stable")[:size]).astype(np.int64)


def start_matrix(keys: np.ndarray, width: int, dtype: np.dtype | type = np.float64, seed: int = 0) -> np.ndarray:
    """Standard normal values, (len(keys), width): row i made from keys[i] and `seed` alone (SplitMix64 per
    cell, then Box-Muller), so a key gets the same start row in any matrix it is part of."""
    keys = np.asarray(keys, dtype=np.uint64) ^ _seeded(seed)
    out = np.empty((keys.size, width), dtype=dtype)
    columns = (np.arange(1, width + 1, dtype=np.uint64) * _GOLDEN)[None, :]
    for start in range(0, keys.size, _BLOCK_ROWS):
        mixed = _splitmix(keys[start:start + _BLOCK_ROWS, None] ^ columns)
        high = (mixed >> np.uint64(32)).astype(np.float64)
        low = (mixed & np.uint64(0xFFFFFFFF)).astype(np.float64)
        radius = np.sqrt(-2.0 * np.log((high + 1.0) / 4294967296.0))  # (0, 1]: log is finite
        out[start:start + _BLOCK_ROWS] = radius * np.cos(low * (2.0 * np.pi / 4294967296.0))
    return out


def _seeded(seed: int) -> np.uint64:
    """A seed spread over 64 bits (0 stays 0: the keys as they are)."""
    return _splitmix(np.array([seed], dtype=np.uint64))[0] if seed else np.uint64(0)


def _splitmix(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser over a uint64 array (wrapping arithmetic)."""
    z = values + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
