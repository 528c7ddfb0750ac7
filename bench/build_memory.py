"""Benchmark (not a test): `python bench/build_memory.py --chunks 1000000`.

Where an index build's memory goes: builds bench/realtext.py's base (`open_index`, no cache) while a thread
samples the process's resident set every 10 ms, and prints, per build stage (retrieval.index.progress), the
RSS when it started and its peak within it, then the build's peak (VmHWM) and the cached open's seconds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realtext import build_corpus

from retrieval import open_index


def rss_mb(field: str = "VmRSS") -> float:
    """The process's resident set (or another /proc/self/status field) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


class StageMemory:
    """Per stage: RSS at its start and its peak while it ran (sampled by a thread)."""

    def __init__(self) -> None:
        self.stage = "start"
        self.started = time.perf_counter()
        self.rows: dict[str, list[float]] = {"start": [rss_mb(), rss_mb(), 0.0]}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def progress(self, stage: str, fraction: float) -> None:
        if stage != self.stage:
            now = rss_mb()
            self.rows.setdefault(stage, [now, now, time.perf_counter() - self.started])
            self.stage = stage

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            row = self.rows.get(self.stage)
            if row is not None:
                row[1] = max(row[1], rss_mb())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--corpus-dir", type=Path, default=Path(tempfile.gettempdir()) / "lookup-knowledge-bench")
    parser.add_argument("--cache-dir", type=Path, help="keep the built index's cache here (default: a scratch folder)")
    args = parser.parse_args()
    corpus = build_corpus(args.chunks, args.corpus_dir)
    print(f"corpus: {corpus.chunks:,} chunks in {corpus.pages:,} pages ({corpus.root})")
    with tempfile.TemporaryDirectory() as scratch:
        memory = StageMemory()
        started = time.perf_counter()
        cache = args.cache_dir or Path(scratch) / "cache"
        index = open_index(corpus.root, cache_dir=cache, progress=memory.progress, rebuild=True)
        seconds = time.perf_counter() - started
        memory.stop()
        print("| stage | starts at (s) | RSS at its start (MB) | peak within it (MB) |")
        print("| --- | --- | --- | --- |")
        for stage, (first, peak, at) in memory.rows.items():
            print(f"| {stage} | {at:.1f} | {first:,.0f} | {peak:,.0f} |")
        print(f"build with reading: {seconds:.1f} s ({index.build_seconds:.1f} s to index); "
              f"peak RSS (VmHWM) {rss_mb('VmHWM') / 1024:.2f} GB")
        del index
        started = time.perf_counter()
        cached = open_index(corpus.root, cache_dir=cache)
        print(f"cached open: {time.perf_counter() - started:.2f} s (from cache: {cached.from_cache})")


if __name__ == "__main__":
    main()
