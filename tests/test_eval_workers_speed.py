"""`--workers 2` keeps a clear speed-up: the SciFact train sweep (l0_filter × l1_pool, 4 runs), timed in one
run of bench/parallel_bench.py (real `python -m eval` processes), best turn of each side (timeit's rule:
noise only adds). The acceptance figure, ≤ 0.65 of the serial wall time, is the bench's on a quiet machine
(docs/benchmarks.md: 0.59-0.67 there, runs apart); on this shared 2-core VM one round swings between 0.59 and
0.70, so the test guards at 0.75, where a regression (a serial step in the fan-out, workers that rebuild the
index) lands well above. It waits for the load to settle, and is skipped on a busy or single-core machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import shared_path
from tests.parallel_helpers import ROOT

MAX_RATIO = 0.75
SETTLE_S = 90  # the slow tests before this one load the machine: the 1-minute load average decays in ~1 min


def _settled_load(quiet: float) -> float:
    """The 1-minute load average once it falls to `quiet`, or after SETTLE_S seconds, whichever comes first."""
    deadline = time.monotonic() + SETTLE_S
    while (load := os.getloadavg()[0]) > quiet and time.monotonic() < deadline:
        time.sleep(5)
    return load


@pytest.mark.slow
@pytest.mark.shared_data
def test_a_two_worker_sweep_keeps_a_clear_speed_up_over_the_serial_wall_time():
    scifact = shared_path("scifact")
    cores = len(os.sched_getaffinity(0))
    if cores < 2:
        pytest.skip(f"{cores} core available: two workers cannot run side by side")
    load = _settled_load(cores - 1)
    if load > cores - 1:
        pytest.skip(f"load average {load:.1f} on {cores} cores: other processes hold the cores the workers need, "
                    f"so the ratio would measure them (re-run on a quiet machine)")
    done = subprocess.run([sys.executable, "bench/parallel_bench.py", "sweep", "--dataset", str(scifact), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout)
    assert figures["ratio_best"] <= MAX_RATIO, \
        f"workers 2 / serial wall, best turns {figures['ratio_best']} (all {figures['ratio']}): {figures['wall_s']}"
