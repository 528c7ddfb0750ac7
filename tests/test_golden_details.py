"""The exact shape of `retrieval_details` for one fixed lookup, pinned by a golden JSON file.

Regenerate only on purpose, after a change docs/retrieval-details.md documents:
`UPDATE_GOLDEN=1 python -m pytest tests/test_golden_details.py`.

The golden pins the shape and the decisions (keys, sources, order, filter decision, statuses, wordings), not
the last digits of floats, which move with the numerical libraries (numpy, scipy, scikit-learn, BLAS):
- timings are masked;
- numbers, alone or inside a sentence, match within `TOLERANCE` (a real drift, 1.313 -> 1.565, still fails);
- `l1.dropped_below_min_score` is pinned as the count of sections clearly below `l1_min_score`. On the tiny
  fixture base, LSA has about as many dimensions as sections, so a section sharing no term with the query has a
  cosine that is numerical noise (|cosine| < 1e-3 here): its sign, and so whether it counts as "scored below",
  changes with the libraries (a fresh machine counted 10 where the golden said 9). The test measures every
  section's score itself, checks that each is clear of both borderlines (the noise and `l1_min_score`), checks
  that the lookup's count lies between the clear count and the clear count plus the noisy sections, and pins
  the clear count. The shortfall sentence's clause with that count is checked the same way.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval import LookupConfig, lookup_knowledge

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "applied_filter": ("silence", {}),
    "ambiguous_domains": ("PagerDuty escalation routing", {}),
    "l1_failure_drill": ("PagerDuty escalation routing", {"simulate_l1_failure": True}),
}
TOLERANCE = 0.01  # library versions move scores in the third decimal; a changed formula moves them further
NOISE_COSINE = 1e-2  # an LSA cosine below this, with no shared term, is numerical noise, not a match
MARGIN = 5e-3  # every section's blended score and cosine must sit at least this far from a borderline
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
BELOW_CLAUSE = re.compile(r"; (\d+) sections? scored below l1_min_score")


@dataclass(frozen=True)
class BelowCounts:
    """Sections under the lookup's filter whose blended L1 score is clearly in (0, l1_min_score), and
    sections whose score is noise (no shared term, |LSA cosine| below `NOISE_COSINE`)."""

    clear: int
    noisy: int


def _below_counts(index: Any, query: str, config: LookupConfig, applied: dict[str, str] | None) -> BelowCounts:
    """Every section's blended score, measured outside the lookup, checked clear of the borderlines."""
    l1 = index.l1
    scores = l1.score(query, tfidf_weight=config.l1_tfidf_weight)
    allowed = l1.pages.allowed(applied or {})
    rows = np.arange(len(l1.chunks)) if allowed is None else l1.pages.rows_of(allowed)
    lexical = scores.lexical[rows]
    lsa = l1.lsa_scores(scores, rows)
    w = scores.tfidf_weight
    blended = w * lexical + (1 - w) * np.clip(lsa, 0.0, None)
    noisy = (lexical == 0) & (np.abs(lsa) < NOISE_COSINE)
    clear = ~noisy
    near_noise = (lexical == 0) & (np.abs(np.abs(lsa) - NOISE_COSINE) < MARGIN)
    near_min = clear & (np.abs(blended - config.l1_min_score) < MARGIN)
    assert not near_noise.any() and not near_min.any(), (
        f"the case {query!r} has sections on a borderline (cosines {lsa[near_noise]}, blends {blended[near_min]}): "
        "choose a query whose sections are clear of them, or the golden pins a float's last bits")
    return BelowCounts(int((clear & (blended > 0) & (blended < config.l1_min_score)).sum()), int(noisy.sum()))


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


def _pin_below_counts(details: dict[str, Any], counts: BelowCounts) -> dict[str, Any]:
    """`details` with the noise-dependent count replaced by the clear count, after checking it is in range."""
    l1 = details["l1"]
    dropped = l1["dropped_below_min_score"]
    assert counts.clear <= dropped <= counts.clear + counts.noisy, (
        f"dropped_below_min_score {dropped} is outside [{counts.clear}, {counts.clear + counts.noisy}]: "
        "the lookup counted sections that no measured score puts below l1_min_score")
    details["l1"] = {**l1, "dropped_below_min_score": counts.clear}
    shortfall = details.get("shortfall")
    if shortfall and shortfall["limit"] == "matches":  # only this cause's sentence names the count
        said = BELOW_CLAUSE.search(shortfall["reason"])
        assert (int(said.group(1)) if said else 0) == dropped, "the shortfall's count is not l1's count"
        reason = BELOW_CLAUSE.sub("", shortfall["reason"])
        if counts.clear:
            reason += f"; {counts.clear} {'section' if counts.clear == 1 else 'sections'} scored below l1_min_score"
        details["shortfall"] = {**shortfall, "reason": reason}
    return details


def _differences(actual: Any, expected: Any, path: str = "$") -> list[str]:
    """Where `actual` departs from `expected`: numbers (alone or in text) beyond `TOLERANCE`, anything else."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        if set(actual) != set(expected):
            return [f"{path}: keys {sorted(set(actual) ^ set(expected))} added or missing"]
        return [d for k in expected for d in _differences(actual[k], expected[k], f"{path}.{k}")]
    if isinstance(expected, list) and isinstance(actual, list):
        if len(actual) != len(expected):
            return [f"{path}: {len(actual)} items, golden has {len(expected)}"]
        return [d for i, (a, e) in enumerate(zip(actual, expected, strict=True))
                for d in _differences(a, e, f"{path}[{i}]")]
    if isinstance(expected, float) or (isinstance(expected, int) and isinstance(actual, float)):
        close = isinstance(actual, (int, float)) and abs(actual - expected) <= TOLERANCE + 1e-9
        return [] if close else [f"{path}: {actual!r}, golden has {expected!r}"]
    if isinstance(expected, str) and isinstance(actual, str):
        words_match = NUMBER.sub("#", actual) == NUMBER.sub("#", expected)
        numbers = [(float(a), float(e)) for a, e in zip(NUMBER.findall(actual), NUMBER.findall(expected),
                                                          strict=False)]
        if words_match and all(abs(a - e) <= TOLERANCE + 1e-9 for a, e in numbers):
            return []
        return [f"{path}: {actual!r}, golden has {expected!r}"]
    return [] if actual == expected and type(actual) is type(expected) else [
        f"{path}: {actual!r}, golden has {expected!r}"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_retrieval_details_match_the_golden_file(index, case):
    query, overrides = CASES[case]
    config = LookupConfig(**overrides)
    details = lookup_knowledge(query, index=index, config=config).retrieval_details
    actual = _normalised(json.loads(json.dumps(details)))
    if actual["l1"]["status"] == "ok":
        applied = None if actual["filter"].get("decision") != "applied" else actual["filter"]["applied"]
        actual = _pin_below_counts(actual, _below_counts(index, query, config, applied))
    path = GOLDEN / f"retrieval_details_{case}.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(actual, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(path.read_text(encoding="utf-8"))
    differences = _differences(actual, expected)
    assert not differences, ("retrieval_details changed shape; if on purpose, rerun with UPDATE_GOLDEN=1 "
                             f"({path}):\n" + "\n".join(differences))


def test_golden_comparison_catches_a_real_drift():
    """The tolerance forgives the libraries' last digits, not a changed score or wording."""
    golden = {"score": 1.313, "reason": "L1 match: lexical 0.48, LSA 0.69 in 'Alert routing'", "count": 2}
    assert _differences({**golden, "score": 1.316}, golden) == []
    assert _differences({**golden, "reason": "L1 match: lexical 0.49, LSA 0.69 in 'Alert routing'"}, golden) == []
    assert _differences({**golden, "score": 1.565}, golden)
    assert _differences({**golden, "reason": "semantic match: lexical 0.48, LSA 0.69 in 'Alert routing'"}, golden)
    assert _differences({**golden, "reason": "L1 match: lexical 0.68, LSA 0.69 in 'Alert routing'"}, golden)
    assert _differences({**golden, "count": 3}, golden)
