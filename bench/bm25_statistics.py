"""Benchmark (not a test): `python bench/bm25_statistics.py --chunks 1000000`.

BM25's statistics across segments (issue 50, item 2; docs/l1.md, Incremental updates): the two ways an index of
a base and a delta could weigh a section's terms, timed on the same index and queries in one process.

- **Frozen mean lengths** (this code): the stored weights are BM25's term-frequency part, normalised by the
  base's mean length; the query multiplies each term's column by its exact idf.
- **Exact mean lengths**: the term-frequency part computed per posting at query time from the stored counts,
  each row's length and the live rows' mean, then weighted by the idf.

Prints each one's time per query (median and p95 over the bench queries, the lexical sums of every section)
and their ratio, with L1's whole scoring for scale, then how far a frozen mean moves a score: at most
δ / (1 - δ) for a relative change δ of the mean length, printed for a few δ.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realtext import build_corpus, queries_from

from retrieval import open_index
from retrieval.l1 import QueryTerms, QueryWeights, postings_sum


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--corpus-dir", type=Path, default=Path(tempfile.gettempdir()) / "lookup-knowledge-bench")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "lookup-knowledge-bench-cache")
    args = parser.parse_args()
    corpus = build_corpus(args.chunks, args.corpus_dir)
    queries = [query for _, query in queries_from(corpus, args.queries)]
    l1 = open_index(corpus.root, cache_dir=args.cache_dir).l1
    a = l1.arrays
    k1, b = l1.config.k1, l1.config.b
    lengths = np.bincount(a.section_rows, weights=a.section_tf, minlength=l1.n_rows).astype(np.float32)
    mean = float(lengths.mean())
    norm_parts = (np.float32(k1 * (1 - b)), np.float32(k1 * b / mean))
    print(f"{l1.n_rows:,} sections, {a.section_rows.size:,} postings; mean length {mean:.1f}")
    frozen, exact, whole = [], [], []
    for query in queries * 2:  # the first pass warms the caches: only the second is kept
        weights = QueryWeights.of(QueryTerms.of(query), l1.segments, l1.dead, k1=k1, pair_weight=0.5)
        ids, term_weights = weights.sections[0]
        started = time.perf_counter()
        stored = postings_sum(a.section_indptr, a.section_rows, a.section_weights, ids, term_weights, l1.n_rows,
                              np.float32)
        middle = time.perf_counter()
        computed = _exact_lengths(a, ids, term_weights, lengths, norm_parts, k1, l1.n_rows)
        ended = time.perf_counter()
        l1._last_scores = None
        l1.score(query, tfidf_weight=0.9)
        whole.append(time.perf_counter() - ended)
        frozen.append(middle - started)
        exact.append(ended - middle)
        if not np.allclose(stored, computed, rtol=1e-4, atol=1e-6):  # the same mean: the same scores
            raise SystemExit(f"the two ways disagree on {query!r}")
    keep = len(queries)
    print("| BM25 statistics | lexical sums, p50 | p95 | L1's whole scoring, p50 |")
    print("| --- | --- | --- | --- |")
    for name, times in (("frozen mean lengths (stored weights; this code)", frozen[keep:]),
                        ("exact mean lengths (weights computed per posting)", exact[keep:])):
        print(f"| {name} | {_ms(times, 0.5)} | {_ms(times, 0.95)} | {_ms(whole[keep:], 0.5)} |")
    print(f"exact / frozen at p50: {statistics.median(exact[keep:]) / statistics.median(frozen[keep:]):.2f}")
    print("a frozen mean moves a score by at most δ / (1 - δ): " + ", ".join(
        f"δ {d:.0%}: {d / (1 - d):.2%}" for d in (0.01, 0.02, 0.05, 0.1)))


def _exact_lengths(a, ids: np.ndarray, weights: np.ndarray, lengths: np.ndarray, norm_parts, k1: float,
                   n_rows: int) -> np.ndarray:
    """The lexical sums with each posting's term-frequency part computed now from its count and row length."""
    summed = np.zeros(n_rows, dtype=np.float32)
    scale = np.float32(k1 + 1)
    for term, weight in zip(ids.tolist(), weights.tolist(), strict=True):
        start, end = int(a.section_indptr[term]), int(a.section_indptr[term + 1])
        rows, tf = a.section_rows[start:end], a.section_tf[start:end]
        below = lengths[rows] * norm_parts[1]
        below += norm_parts[0]
        below += tf
        summed[rows] += tf * scale / below * np.float32(weight)
    return summed


def _ms(times: list[float], share: float) -> str:
    ordered = sorted(times)
    return f"{ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000:.2f} ms"


if __name__ == "__main__":
    main()
