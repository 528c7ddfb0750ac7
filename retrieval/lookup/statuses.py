"""The closed vocabularies of `retrieval_details`: every status is one of these, checked when built."""

from __future__ import annotations

from typing import Any, Literal, get_args

Layer = Literal["L0+L1", "L0", "L1", "none"]
FilterStatus = Literal["applied", "skipped_no_domain", "skipped_ambiguous", "disabled", "caller"]
L1Status = Literal["ok", "empty", "failed", "timeout", "disabled", "unavailable"]
RelevanceLevel = Literal["high", "medium", "low", "none"]
ShortfallLimit = Literal["filter", "l1", "matches"]  # why fewer blocks came back than top_k asked for
L1_DID_NOT_ANSWER = {"empty": "L1 returned no candidates", "failed": "L1 failed", "timeout": "L1 timed out",
                     "disabled": "L1 is disabled", "unavailable": "L1 is unavailable"}  # each status but ok, in words


def check(value: Any, allowed: Any, name: str) -> None:
    """Raise ValueError unless `value` is one of the Literal type `allowed`'s values."""
    options = get_args(allowed)
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(options)}, got {value!r}")
