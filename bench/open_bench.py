"""Benchmark (not a test): how long opening an index takes, built and cached, in both shapes of base.

    python bench/open_bench.py                       # 100k BEIR-shaped and 100k real-text
    python bench/open_bench.py --million             # and the 1M-chunk real-text base (~6 GB RAM, minutes)
    python bench/open_bench.py --baseline /tmp/old   # and the same opens with an older checkout's code
                                                     # (mkdir /tmp/old; git archive <commit> | tar -x -C /tmp/old)

Bases (written once under --corpus-dir and reused, see bench/realtext.py):
- `beir`: a BEIR-shaped `corpus.jsonl`, one record (`_id`, `title`, `text`) per document: 100k entries for
  100k chunks;
- `realtext`: the Markdown base of bench/run.py: 100k chunks in about 5,900 pages (1M: about 65,000).

For each base, in a fresh cache folder: one process opens it three times (the first open builds and writes
the cache; the second and third load it in the process that built it: the acceptance figure is the
second), then a fresh process opens it twice (its first open also imports what a load needs). Each child
process reports its times as JSON; the table puts them side by side with the cache's size and the time
to hash-check all its files. Absolute times drift on a shared machine: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000, help="documents of the BEIR-shaped base")
    parser.add_argument("--chunks", type=int, default=100_000, help="chunks of the real-text base")
    parser.add_argument("--million", action="store_true", help="also the 1M-chunk real-text base")
    parser.add_argument("--baseline", type=Path, help="a checkout of older code to time the same opens with")
    parser.add_argument("--corpus-dir", type=Path, default=Path(tempfile.gettempdir()) / "lookup-knowledge-bench")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "KB", "CACHE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return

    from realtext import build_beir_corpus, build_corpus

    bases = [("beir", build_beir_corpus(args.documents, args.corpus_dir)),
             ("realtext", build_corpus(args.chunks, args.corpus_dir))]
    if args.million:
        bases.append(("realtext", build_corpus(1_000_000, args.corpus_dir)))
    codes = [("this code", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    rows = []
    for shape, corpus in bases:
        for label, code in codes:
            with tempfile.TemporaryDirectory(dir=args.corpus_dir) as scratch:
                built = _run(code, "build", corpus.root, Path(scratch))
                fresh = _run(code, "load", corpus.root, Path(scratch))
            rows.append((shape, corpus, label, built, fresh))
            print(f"{shape} {corpus.chunks:,} chunks, {label}: {json.dumps({**built, **fresh})}", flush=True)
    _table(rows, bool(args.baseline))


def _run(code: Path, mode: str, kb: Path, cache: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code), "LOOKUP_KNOWLEDGE_CACHE_MAX_MB": "65536"}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", mode, str(kb), str(cache)],
                          cwd=code, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} with {code} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _child(mode: str, kb: str, cache: str) -> None:
    started = time.perf_counter()
    from retrieval import open_index

    imported = time.perf_counter() - started
    times = []
    for _ in range(3 if mode == "build" else 2):
        started = time.perf_counter()
        index = open_index(kb, cache_dir=cache)
        times.append(time.perf_counter() - started)
        cached = index.from_cache
        del index
    if mode == "build":
        folder = next(p for p in Path(cache).iterdir() if (p / "manifest.json").is_file())
        size = sum(f.stat().st_size for f in folder.iterdir())
        result = {"build_s": times[0], "same_process_s": times[1], "same_process_again_s": times[2],
                  "cache_mb": size / 2**20, "check_s": _check_seconds(folder), "third_from_cache": cached,
                  "module": open_index.__module__, "code": str(Path(sys.modules["retrieval"].__file__).parent)}
    else:
        result = {"import_s": imported, "fresh_process_s": times[0], "fresh_process_again_s": times[1],
                  "fresh_from_cache": cached}
    print(json.dumps(result))


def _check_seconds(folder: Path) -> float:
    """The time the cache check of this code takes over every file of `folder` (its hash pass)."""
    from retrieval.index import file_digest as check

    started = time.perf_counter()
    for file in folder.glob("*.npy"):
        check(file)
    return time.perf_counter() - started


def _table(rows, with_baseline: bool) -> None:
    print("\n| base | entries | chunks | code | build (1st open) | cached open, same process (2nd / 3rd) | "
          "cached open, fresh process (1st / 2nd) | cache | hash check |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for shape, corpus, label, built, fresh in rows:
        entries = corpus.pages
        print(f"| {shape} | {entries:,} | {corpus.chunks:,} | {label} | {built['build_s']:.1f} s | "
              f"{built['same_process_s']:.2f} / {built['same_process_again_s']:.2f} s | "
              f"{fresh['fresh_process_s']:.2f} / {fresh['fresh_process_again_s']:.2f} s | "
              f"{built['cache_mb']:,.0f} MB | {built['check_s']:.2f} s |")
    if with_baseline:
        print("\nratios, baseline / this code (cached open, same process):")
        for i in range(0, len(rows), 2):
            shape, corpus, _, new, _ = rows[i]
            old = rows[i + 1][3]
            print(f"  {shape} {corpus.chunks:,} chunks: {old['same_process_s'] / new['same_process_s']:.1f}x")


if __name__ == "__main__":
    main()
