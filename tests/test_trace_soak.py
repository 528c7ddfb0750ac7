"""The SIGKILL soak's fast form (issue 19): 300 kills of 2-4 writers and drainers, mid-insert included.

Every kill must leave a file a plain DuckDB opens, and no acknowledged row may be lost or doubled. The long
form, `python -m tests.trace_soak --kills 3000`, and its figures are in docs/traces.md.
"""

from __future__ import annotations

import pytest

from tests.trace_soak import run_soak

pytestmark = pytest.mark.slow


def test_hundreds_of_sigkills_leave_a_readable_file_and_every_acknowledged_row_once(tmp_path):
    result = run_soak(tmp_path, kills=300, seed=19)
    print(result)  # pytest -s shows the figures docs/traces.md quotes
    assert result.kills >= 300
    assert result.corrupt == [], result.corrupt
    assert result.acknowledged > 1000, "the writers must have recorded rows between the kills"
    assert (result.lost, result.doubled) == (0, 0), result
    assert result.orphaned_batches > 0, "some kills must land inside a drain (a claimed batch left behind)"
