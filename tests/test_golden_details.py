"""The exact shape of `retrieval_details` for one fixed lookup, pinned by a golden JSON file.

Regenerate only on purpose, after a change docs/retrieval-details.md documents:
`UPDATE_GOLDEN=1 python -m pytest tests/test_golden_details.py`. Timings vary run to run, so their
values are masked; floats are compared to three decimals (BLAS builds differ in the last bits).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from retrieval import LookupConfig, lookup_knowledge

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "applied_filter": ("silence", {}),
    "ambiguous_domains": ("PagerDuty escalation routing", {}),
    "l1_failure_drill": ("PagerDuty escalation routing", {"simulate_l1_failure": True}),
}


def _normalised(value: Any, key: str = "") -> Any:
    if key == "timings_ms":
        return {k: "<ms>" for k in value}
    if isinstance(value, dict):
        return {k: _normalised(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    if isinstance(value, float):
        return round(value, 3)
    return value


@pytest.mark.parametrize("case", sorted(CASES))
def test_retrieval_details_match_the_golden_file(index, case):
    query, overrides = CASES[case]
    details = lookup_knowledge(query, index=index, config=LookupConfig(**overrides)).retrieval_details
    actual = _normalised(json.loads(json.dumps(details)))
    path = GOLDEN / f"retrieval_details_{case}.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(actual, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert actual == expected, f"retrieval_details changed shape; if on purpose, rerun with UPDATE_GOLDEN=1 ({path})"
