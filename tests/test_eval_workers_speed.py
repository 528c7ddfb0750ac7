"""The acceptance figure of `--workers 2`: the SciFact train sweep (l0_filter × l1_pool, 4 runs) takes at most
0.65 of the serial wall time (best turn of each side, as timeit takes the minimum: noise only adds), both
measured in one run of bench/parallel_bench.py (real `python -m eval` processes). It only means something
with two free cores, so it waits for the load to settle and is skipped on a busy or single-core machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import shared_path
from tests.parallel_helpers import ROOT

MAX_RATIO = 0.65
SETTLE_S = 90  # the slow tests before this one load the machine: the 1-minute load average decays in ~1 min


def _settled_load(quiet: float) -> float:
    """The 1-minute load average once it falls to `quiet`, or after SETTLE_S seconds, whichever comes first."""
    deadline = time.monotonic() + SETTLE_S
    while (load := os.getloadavg()[0]) > quiet and time.monotonic() < deadline:
        time.sleep(5)
    return load


@pytest.mark.slow
@pytest.mark.shared_data
def test_a_two_worker_sweep_takes_at_most_065_of_the_serial_wall_time():
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
