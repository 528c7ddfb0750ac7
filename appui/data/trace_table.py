"""The Traces page's reads, all in DuckDB over every matching row: the count, one page of rows, the layer
mix, the fallback rate over time, the latency histogram, and one trace as a lookup result; and each row's
settings and comparison side as short text for the table.

Nothing is capped silently: the table pages through the count; the charts aggregate in SQL instead of
over the rows a page happens to hold.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from appui.data.traces import SUMMARY_COLUMNS, TraceFilters
from retrieval import TRACE_TABLE as TABLE
from retrieval import LookupConfig, TraceStore
from retrieval.config import changed_settings

PAGE_SIZES = (100, 250, 1000)
LATENCY_BINS = 30


def count(store: TraceStore, filters: TraceFilters) -> int:
    where, params = filters.to_sql()
    return int(store.query(f"SELECT count(*) AS n FROM {TABLE}{where}", params)["n"][0])


# what the table shows and reads: the summary columns and the two it words (`config`, `tags`); never the
# large JSON columns (retrieval_details, hints, result: ~14 MB per 1,000 rows), which `by_id` reads for the
# one row opened
PAGE_COLUMNS = (*SUMMARY_COLUMNS, "config", "tags")


def page(store: TraceStore, filters: TraceFilters, number: int, size: int) -> pd.DataFrame:
    """Rows `(number - 1) * size` onwards, newest first (ties broken by id, so pages never overlap), with only
    the columns the table shows (`by_id` reads a whole row)."""
    if number < 1 or size < 1:
        raise ValueError(f"page number and size start at 1, got page {number} of size {size}")
    where, params = filters.to_sql()
    columns = ", ".join(PAGE_COLUMNS)
    return store.query(f"SELECT {columns} FROM {TABLE}{where} ORDER BY created_at DESC, id LIMIT {int(size)} "
                       f"OFFSET {(int(number) - 1) * int(size)}", params)


def no_evidence_calls(store: TraceStore, filters: TraceFilters) -> int:
    """Matching calls that returned no evidence at all (layer `none`, or a failed call): not L0 fallbacks,
    and not answered with L1's evidence either."""
    where, params = filters.to_sql()
    clause = (where + " AND " if where else " WHERE ") + "(retrieval_layer IS NULL OR retrieval_layer = 'none')"
    return int(store.query(f"SELECT count(*) AS n FROM {TABLE}{clause}", params)["n"][0])


def layer_mix(store: TraceStore, filters: TraceFilters) -> pd.DataFrame:
    where, params = filters.to_sql()
    return store.query(f"SELECT coalesce(retrieval_layer, 'error') AS layer, count(*) AS calls FROM {TABLE}{where} "
                       "GROUP BY 1 ORDER BY calls DESC", params)


def fallback_rate(store: TraceStore, filters: TraceFilters) -> tuple[pd.DataFrame, str]:
    """Share of L0-only answers per minute, hour or day (whichever suits the span), with the unit's name."""
    where, params = filters.to_sql()
    span = store.query(f"SELECT min(created_at) AS lo, max(created_at) AS hi FROM {TABLE}{where}", params)
    width = pd.Timestamp(span["hi"][0]) - pd.Timestamp(span["lo"][0]) if len(span) and pd.notna(span["lo"][0]) \
        else pd.Timedelta(0)
    unit = "minute" if width <= pd.Timedelta(hours=3) else "hour" if width <= pd.Timedelta(days=3) else "day"
    frame = store.query(f"SELECT date_trunc('{unit}', created_at) AS created_at, "
                        f"avg(CASE WHEN retrieval_layer = 'L0' THEN 1.0 ELSE 0.0 END) AS rate, count(*) AS calls "
                        f"FROM {TABLE}{where} GROUP BY 1 ORDER BY 1", params)
    frame["created_at"] = pd.to_datetime(frame["created_at"]).dt.tz_localize("UTC")  # stored naive UTC
    return frame, unit


def latency_histogram(store: TraceStore, filters: TraceFilters, bins: int = LATENCY_BINS) -> pd.DataFrame:
    """`bins` equal-width latency bins (start, end, calls) over every matching row; the edges are rounded to
    0.001 ms, so the axis reads 5, not 5.000000000005."""
    where, params = filters.to_sql()
    inner = f"SELECT latency_ms FROM {TABLE}{where}" + (" AND" if where else " WHERE") + " latency_ms IS NOT NULL"
    return store.query(f"""WITH l AS ({inner}), r AS (SELECT min(latency_ms) AS lo,
        greatest(max(latency_ms) - min(latency_ms), 1e-9) / {int(bins)} AS w FROM l)
        SELECT round(r.lo + least(floor((l.latency_ms - r.lo) / r.w), {int(bins) - 1}) * r.w, 3) AS start,
               round(r.lo + (least(floor((l.latency_ms - r.lo) / r.w), {int(bins) - 1}) + 1) * r.w, 3) AS "end",
               count(*) AS calls FROM l, r GROUP BY 1, 2 ORDER BY 1""", params)


def by_id(store: TraceStore, invocation_id: str) -> dict[str, Any] | None:
    frame = store.query(f"SELECT * FROM {TABLE} WHERE id = ?", [invocation_id])
    return None if frame.empty else frame.iloc[0].to_dict()


def as_result(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored row in the shape of LookupResult.to_dict(), so the Lookup page's view can draw it."""
    details = row.get("retrieval_details")
    details = json.loads(details) if isinstance(details, str) else (details or {})
    blocks = details.get("evidence") or []
    return {"query": row.get("query"), "evidence_blocks": blocks, "primary": blocks[0] if blocks else None,
            "supplement": blocks[1:], "relevance": details.get("relevance") or {},
            "retrieval_layer": details.get("retrieval_layer"), "retrieval_details": details,
            "invocation_id": row.get("id"),
            "kb_fingerprint": row.get("kb_fingerprint") if isinstance(row.get("kb_fingerprint"), str) else None}


def table_view(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows as the table shows them: the summary columns, with `config` (its difference from the defaults)
    and `comparison` (the Compare page's side and comparison id) after the query, so A and B calls differ."""
    shown = frame.reindex(columns=SUMMARY_COLUMNS)
    at = shown.columns.get_loc("query") + 1
    empty = [None] * len(frame)
    shown.insert(at, "comparison", [comparison_label(t) for t in frame.get("tags", empty)])
    shown.insert(at, "config", [settings_label(c) for c in frame.get("config", empty)])
    return shown


def recorded_settings(row: Mapping[str, Any]) -> tuple[LookupConfig, dict[str, Any]]:
    """The configuration a stored call ran with (its recorded fields over the defaults; index settings and
    unknown names left out) and its arguments (`category`, `top_k`)."""
    recorded = _object(row.get("config"))
    known = {k: v for k, v in recorded.items() if k in LookupConfig.__dataclass_fields__}
    try:
        config = LookupConfig(**known)
    except (TypeError, ValueError):  # a trace from another version may hold a value this one refuses
        config = LookupConfig()
    return config, _object(row.get("arguments"))


def settings_label(config: Any) -> str:
    """A recorded `config` as its difference from the real defaults ("defaults", "l0_filter=false, l1_pool=40");
    "" when the row recorded none. Index settings recorded beside the fields are left out."""
    recorded = _object(config)
    if not recorded:
        return ""
    changed = [f"{name}={_text(value)}" for name, value in changed_settings(recorded).items()]
    return ", ".join(changed) or "defaults"


def comparison_label(tags: Any) -> str:
    """The Compare page's side and comparison id of a call ("A of cmp-1a2b3c4d"); "" for any other call."""
    recorded = _object(tags)
    side, comparison = recorded.get("side"), recorded.get("comparison_id")
    if not side:
        return ""
    return f"{side} of {comparison}" if comparison else str(side)


def _object(value: Any) -> dict[str, Any]:
    """A JSON column's value as a dict (DuckDB hands JSON back as text); {} for null or a non-object."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
