"""The bench's machine probes: the CLI's start-up time and a machine-speed probe (bench/run.py prints both)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def cli_startup() -> None:
    """Wall time of `python -m retrieval lookup` on the sample, the index already cached (median of 3)."""
    root = Path(__file__).resolve().parents[1]
    traces = Path(tempfile.mkdtemp()) / "traces.duckdb"
    command = [sys.executable, "-m", "retrieval", "lookup", "how do I silence alerts", "--traces", str(traces)]
    subprocess.run(command, cwd=root, capture_output=True, check=False)  # warm the index cache
    times = []
    for _ in range(3):
        started = time.perf_counter()
        done = subprocess.run(command, cwd=root, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            print(f"\nCLI start-up: the command failed: {done.stderr.decode()[-300:]}")
            return
    print(f"\nCLI start-up, `python -m retrieval lookup ...` on the sample: {statistics.median(times):.2f} s wall")


def machine_speed() -> str:
    """Two fixed workloads, timed (best of 5): interpreted Python, which the lookup mostly is, and a BLAS
    product, which the naive design mostly is: a shared machine's state moves them by different factors.
    A rough guide only (docs/performance.md: the lookup's time moved more than either)."""
    rng = np.random.default_rng(0)
    matrix, vector = rng.random((100_000, 256), dtype=np.float32), rng.random(256, dtype=np.float32)

    def python_loop() -> None:
        total = {}
        for i in range(200_000):
            total[i & 1023] = total.get(i & 1023, 0) + i

    def best_ms(work) -> float:
        took = []
        for _ in range(5):
            started = time.perf_counter()
            work()
            took.append((time.perf_counter() - started) * 1000)
        return min(took)

    return (f"Python loop {best_ms(python_loop):.1f} ms, 100k x 256 matrix-vector product "
            f"{best_ms(lambda: matrix @ vector):.2f} ms")
