"""The app with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set: an analyst's lookup goes to the trace file and, as spans,
to the collector; a malformed setting is said in the page and the lookup still runs."""

from __future__ import annotations

import pytest

from appui.widgets import tracing as tracing_widget
from retrieval import TraceStore
from tests.app_helpers import lookup, page_text, run_app

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")


def test_app_lookup_is_recorded_and_exported(env, monkeypatch):
    from retrieval.otel import OTLPReceiver
    from tests.otel_helpers import roots

    with OTLPReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url)
        tracing_widget.cached_tracing.clear()
        try:
            lookup(run_app(), "download invoices")
            tracing = tracing_widget.cached_tracing()
            assert tracing.shutdown(5.0)
        finally:
            tracing_widget.cached_tracing.clear()
    ids = TraceStore(env["traces"]).query("SELECT id FROM tool_invocation")["id"].tolist()
    assert [s["attributes"]["lookup.invocation_id"] for s in roots(receiver.spans)] == ids and len(ids) == 1


def test_app_malformed_endpoint_is_said_and_the_lookup_runs(env, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")
    tracing_widget.cached_tracing.clear()
    try:
        at = run_app()
        at.text_input(key="lookup_query").set_value("download invoices")
        at = at.button(key="lookup_run").click().run()
    finally:
        tracing_widget.cached_tracing.clear()
    assert not at.exception
    assert [e.value for e in at.error] == ["OpenTelemetry export is off: OTEL_EXPORTER_OTLP_ENDPOINT must be an "
                                           "http:// or https:// URL with a host, such as http://localhost:4318, got "
                                           "'collector:4318'"]
    assert "Invoices and payment" in page_text(at)
    assert TraceStore(env["traces"]).count() == 1
