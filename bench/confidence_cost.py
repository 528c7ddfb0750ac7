"""Benchmark (not a test): what the relevance confidence costs a lookup.
`python bench/confidence_cost.py` (`--chunks 100000 --queries 1000` by default).

On the real-text base of bench/realtext.py, looks every query up and reads the lookup's own stage timings
(`retrieval_details.timings_ms`): `relevance` is the whole grade (the signals, the fitted confidence, the
basis sentence), `total` the lookup. The grade it replaced compared one score with 0.4 (microseconds), so
total / (total - relevance) is what the confidence adds. Prints the medians and that ratio, from one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realtext import build_corpus, queries_from

from retrieval import lookup_knowledge, open_index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--corpus-dir", type=Path, default=Path(tempfile.gettempdir()) / "lookup-knowledge-bench")
    args = parser.parse_args(argv)
    corpus = build_corpus(args.chunks, args.corpus_dir)
    index = open_index(corpus.root)
    queries = [q for _, q in queries_from(corpus, args.queries)]
    for query in queries[:50]:
        lookup_knowledge(query, index=index)
    grade, total = [], []
    for query in queries:
        timings = lookup_knowledge(query, index=index).retrieval_details["timings_ms"]
        grade.append(timings["relevance"])
        total.append(timings["total"])
    ratios = sorted(t / (t - g) for t, g in zip(total, grade, strict=True))
    print(f"{args.chunks:,} chunks, {len(queries)} queries: the grade p50 {statistics.median(grade):.3f} ms "
          f"(p95 {sorted(grade)[int(0.95 * len(grade))]:.3f}) of a lookup's p50 {statistics.median(total):.3f} ms; "
          f"total / (total - grade): p50 {statistics.median(ratios):.3f}, mean "
          f"{statistics.mean(total) / (statistics.mean(total) - statistics.mean(grade)):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
