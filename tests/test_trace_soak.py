"""The SIGKILL soak's fast form (issues 19, 48): 200 kills of 2-4 writers, drainers, a folding keeper and
lookup commands with their helpers, mid-insert and mid-fold included.

Every kill must leave a file a plain DuckDB opens, and no acknowledged row (a writer's `record_many` returned,
a lookup command exited 0) may be lost or doubled. The long form, `python -m tests.trace_soak --kills 1000
--seed 5`, and its figures are in docs/traces.md.
"""

from __future__ import annotations

import pytest

from tests.trace_soak import run_soak

pytestmark = pytest.mark.slow


def test_hundreds_of_sigkills_leave_a_readable_file_and_every_acknowledged_row_once(tmp_path):
    result = run_soak(tmp_path, kills=200, seed=19)
    print(result)  # pytest -s shows the figures docs/traces.md quotes
    assert result.kills >= 200
    assert result.corrupt == [], result.corrupt
    assert result.acknowledged > 1000, "the writers must have recorded rows between the kills"
    assert (result.lost, result.doubled) == (0, 0), result
    assert result.cli_failed == [], result.cli_failed
    for role in ("writer", "drainer", "keeper", "cli", "cli helper"):
        assert result.kills_by_role.get(role, 0) > 0, f"no kill landed in a {role}: {result.kills_by_role}"
    assert result.keeper_mid_fold > 0, "some keeper kills must land inside a fold"
    assert result.cli_acknowledged > 0, "some lookup commands must have finished between the kills"
    assert result.orphaned_batches > 0, "some kills must land inside a drain (a claimed batch left behind)"
