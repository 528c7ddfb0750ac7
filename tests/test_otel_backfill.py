"""`python -m retrieval traces export-otlp`: stored invocations sent as spans with their original timestamps, the
same spans a live lookup gives, filtered by --since and --run; bad input and a dead collector are errors."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from retrieval import LookupConfig, TraceStore, lookup_knowledge

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from retrieval.otel import OTLPReceiver, parse_since, plan_spans
from retrieval.otel.backfill import export_stored, invocation_of
from retrieval.otel.settings import settings_from_env
from tests.otel_helpers import dead_endpoint, roots, run_cli


def _recorded(index, path) -> tuple[TraceStore, list[str], list]:
    """Three calls recorded in a store (one of run-1, one refused); the store, their ids, the live invocations."""
    store = TraceStore(path)
    live: list = []
    results = [lookup_knowledge("invoice", index=index, recorder=lambda inv: (store(inv), live.append(inv))),
               lookup_knowledge("silence", index=index, recorder=lambda inv: (store(inv), live.append(inv)),
                                run_id="run-1", config=LookupConfig(simulate_l1_failure=True))]
    with pytest.raises(ValueError):
        lookup_knowledge("", index=index, recorder=lambda inv: (store(inv), live.append(inv)))
    store.close()
    return store, [r.invocation_id for r in results] + [live[-1].id], live


def test_stored_rows_become_the_spans_a_live_lookup_gives(index, tmp_path):
    store, _, live = _recorded(index, tmp_path / "t.duckdb")
    for invocation in live:
        row = store.query("SELECT * FROM tool_invocation WHERE id = ?", [invocation.id]).iloc[0].to_dict()
        stored, fresh = plan_spans(invocation_of(row)), plan_spans(invocation)
        assert stored.end_ns == fresh.end_ns  # created_at, to the microsecond
        assert [s.name for s in stored.walk()] == [s.name for s in fresh.walk()]
        assert stored.attributes == fresh.attributes


def test_export_otlp_sends_every_row_with_its_original_time(index, tmp_path):
    store, ids, live = _recorded(index, tmp_path / "t.duckdb")
    with OTLPReceiver() as receiver:
        completed = run_cli("traces", "export-otlp", "--traces", str(store.path), "--otlp-endpoint",
                            receiver.url, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert report["rows"] == 3 and report["spans_lost"] == 0 and report["spans_sent"] == len(receiver.spans)
    sent = {s["attributes"]["lookup.invocation_id"]: s for s in roots(receiver.spans)}
    assert set(sent) == set(ids)
    for invocation in live:
        span = sent[invocation.id]
        assert span["end_ns"] == plan_spans(invocation).end_ns and span["attributes"]["lookup.backfilled"] is True
        assert span["parent_span_id"] is None
    assert len({s["trace_id"] for s in sent.values()}) == 3  # each call its own trace
    assert sent[ids[2]]["status"] == "ERROR"


def test_export_otlp_run_and_since_select_rows(index, tmp_path):
    store, ids, _ = _recorded(index, tmp_path / "t.duckdb")
    with OTLPReceiver() as receiver:
        by_run = run_cli("traces", "export-otlp", "--traces", str(store.path), "--run", "run-1",
                         "--otlp-endpoint", receiver.url, cwd=tmp_path)
        future = run_cli("traces", "export-otlp", "--traces", str(store.path), "--since",
                         (datetime.now(timezone.utc) + timedelta(days=1)).date().isoformat(),
                         "--otlp-endpoint", receiver.url, cwd=tmp_path)
    assert json.loads(by_run.stdout)["rows"] == 1 and json.loads(future.stdout)["rows"] == 0
    assert [s["attributes"]["lookup.invocation_id"] for s in roots(receiver.spans)] == [ids[1]]


def test_export_otlp_to_a_dead_collector_is_an_error(index, tmp_path):
    store, _, _ = _recorded(index, tmp_path / "t.duckdb")
    completed = run_cli("traces", "export-otlp", "--traces", str(store.path), "--otlp-endpoint", dead_endpoint(),
                        cwd=tmp_path, env={"OTEL_EXPORTER_OTLP_TIMEOUT": "500"})
    assert completed.returncode == 2
    assert "error: no span reached" in completed.stderr and completed.stderr.count("warning:") == 1


def test_export_otlp_without_a_collector_or_a_file_says_what_to_pass(tmp_path):
    no_endpoint = run_cli("traces", "export-otlp", "--traces", str(tmp_path / "t.duckdb"), cwd=tmp_path)
    assert no_endpoint.returncode == 2 and "--otlp-endpoint" in no_endpoint.stderr
    no_file = run_cli("traces", "export-otlp", "--traces", str(tmp_path / "none.duckdb"), "--otlp-endpoint",
                      "http://127.0.0.1:4318", cwd=tmp_path)
    assert no_file.returncode == 2 and "no trace file" in no_file.stderr


def test_since_takes_dates_times_and_spans_back():
    now = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
    assert parse_since("24h", now) == datetime(2026, 12, 3, 12, 0)
    assert parse_since("90m", now) == datetime(2026, 12, 4, 10, 30)
    assert parse_since("2026-12-01", now) == datetime(2026, 12, 1)
    assert parse_since("2026-12-01T09:30+01:00", now) == datetime(2026, 12, 1, 8, 30)
    with pytest.raises(ValueError, match="--since takes an ISO date"):
        parse_since("yesterday", now)


def test_export_otlp_pages_by_key_sending_rows_of_one_time_exactly_once(index, tmp_path):
    """Pages of 4 over 30 rows whose created_at come in groups of 7: a page boundary inside a group neither skips
    nor repeats a row (each page starts after the last (created_at, id) sent, not at an OFFSET)."""
    store = TraceStore(tmp_path / "t.duckdb")
    live: list = []
    lookup_knowledge("invoice", index=index, recorder=live.append)
    start = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
    copies = [replace(live[0], id=f"call-{n:02d}", created_at=start + timedelta(seconds=n // 7)) for n in range(30)]
    store.record_many(copies[::-1])  # stored out of order
    store.close()
    with OTLPReceiver() as receiver:
        report = export_stored(store.path, settings_from_env({}, endpoint=receiver.url), page=4)
        sent = {s["attributes"]["lookup.invocation_id"]: s["end_ns"] for s in roots(receiver.spans)}
        later = export_stored(store.path, settings_from_env({}, endpoint=receiver.url), page=4,
                              since=datetime(2026, 1, 5, 9, 0, 2))  # the third group on, with a filter
    assert report.rows == 30 and len(sent) == len(roots(receiver.spans)) - later.rows == 30  # every row, once
    assert sent == {c.id: plan_spans(c).end_ns for c in copies}
    assert later.rows == 30 - 14 and later.spans_lost == 0
