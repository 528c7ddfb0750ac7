"""Benchmark (not a test): what `--workers N` saves, and what the fan-out costs the default serial run.

    python bench/parallel_bench.py sweep                       # SciFact train: the 4-run sweep, 1 vs 2 workers
    python bench/parallel_bench.py sweep --dataset data --split all --rounds 3
    python bench/parallel_bench.py serial --against /tmp/old   # `eval run` here vs older code, e.g.
        # mkdir /tmp/old; git archive <commit> | tar -x -C /tmp/old

Every timed command is a real `python -m eval ...` process (its wall time is what an analyst waits), with
its own trace file and one warm index cache (each checkout's index is built once, untimed, first: the
cache key covers the indexing code). `sweep` times `eval sweep --grid l0_filter=true,false --grid
l1_pool=20,40` with `--workers 1` and `--workers N`; `serial` times `eval run` (one worker) with this
checkout's code and with `--against`'s. The two sides take turns, ABBA within each round, so the machine's
drift reaches both alike; the ratio is sum(B) / sum(A) over the run, and `ratio_best` min(B) / min(A).
`--json` prints the figures as JSON.
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
SHARED = Path(os.environ.get("LOOKUP_KNOWLEDGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
GRID = ["--grid", "l0_filter=true,false", "--grid", "l1_pool=20,40"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("sweep", "serial"))
    parser.add_argument("--dataset", default=str(SHARED / "scifact"), help="default: the shared SciFact")
    parser.add_argument("--split", default="train")
    parser.add_argument("--workers", type=int, default=2, help="the fanned-out side of `sweep`")
    parser.add_argument("--against", type=Path, help="`serial`: a checkout of older code (the reference)")
    parser.add_argument("--rounds", type=int, default=1, help="ABBA rounds (each times both sides twice)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.mode == "serial" and args.against is None:
        parser.error("serial needs --against CHECKOUT (the code to compare this checkout's serial run with)")
    figures = measure(args)
    print(json.dumps(figures, indent=2) if args.json else table(figures))


def measure(args: argparse.Namespace) -> dict:
    """Both sides' wall times, interleaved ABBA, and their ratio."""
    data = ["--dataset", str(Path(args.dataset).resolve()), "--split", args.split, "--no-progress", "--json"]
    if args.mode == "sweep":
        sides = {"serial": (ROOT, ["sweep", *data, *GRID, "--workers", "1"]),
                 f"workers {args.workers}": (ROOT, ["sweep", *data, *GRID, "--workers", str(args.workers)])}
    else:
        sides = {"reference": (args.against.resolve(), ["run", *data]), "this checkout": (ROOT, ["run", *data])}
    with tempfile.TemporaryDirectory(prefix="parallel-bench-") as work:
        env = {**os.environ, "LOOKUP_KNOWLEDGE_CACHE": os.environ.get("LOOKUP_KNOWLEDGE_CACHE",
                                                                      str(Path(work) / "cache"))}
        for checkout in {checkout for checkout, _ in sides.values()}:  # build each checkout's index, untimed
            _timed(checkout, ["run", *data, "--sample", "5"], env, Path(work) / "warm.duckdb")
        names = list(sides)
        times: dict[str, list[float]] = {name: [] for name in names}
        seconds: dict[str, list[float]] = {name: [] for name in names}
        for number in range(args.rounds):
            for turn, name in enumerate([names[0], names[1], names[1], names[0]]):
                checkout, command = sides[name]
                wall, output = _timed(checkout, command, env, Path(work) / f"t{number}-{turn}.duckdb")
                times[name].append(wall)
                seconds[name].append(sum(r["seconds"] for r in (output if isinstance(output, list) else [output])))
    a, b = names
    return {"mode": args.mode, "dataset": args.dataset, "split": args.split, "cores": len(os.sched_getaffinity(0)),
            "wall_s": times, "run_seconds": seconds, "sides": names,
            "ratio": round(sum(times[b]) / sum(times[a]), 3),
            # noise only ever adds time, and more to the side that fills every core: best turn over best turn
            # (timeit's rule) is the steadier estimate of what the code costs
            "ratio_best": round(min(times[b]) / min(times[a]), 3),
            # a fanned-out sweep's runs all start at once, so only a serial side's own seconds add up
            "run_seconds_ratio": round(sum(seconds[b]) / sum(seconds[a]), 3) if args.mode == "serial" else None}


def _timed(checkout: Path, command: list[str], env: dict[str, str], traces: Path) -> tuple[float, object]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "eval", *command, "--traces", str(traces)], cwd=checkout,
                          env={**env, "PYTHONPATH": str(checkout)}, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {checkout}: {done.stderr[-2000:]}")
    return wall, json.loads(done.stdout)


def table(figures: dict) -> str:
    a, b = figures["sides"]
    lines = [f"{figures['mode']} on {figures['dataset']} ({figures['split']}), {figures['cores']} cores",
             "| side | wall (s) per turn | the runs' own seconds |", "| --- | --- | --- |"]
    for name in (a, b):
        walls = ", ".join(f"{t:.2f}" for t in figures["wall_s"][name])
        own = ", ".join(f"{t:.2f}" for t in figures["run_seconds"][name])
        lines.append(f"| {name} | {walls} | {own} |")
    lines.append(f"{b} / {a}: wall {figures['ratio']} (best turns {figures['ratio_best']}), the runs' own seconds "
                 f"{figures['run_seconds_ratio']}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
