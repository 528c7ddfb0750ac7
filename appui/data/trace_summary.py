"""Aggregates of every row the filters match, computed in DuckDB, as report sections: how many calls, over which
time, how many failed, latency (mean, median, 95th percentile, max), and the calls per layer, L1 status and
filter decision. A Markdown or HTML report leads with them, then gives only its first rows (trace_export)."""

from __future__ import annotations

import pandas as pd

from appui.data.traces import TraceFilters
from retrieval import TRACE_TABLE as TABLE
from retrieval import TraceStore
from retrieval.export import Section, cell_text

BREAKDOWNS = (("Calls per layer", "retrieval_layer"), ("Calls per L1 status", "l1_status"),
              ("Calls per filter decision", "filter_decision"))
LATENCY = (("mean_ms", "mean"), ("median_ms", "median"), ("p95_ms", "95th percentile"), ("max_ms", "max"))


def aggregate_sections(store: TraceStore, filters: TraceFilters) -> list[Section]:
    """'Every matching row' (counts, time span, failures, latency) and one table per breakdown."""
    where, params = filters.to_sql()
    overview = store.query(
        f"SELECT count(*) AS calls, min(created_at) AS first, max(created_at) AS last, "
        f"count(*) FILTER (WHERE status <> 'ok') AS failed, avg(latency_ms) AS mean_ms, "
        f"quantile_cont(latency_ms, 0.5) AS median_ms, quantile_cont(latency_ms, 0.95) AS p95_ms, "
        f"max(latency_ms) AS max_ms FROM {TABLE}{where}", params).iloc[0]
    calls = int(overview["calls"])
    lines = (f"{calls:,} call(s), from {cell_text(_time(overview['first']))} to {cell_text(_time(overview['last']))} "
             "UTC", f"failed (status not ok): {int(overview['failed']):,}",
             "latency (ms): " + ", ".join(f"{label} {cell_text(_float(overview[key]), ms=True)}"
                                          for key, label in LATENCY))
    sections = [Section("Every matching row", lines)]
    for title, column in BREAKDOWNS:
        table = store.query(f"SELECT coalesce({column}, 'not recorded') AS {column}, count(*) AS calls "
                            f"FROM {TABLE}{where} GROUP BY 1 ORDER BY calls DESC, 1", params)
        table["share"] = [f"{n / calls:.1%}" for n in table["calls"]] if calls else []
        sections.append(Section(title, table=table))
    return sections


def _time(value: object) -> object:
    return None if value is None or pd.isna(value) else pd.Timestamp(value).to_pydatetime()


def _float(value: object) -> float | None:
    return None if value is None or pd.isna(value) else float(value)
