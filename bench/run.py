"""Benchmarks (not tests): `python bench/run.py [--entries N] [--chunks M]`.

Prints ratios measured in one run, since absolute times drift on shared machines:
- L0: our sparse BM25Okapi scoring vs rank-bm25's `get_scores` (same scores) on N synthetic entries;
- L1: a filtered search vs an unfiltered one on M synthetic chunks, and the time per query.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402

from retrieval.corpus import Chunk, Entry  # noqa: E402
from retrieval.l0 import L0Index, entry_terms  # noqa: E402
from retrieval.l1 import L1Index  # noqa: E402
from retrieval.text import tokenize  # noqa: E402

WORDS = [f"w{i}" for i in range(20_000)]
DOMAINS = [f"domain {i}" for i in range(20)]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS[: 2000 + rng.randrange(18_000)]) for _ in range(n))


def _entries(n: int, rng: random.Random) -> list[Entry]:
    return [Entry(f"e{i}", _words(rng, 6), (rng.choice(DOMAINS),), tuple(_words(rng, 2).split()),
                  (_words(rng, 1),), "", ()) for i in range(n)]


def _timed(work, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_l0(n: int, rng: random.Random) -> None:
    entries = _entries(n, rng)
    ours, reference = L0Index(entries), BM25Okapi([entry_terms(e) for e in entries])
    queries = [tokenize(_words(rng, 4)) for _ in range(10)]
    assert max(np.abs(ours.scores(q) - reference.get_scores(q)).max() for q in queries) < 1e-6
    t_ours = _timed(lambda: [ours.scores(q) for q in queries], 5) / len(queries)
    t_ref = _timed(lambda: [reference.get_scores(q) for q in queries], 1) / len(queries)
    print(f"L0 {n:,} entries: rank-bm25 get_scores / ours = {t_ref / t_ours:,.0f}x "
          f"(ours {t_ours * 1000:.2f} ms/query, rank-bm25 {t_ref * 1000:.1f} ms/query in this run)")


def bench_l1(m: int, rng: random.Random) -> None:
    chunks = [Chunk(f"s{i // 4}", i % 4, "t", f"t > h{i % 4}", _words(rng, 40), (rng.choice(DOMAINS),))
              for i in range(m)]
    started = time.perf_counter()
    index = L1Index(chunks, svd_dims=128)
    build = time.perf_counter() - started
    queries = [_words(rng, 5) for _ in range(20)]
    plain = _timed(lambda: [index.search(q, top_k=30) for q in queries], 3) / len(queries)
    masked = _timed(lambda: [index.search(q, top_k=30, filters={"category": DOMAINS[0]}) for q in queries], 3)
    masked /= len(queries)
    print(f"L1 {m:,} chunks (128 dims, built in {build:.1f} s): filtered / unfiltered search = "
          f"{masked / plain:.2f} (unfiltered {plain * 1000:.1f} ms/query in this run)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--chunks", type=int, default=200_000)
    args = parser.parse_args()
    rng = random.Random(7)
    bench_l0(args.entries, rng)
    bench_l1(args.chunks, rng)


if __name__ == "__main__":
    main()
