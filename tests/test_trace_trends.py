"""Issue 53 item 1: trends over production lookups. Each bucketing (hour, day, week) and the per-host split equal a
pandas computation on the same rows (evaluation rows never counted); the figures' names are the documented ones;
the query prunes row groups by time and only the aggregate comes back."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta

import duckdb
import numpy as np
import pandas as pd
import pytest

from retrieval.cli import main
from retrieval.traces.figures import FIGURES, NAMES
from retrieval.traces.trends import trends, trends_sql
from tests.trends_helpers import HOSTS, UNTIL, plant

SINCE = UNTIL - timedelta(days=14)
LEVELS = ("high", "medium", "low", "none")
DECISIONS = ("applied", "skipped_no_domain", "skipped_ambiguous", "disabled", "caller")


def _rows(path) -> pd.DataFrame:
    """The production rows of the window, read whole (a small file): what pandas computes from."""
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("SELECT * FROM tool_invocation WHERE run_id IS NULL AND tool_name = 'lookup_knowledge' "
                           "AND created_at >= ? AND created_at < ?", [SINCE, UNTIL]).df()


def _share(series: pd.Series, test) -> float | None:
    known = series.dropna()
    return float(test(known).mean()) if len(known) else None


def _figures(group: pd.DataFrame) -> dict[str, float | None]:
    """Every figure by pandas and numpy, written independently of figures.py's SQL."""
    latency = group.latency_ms.dropna().to_numpy()
    out: dict[str, float | None] = {"lookups": float(len(group))}
    for level in LEVELS:
        out[f"{level}_share"] = _share(group.relevance_level, lambda s, lv=level: s == lv)
    out["abstain_share"] = _share(group.abstained, lambda s: s.astype(bool))
    out["empty_share"] = _share(group.evidence_count, lambda s: s == 0)
    out["error_share"] = _share(group.status, lambda s: s != "ok")
    for decision in DECISIONS:
        out[f"filter_{decision}_share"] = _share(group.filter_decision, lambda s, d=decision: s == d)
    out["l1_failed_share"] = _share(group.l1_status, lambda s: s.isin(["failed", "timeout"]))
    out["l1_empty_share"] = _share(group.l1_status, lambda s: s == "empty")
    out["fallback_share"] = _share(group.retrieval_layer, lambda s: s == "L0")
    out["p50_ms"] = float(np.quantile(latency, 0.5)) if len(latency) else None
    out["p95_ms"] = float(np.quantile(latency, 0.95)) if len(latency) else None
    confidence = group.confidence.dropna()
    out["mean_confidence"] = float(confidence.mean()) if len(confidence) else None
    return out


def _bucket(times: pd.Series, by: str) -> pd.Series:
    if by == "week":  # ISO weeks from Monday, as DuckDB's date_trunc('week')
        return times.dt.to_period("W-SUN").dt.start_time
    return times.dt.floor({"hour": "h", "day": "D"}[by])


def _same(ours: dict, theirs: dict) -> list[str]:
    wrong = []
    for name in NAMES:
        a, b = ours[name], theirs[name]
        if (a is None) != (b is None) or (a is not None and not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)):
            wrong.append(f"{name}: {a} against {b}")
    return wrong


@pytest.mark.parametrize("by", ["hour", "day", "week"])
def test_trends_by_hour_day_and_week_equal_a_pandas_computation_on_the_same_rows(abstentions_doubled, by):
    result = trends(abstentions_doubled, since=SINCE, until=UNTIL, by=by)
    rows = _rows(abstentions_doubled)
    expected = {bucket: _figures(group) for bucket, group in rows.groupby(_bucket(rows.created_at, by))}
    frame = result.frame()
    assert list(frame.columns) == ["bucket", *NAMES]
    assert [pd.Timestamp(b) for b in frame.bucket] == sorted(expected)
    assert len(frame) == {"hour": 14 * 24, "day": 14, "week": 3}[by]  # 2026-02-15 is a Sunday: 3 ISO weeks
    for record in frame.to_dict(orient="records"):
        ours = {name: (None if pd.isna(record[name]) else record[name]) for name in NAMES}
        assert _same(ours, expected[pd.Timestamp(record["bucket"])]) == [], record["bucket"]
    assert _same(result.total, _figures(rows)) == []  # the whole window's figures: what --fail-on checks


def test_trends_per_host_equal_a_pandas_computation_on_the_same_rows(abstentions_doubled):
    result = trends(abstentions_doubled, since=SINCE, until=UNTIL, by="day", per="host")
    rows = _rows(abstentions_doubled)
    rows["host"] = rows.host.fillna("(none)")
    expected = {(bucket, host): _figures(group)
                for (bucket, host), group in rows.groupby([_bucket(rows.created_at, "day"), "host"])}
    frame = result.frame()
    assert list(frame.columns[:3]) == ["bucket", "host", "lookups"]
    assert set(frame.host) >= set(HOSTS)
    assert {(pd.Timestamp(b), h) for b, h in zip(frame.bucket, frame.host, strict=True)} == set(expected)
    for record in frame.to_dict(orient="records"):
        ours = {name: (None if pd.isna(record[name]) else record[name]) for name in NAMES}
        assert _same(ours, expected[(pd.Timestamp(record["bucket"]), record["host"])]) == []


def test_evaluation_rows_are_never_counted(abstentions_doubled):
    """The fixture holds 2,000 evaluation rows in the last week, all abstaining at 5 s: none shows."""
    result = trends(abstentions_doubled, since=SINCE, until=UNTIL, by="week")
    assert result.total["lookups"] == len(_rows(abstentions_doubled))
    assert result.total["p95_ms"] < 100


def test_trends_per_category_and_kb_group_by_their_columns(abstentions_doubled):
    by_category = trends(abstentions_doubled, since=SINCE, until=UNTIL, by="week", per="category").frame()
    by_kb = trends(abstentions_doubled, since=SINCE, until=UNTIL, by="week", per="kb").frame()
    assert set(by_category.category) == {"security", "billing", "(none)"}  # (none): no filter applied
    assert set(by_kb.kb) >= {"/kb/main", "/kb/other"}
    assert by_category.lookups.sum() == by_kb.lookups.sum() == len(_rows(abstentions_doubled))


def test_the_cli_prints_trends_as_json_and_csv(abstentions_doubled, capsys):
    args = ["traces", "trends", "--traces", str(abstentions_doubled), "--since", "14d", "--until", "2026-03-01",
            "--by", "week"]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["buckets"]) == 3 and set(data["total"]) == set(NAMES)
    assert data["since"] == SINCE.isoformat() and data["until"] == UNTIL.isoformat()
    assert main([*args, "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(",") == ["bucket", *NAMES] and len(lines) == 4


def test_no_production_rows_in_the_trends_window_says_so_and_exits_0(abstentions_doubled, capsys):
    code = main(["traces", "trends", "--traces", str(abstentions_doubled), "--since", "2020-01-01", "--until",
                 "2020-02-01", "--fail-on", "lookups<1"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.startswith("no production lookups") and captured.err == ""


@pytest.mark.parametrize("flags, names", [
    (["--since", "30x"], "--since takes"),
    (["--since", "2026-03-02", "--until", "2026-03-01"], "--since must be before --until"),
    (["--until", "yesterday"], "--until takes"),
])
def test_a_bad_trends_window_exits_2_with_one_line(abstentions_doubled, capsys, flags, names):
    code = main(["traces", "trends", "--traces", str(abstentions_doubled), *flags])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"error: {names}") and len(err.strip().splitlines()) == 1


def test_every_figure_has_a_unique_name_a_kind_and_a_definition():
    assert len(set(NAMES)) == len(FIGURES) == 19
    assert {f.kind for f in FIGURES} == {"count", "share", "latency", "mean"}
    assert all(f.definition and f.label for f in FIGURES)
    assert all(f.condition for f in FIGURES if f.kind == "share")


@pytest.mark.slow
def test_the_trends_query_skips_row_groups_outside_its_window_and_returns_only_the_aggregate(tmp_path):
    """350,000 rows over 14 days (3 row groups of 122,880): a day's hourly trends scan less than the file (the
    time predicate prunes by the row groups' zone maps), and 24 buckets and the window's row come back."""
    path = tmp_path / "big.duckdb"
    plant(path, per_day=25_000, days=14, with_runs=False)
    since = datetime(2026, 2, 28)
    with duckdb.connect(str(path), read_only=True) as con:
        total = con.execute("SELECT count(*) FROM tool_invocation").fetchone()[0]
        con.execute("PRAGMA enable_profiling = 'json'")
        profile = json.loads(con.execute("EXPLAIN ANALYZE " + trends_sql(since, UNTIL, "hour", None)).fetchall()[0][1])
        returned = con.execute(trends_sql(since, UNTIL, "hour", None)).fetchall()
    assert total > 350_000 and profile["cumulative_rows_scanned"] <= total - 122_880, profile["cumulative_rows_scanned"]
    assert len(returned) == 24 + 1


def test_the_docs_list_every_figure_with_its_definition():
    """docs/traces.md's table of figures is FIGURES, row for row: a figure added or reworded fails here."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "traces.md").read_text(encoding="utf-8")
    table = [line for line in page.splitlines() if line.startswith("| `") and line.count("|") == 4
             and line.split("|")[2].strip() in {"count", "share", "latency", "mean"}]
    assert table == [f"| `{f.name}` | {f.kind} | {f.definition} |" for f in FIGURES]
