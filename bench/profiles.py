"""The bench's profiles: where a lookup's time goes (cProfile by own time) and L1's stages inside it."""

from __future__ import annotations

import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


import numpy as np

from retrieval import lookup_knowledge


def profile(index, queries, config) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    timings: dict[str, list[float]] = {}
    for query, _ in queries:
        result = lookup_knowledge(query, index=index, config=config)
        for stage, ms in result.retrieval_details["timings_ms"].items():
            timings.setdefault(stage, []).append(ms)
    profiler.disable()
    print("\nlookup stages, p50 ms: " + ", ".join(f"{s} {statistics.median(v):.2f}" for s, v in timings.items()))
    print_profile(profiler, "profile of those lookups, by own time (cProfile adds overhead):", 12)


def tail(index, queries, config, rounds: int = 2) -> None:
    """Where the p95's time goes: each query's lookup stages (the slower `rounds` times: the tail of one
    query, not of the machine, is wanted), then the slowest 5% of queries' mean stages beside the median
    query's, their L1 parts (score, unfiltered probe, filtered) and what makes them slow: their query terms'
    postings (rows read to score them) and the LSA rows their search scored."""
    l1 = index.l1
    search = dict(top_k=config.l1_pool, min_score=config.l1_min_score, page_weight=config.page_weight)
    rows = []
    for query, _ in queries:
        best: dict[str, float] | None = None
        for _ in range(rounds):
            l1._last_scores = None  # a lookup of the query just looked up reuses its scores: time a fresh one
            details = lookup_knowledge(query, index=index, config=config).retrieval_details
            if best is None or details["timings_ms"]["total"] < best["total"]:
                best = dict(details["timings_ms"])
                decision = details["filter"]
        filters = dict(decision["applied"]) if decision.get("decision") == "applied" else None
        best.update(l1_stages(l1, query, filters, config, search))
        scores = l1.score(query, tfidf_weight=config.l1_tfidf_weight, static_weight=config.l1_static_weight)
        best["postings"] = float(np.count_nonzero(scores.lexical)) if scores.lexical is not None else 0.0
        l1._last_scores = None
        best["lsa rows"] = float(l1.search(query, tfidf_weight=config.l1_tfidf_weight,
                                           static_weight=config.l1_static_weight, **search).rows_scored)
        rows.append(best)
    rows.sort(key=lambda r: r["total"])
    slow = rows[int(len(rows) * 0.95):] or rows[-1:]
    middle = rows[len(rows) // 2]
    names = [n for n in rows[0] if n != "total"] + ["total"]
    print(f"\nthe slowest 5% of lookups ({len(slow)} queries) against the median one, ms (rows: counts):")
    print("  " + " | ".join(f"{n} {statistics.mean(r.get(n, 0.0) for r in slow):.2f} / {middle.get(n, 0.0):.2f}"
                            for n in names))


def l1_breakdown(index, queries, config) -> None:
    """L1 inside a lookup, in this thread (the lookup runs it on a worker the profile above cannot see):
    scoring the query, the unfiltered probe, and the filtered search under the filter the lookup applied,
    which is read off the probe when provably the same."""
    l1 = index.l1
    search = dict(top_k=config.l1_pool, min_score=config.l1_min_score, page_weight=config.page_weight)
    applied = []
    for query, _ in queries:
        decision = lookup_knowledge(query, index=index, config=config).retrieval_details["filter"]
        applied.append(dict(decision["applied"]) if decision.get("decision") == "applied" else None)
    times: dict[str, list[float]] = {"score": [], "probe": [], "filtered": []}
    derived = 0
    for (query, _), filters in zip(queries, applied, strict=True):  # timed, without the profiler
        for stage, ms in l1_stages(l1, query, filters, config, search).items():
            times[stage].append(ms)
        derived += filters is not None and l1.from_probe(query, filters=filters, tfidf_weight=config.l1_tfidf_weight,
                                                         static_weight=config.l1_static_weight, **search) is not None
    profiler = cProfile.Profile()
    profiler.enable()
    for (query, _), filters in zip(queries, applied, strict=True):
        l1_stages(l1, query, filters, config, search)
    profiler.disable()
    print(f"\nL1 inside those lookups, p50 ms: score {statistics.median(times['score']):.2f}, unfiltered probe "
          f"{statistics.median(times['probe']):.2f}, filtered {statistics.median(times['filtered'] or [0]):.2f} "
          f"({derived} of {len(times['filtered'])} filtered searches read off the probe)")
    print_profile(profiler, "profile of L1 alone, by own time:", 10)


def print_profile(profiler: cProfile.Profile, title: str, rows: int) -> None:
    """The `rows` functions with the most own time, under their column header."""
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(rows)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    print(title)
    print("\n".join("  " + line for line in lines[start:start + rows + 1]))


def l1_stages(l1, query: str, filters: dict | None, config, search: dict) -> dict[str, float]:
    """One lookup's L1 work, in ms: scoring, the unfiltered probe, and the filtered search (read off the
    probe when it can be, as the lookup does)."""
    l1._last_scores = None
    started = time.perf_counter()
    scores = l1.score(query, tfidf_weight=config.l1_tfidf_weight, static_weight=config.l1_static_weight)
    took = {"score": (time.perf_counter() - started) * 1000}
    started = time.perf_counter()
    l1.select(scores, **search)
    took["probe"] = (time.perf_counter() - started) * 1000
    if filters is not None:
        started = time.perf_counter()
        if l1.from_probe(query, filters=filters, tfidf_weight=config.l1_tfidf_weight,
                         static_weight=config.l1_static_weight, **search) is None:
            l1.select(scores, filters=filters, **search)
        took["filtered"] = (time.perf_counter() - started) * 1000
    return took
