"""Benchmark (not a test): `python bench/run.py --chunks 100000` (or 1000000).

Builds a real-text knowledge base from the machine's man pages and /usr/share/doc (bench/realtext.py,
category = where the text came from), then measures in one run and prints ratios, since absolute times
drift on shared machines:
- build time, cache load time, peak RSS; the lookups are timed in a fresh process that opens the cached index,
  as the MCP server and the app do (the building process's heap is full of the build's holes);
- lookup end to end with a TraceStore recorder (p50/p95), against the naive design in the same run:
  rank-bm25 `get_scores` over the entries, then scikit-learn TfidfVectorizer -> TruncatedSVD.transform ->
  cosine over every chunk. The traced lookup, the untraced one and the naive design take turns in blocks
  of 25 queries, so the machine's drift during a run reaches all three alike;
- a machine-speed probe at the start and end (a Python loop and a BLAS product): this shared machine
  changes speed, and interpreted code (the lookup) more than BLAS (the naive design);
- L0 alone; L1 fast (bounded) and exact, unfiltered and filtered by the query's category, and the recall@l1_pool
  of fast against exact; the trace record cost; a profile breakdown of the lookup, and of L1 within it.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from machine import cli_startup, machine_speed
from profiles import l1_breakdown, profile, tail
from realtext import build_corpus, queries_from

from retrieval import LookupConfig, TraceStore, build_index, lookup_knowledge, open_index
from retrieval.l0 import entry_terms
from retrieval.text import tokenize

NAIVE_SVD_SAMPLE = 20_000


BUILD_PAIRS = 3  # builds without and with the static part, in turn: one pair's ratio moved by 0.4 on this machine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--corpus-dir", type=Path, default=Path(tempfile.gettempdir()) / "lookup-knowledge-bench",
                        help="where the real-text corpus is written once and reused")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive design (slow to build at 1M)")
    parser.add_argument("--no-build-ratio", action="store_true",
                        help="skip the extra builds (3 pairs) that time L1's static part (slow at 1M)")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the serving process: this cache folder
    parser.add_argument("--build-seconds", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--building-l1-fast", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args)
        return

    print(f"machine speed at the start: {machine_speed()}")
    corpus = build_corpus(args.chunks, args.corpus_dir)
    print(f"corpus: {corpus.chunks:,} chunks in {corpus.pages:,} pages, {len(corpus.categories)} categories "
          f"({corpus.root})")
    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "cache"
        started = time.perf_counter()
        index = open_index(corpus.root, cache_dir=cache)
        open_seconds = time.perf_counter() - started
        build_rss = _peak_rss_gb()
        print(f"build: {index.build_seconds:.1f} s to index ({open_seconds:.1f} s with loading the Markdown); "
              f"peak RSS {build_rss:.2f} GB; {index.l1.dimensions} LSA dimensions, "
              f"{len(index.l1.vocabulary):,} terms")
        # the static part's build cost: two more builds of the loaded base, warm, without it then with it (the
        # first build of a process also pays for imports and a cold page cache, so it is not the reference)
        if not args.no_build_ratio:
            pairs = [(build_index(index.kb, embedder=None).build_seconds, build_index(index.kb).build_seconds)
                     for _ in range(BUILD_PAIRS)]
            ratios = sorted(with_static / without for without, with_static in pairs)
            print(f"build of the loaded base, warm, {BUILD_PAIRS} pairs: without the static part "
                  f"{', '.join(f'{w:.1f}' for w, _ in pairs)} s; with it {', '.join(f'{s:.1f}' for _, s in pairs)} s; "
                  f"with / without = {statistics.median(ratios):.2f} (median; {ratios[0]:.2f}-{ratios[-1]:.2f})")
        building_fast = _building_process_l1(index, corpus, args.queries)
        del index
        print(f"peak RSS of the building process: {_peak_rss_gb():.2f} GB", flush=True)
        # the lookups are timed where an agent's lookups run: a process that opens the cached index (the MCP
        # server, the app). In the process that built it, glibc's heap keeps the build's holes (at 1M chunks
        # about 50,000 free blocks, 1.7 GB) and numpy's allocations there spent a quarter of L1's time in
        # _int_malloc (docs/benchmarks.md), which no serving process pays
        serve = [sys.executable, str(Path(__file__).resolve()), "--serve", str(cache), "--chunks", str(args.chunks),
                 "--queries", str(args.queries), "--corpus-dir", str(args.corpus_dir), "--build-seconds",
                 f"{open_seconds:.3f}", "--building-l1-fast", f"{building_fast:.3f}"]
        if args.no_naive:
            serve.append("--no-naive")
        if subprocess.run(serve, check=False).returncode != 0:
            raise SystemExit("the serving process failed")
    cli_startup()
    print(f"machine speed at the end: {machine_speed()}")


def _serve(args) -> None:
    """The serving process: open the cached index (the cache load), then every lookup measurement."""
    corpus = build_corpus(args.chunks, args.corpus_dir)
    started = time.perf_counter()
    cached = open_index(corpus.root, cache_dir=args.serve)
    load_seconds = time.perf_counter() - started
    if not cached.from_cache:
        raise SystemExit("the serving process's open did not come from the cache")
    print(f"cache load, in a fresh serving process: {load_seconds:.2f} s "
          f"(build / load = {args.build_seconds / load_seconds:.0f}x)")
    queries = [(query, category) for category, query in queries_from(corpus, args.queries)]
    with tempfile.TemporaryDirectory() as scratch:
        fast = _measure(cached, queries, Path(scratch), args.no_naive)
    print(f"  L1 fast p50 in the process that built the index: {args.building_l1_fast:.2f} ms "
          f"({args.building_l1_fast / fast:.2f}x the serving process's)")
    print(f"peak RSS of the serving process: {_peak_rss_gb():.2f} GB", flush=True)


def _building_process_l1(index, corpus, count: int) -> float:
    """L1 fast's p50 (ms) in the process that built `index`: for contrast with the serving process."""
    queries = [(query, category) for category, query in queries_from(corpus, count)]
    fresh = _fresh_search(index.l1, _l1_settings(LookupConfig()))
    _times(lambda q, c: fresh(q, None, False), queries[:5])
    return _p(_times(lambda q, c: fresh(q, None, False), queries), 50)


def _l1_settings(config: LookupConfig) -> dict:
    """The L1 search arguments a lookup with `config` passes (its probe's)."""
    return dict(top_k=config.l1_pool, min_score=config.l1_min_score, tfidf_weight=config.l1_tfidf_weight,
                page_weight=config.page_weight, static_weight=config.l1_static_weight)


def _fresh_search(l1, search: dict):
    """`fresh(query, category, exact)`: one whole L1 search, never a score reused from the query before."""

    def fresh(q: str, c: str | None, exact: bool):
        l1._last_scores = None
        return l1.search(q, filters={"category": c} if c else None, exact=exact, **search)

    return fresh


def _measure(index, queries: list[tuple[str, str]], scratch: Path, skip_naive: bool) -> float:
    """Every lookup measurement on `index`, printed; returns L1 fast's p50 (ms)."""
    config = LookupConfig()
    for query, _ in queries[:5]:  # warm-up: page in the memory-mapped LSA rows, fill caches
        lookup_knowledge(query, index=index, config=config)
    store = TraceStore(scratch / "traces.duckdb")
    for query, _ in queries[:5]:  # steady state: the store's first drain (DuckDB's import, the table) is done
        lookup_knowledge(query, index=index, config=config, recorder=store)
    store.flush()
    record_ms: list[float] = []

    def recorder(invocation) -> None:
        started = time.perf_counter()
        store(invocation)
        record_ms.append((time.perf_counter() - started) * 1000)

    # traced, untraced and naive in alternating blocks of the same queries: a shared machine's speed drifts
    # within a run, and timing each design in its own stretch of the run let that drift into their ratio
    no_static = replace(config, l1_static_weight=0.0)  # today's lookup before L1 had a static part
    designs = {"traced": lambda q, c: lookup_knowledge(q, index=index, config=config, recorder=recorder),
               "bare": lambda q, c: lookup_knowledge(q, index=index, config=config),
               "traced, no static": lambda q, c: lookup_knowledge(q, index=index, config=no_static, recorder=store)}
    if not skip_naive:
        designs["naive"] = _naive(index)
    timed = _interleaved(designs, queries, warm_up=queries[:2])
    traced, bare, naive = timed["traced"], timed["bare"], timed.get("naive")
    traced_no_static = timed["traced, no static"]
    flush = getattr(store, "flush", None)
    if flush is not None:
        flush()
    close = getattr(store, "close", None)
    if close is not None:
        close()
    filtered_lookup = _times(lambda q, c: lookup_knowledge(q, index=index, config=config, category=c), queries)
    l0 = _times(lambda q, c: index.l0.match(q, max_matches=config.l0_max_matches,
                                            min_score_ratio=config.l0_min_score_ratio), queries)
    l1 = index.l1
    search = _l1_settings(config)
    fresh = _fresh_search(l1, search)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fast = _times(lambda q, c: fresh(q, None, False), queries)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / len(queries)
    exact = _times(lambda q, c: fresh(q, None, True), queries)
    fast_filtered = _times(lambda q, c: fresh(q, c, False), queries)
    exact_filtered = _times(lambda q, c: fresh(q, c, True), queries)
    recall = _recall(l1, queries, search)
    scored = statistics.mean(fresh(q, None, False).rows_scored / len(l1.chunks) for q, _ in queries[:50])

    print(f"\nper query, {len(queries)} queries (p50 / p95 ms):")
    rows = [("lookup + TraceStore (end to end)", traced), ("lookup, no recorder", bare),
            ("lookup + TraceStore, static part off", traced_no_static),
            ("lookup, caller's category", filtered_lookup), ("L0 alone", l0),
            ("L1 fast, unfiltered", fast), ("L1 exact, unfiltered", exact),
            ("L1 fast, filtered", fast_filtered), ("L1 exact, filtered", exact_filtered),
            ("trace record (the recorder call)", record_ms)]
    for name, values in rows:
        print(f"  {name:36s} {_p(values, 50):8.2f} {_p(values, 95):8.2f}")
    print(f"  L1 fast scored {scored:.1%} of the chunks' LSA vectors on average; recall@{config.l1_pool} fast vs exact "
          f"{recall:.3f}; {faults:.0f} minor page faults per L1 fast search")
    print("\nratios (same run):")
    print(f"  traced, static on / off (p50)       {_p(traced, 50) / _p(traced_no_static, 50):6.2f}")
    print(f"  L1 exact / fast (unfiltered)        {_p(exact, 50) / _p(fast, 50):6.1f}x")
    print(f"  L1 fast filtered / unfiltered       {_p(fast_filtered, 50) / _p(fast, 50):6.2f}")
    print(f"  lookup caller-filtered / unfiltered {_p(filtered_lookup, 50) / _p(bare, 50):6.2f}")
    print(f"  trace record / lookup (p50)         {_p(record_ms, 50) / _p(bare, 50):6.2f}")
    print(f"  recorder's share of p50 (traced / untraced - 1, bound +15%) "
          f"{_p(traced, 50) / _p(bare, 50) - 1:+.1%}")
    if naive is not None:
        print(f"  naive / lookup + TraceStore (p50)   {_p(naive, 50) / _p(traced, 50):6.1f}x "
              f"(naive p50 {_p(naive, 50):.1f} ms)")
    profile(index, queries, config)
    l1_breakdown(index, queries, config)
    tail(index, queries, config)
    return _p(fast, 50)


def _naive(index):
    """The naive design, one query at a time: rank-bm25 over the entries, then TfidfVectorizer ->
    TruncatedSVD.transform -> cosine over every chunk and a top 30. The SVD is fitted on a sample (its fit is
    a build cost, not a query cost) and the chunk vectors are our LSA matrix (same shape, same scan)."""
    from rank_bm25 import BM25Okapi
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    bm25 = BM25Okapi([entry_terms(e) or ["_"] for e in index.kb.entries])
    chunks = index.l1.chunks
    vectorizer = TfidfVectorizer(sublinear_tf=True, dtype=np.float32)
    matrix = vectorizer.fit_transform(f"{c.breadcrumb}\n{c.text}" for c in chunks)
    rows = np.random.default_rng(0).choice(matrix.shape[0], min(NAIVE_SVD_SAMPLE, matrix.shape[0]), replace=False)
    svd = TruncatedSVD(n_components=index.l1.dimensions, random_state=0).fit(matrix[rows])
    vectors = np.asarray(index.l1.arrays.lsa)

    def one(query: str, _category: str) -> None:
        bm25.get_scores(tokenize(query))
        projected = svd.transform(vectorizer.transform([query]))[0].astype(np.float32)
        cosine = vectors @ (projected / (np.linalg.norm(projected) or 1.0))
        np.argpartition(-cosine, 30)[:30]

    return one


def _interleaved(designs: dict, queries: list[tuple[str, str]], warm_up: list[tuple[str, str]],
                 block: int = 25) -> dict[str, list[float]]:
    """Each design timed on every query, the designs taking turns block by block. What ran just before a
    block shapes it (the naive scan reads 100 MB per query and leaves BLAS threads busy: a lookup block
    right after it ran 10-20% slower), so every design has each other design before it equally often:
    the last design (the naive one) closes every turn, and the others take each rotation of their order,
    then each reversed (a swap of three kept the middle one, the untraced lookup, from ever following the
    naive scan, after which the first lookups of any design run about twice as slow: it read as +16-26% for
    recording at p50). Each block starts with the untimed `warm_up` queries, and the first turn is preceded
    by the last design's, as every later turn is."""
    times: dict[str, list[float]] = {name: [] for name in designs}
    *ours, last = list(designs)
    orders = [ours[i:] + ours[:i] for i in range(len(ours))]
    orders += [order[::-1] for order in orders]
    for query, category in warm_up:
        designs[last](query, category)
    for turn, start in enumerate(range(0, len(queries), block)):
        for name in orders[turn % len(orders)] + [last]:
            work = designs[name]
            for query, category in warm_up:
                work(query, category)
            times[name].extend(_times(work, queries[start:start + block]))
    return times


def _recall(l1, queries, search) -> float:
    hits = total = 0
    for query, _ in queries:
        l1._last_scores = None
        fast = {c.chunk.chunk_id for c in l1.search(query, **search).candidates}
        exact = {c.chunk.chunk_id for c in l1.search(query, exact=True, **search).candidates}
        hits += len(fast & exact)
        total += len(exact)
    return hits / total if total else 1.0


def _times(work, queries) -> list[float]:
    values = []
    for query, category in queries:
        started = time.perf_counter()
        work(query, category)
        values.append((time.perf_counter() - started) * 1000)
    return values


def _p(values: list[float], percentile: int) -> float:
    return float(np.percentile(values, percentile)) if values else float("nan")


def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


if __name__ == "__main__":
    main()
