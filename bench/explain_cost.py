"""Benchmark (not a test): what "why not this page?" costs. `python bench/explain_cost.py` (needs ../shared/data).

1. Explaining one source against one lookup: for each Hugo dev question, a relevant page the default lookup did not
   return (else its last relevant page) is explained with `explain_missing` (its own lookup included), and the
   same question is looked up, alternately, another question between them (L1 keeps the last query's scores);
   prints the median of the per-question ratios.
2. Attribution in an evaluation run: the Hugo dev set and SciFact's train split are evaluated with and without
   attribution (`attribute=False`), alternately, `--rounds` times each; prints each set's ratio of the median
   wall times.
Ratios come from one run, so the machine's drift cancels out.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eval import runs
from eval.datasets import load_dataset, load_query_set
from retrieval import TraceStore, explain_missing, lookup_knowledge

ROOT = Path(__file__).resolve().parents[1]
EXCLUDE = "news,showcase,myshowcase,readfiles,maintenance"


def explain_ratio(shared: Path) -> tuple[float, float, float]:
    """Median per-question ratio explain_missing(one source) / lookup_knowledge, and the two medians (ms)."""
    dataset = load_query_set(shared / "hugo_docs" / "content" / "en", shared / "hugo_docs" / "dev_queries.jsonl",
                             exclude_paths=EXCLUDE)
    index = runs.open_dataset_index(dataset, 256)
    for query in dataset.queries[:20]:
        lookup_knowledge(query.text, index=index)
    ratios, lookups, explains = [], [], []
    other = "an unrelated question that clears L1's last-query cache"
    for query in dataset.queries:
        returned = {b.source for b in lookup_knowledge(query.text, index=index).evidence_blocks}
        relevant = [s for s, g in query.qrels.items() if g > 0]
        source = next((s for s in relevant if s not in returned), relevant[-1])
        lookup_knowledge(other, index=index)  # L1 keeps the last query's scores: neither timing may reuse them
        started = time.perf_counter()
        lookup_knowledge(query.text, index=index)
        looked = time.perf_counter() - started
        lookup_knowledge(other, index=index)
        started = time.perf_counter()
        explain_missing(query.text, [source], index=index)
        explained = time.perf_counter() - started
        ratios.append(explained / looked)
        lookups.append(looked * 1000)
        explains.append(explained * 1000)
    return statistics.median(ratios), statistics.median(lookups), statistics.median(explains)


def run_ratio(dataset, rounds: int) -> tuple[float, float, float]:
    """Median wall time of a run with attribution over one without, and the two medians (s)."""
    index = runs.open_dataset_index(dataset, 256)
    timed: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as folder:
        store = TraceStore(Path(folder) / "t.duckdb")
        for _ in range(rounds):
            for attribute in (False, True):
                started = time.perf_counter()
                runs.run_evaluation(dataset, store=store, index=index, baseline=False, oracle=False,
                                    attribute=attribute)
                timed[attribute].append(time.perf_counter() - started)
        store.close()
    on, off = statistics.median(timed[True]), statistics.median(timed[False])
    return on / off, on, off


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    shared = Path(os.environ.get("LOOKUP_KNOWLEDGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
    if not (shared / "hugo_docs").is_dir():
        print(f"error: the shared data is not at {shared}; set LOOKUP_KNOWLEDGE_SHARED_DATA", file=sys.stderr)
        return 2
    ratio, looked, explained = explain_ratio(shared)
    print(f"explain one source / one lookup (Hugo dev, 155 questions): median ratio {ratio:.2f}x "
          f"(lookup {looked:.2f} ms, explain {explained:.2f} ms)")
    sets = {"Hugo dev": load_query_set(shared / "hugo_docs" / "content" / "en",
                                       shared / "hugo_docs" / "dev_queries.jsonl", exclude_paths=EXCLUDE),
            "SciFact train": load_dataset(shared / "scifact", split="train")}
    for name, dataset in sets.items():
        ratio, on, off = run_ratio(dataset, args.rounds)
        print(f"evaluation run with / without attribution ({name}, {len(dataset.queries)} questions, "
              f"{args.rounds} rounds): {ratio:.3f}x ({on:.2f} s vs {off:.2f} s, medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
