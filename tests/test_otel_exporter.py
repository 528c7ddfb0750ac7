"""The exporter wrapper: a failed export marks the collector down for a while, in which batches are dropped unsent
and the recorder makes no spans; one warning however many failures; a success brings it back."""

from __future__ import annotations

import time
import warnings

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from retrieval.otel import OTelExportWarning
from retrieval.otel import export as otel_export


class Scripted(SpanExporter):
    """An exporter answering from a list of results, counting the batches it was given."""

    def __init__(self, *results: SpanExportResult) -> None:
        self.results, self.calls = list(results), 0

    def export(self, spans):
        self.calls += 1
        return self.results.pop(0)


def test_failed_export_drops_batches_unsent_until_the_window_ends(monkeypatch):
    monkeypatch.setattr(otel_export, "DOWN_FIRST_S", 0.2)
    inner = Scripted(SpanExportResult.FAILURE, SpanExportResult.SUCCESS)
    exporter = otel_export.ReportingExporter(inner, "http://127.0.0.1:9/v1/traces")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert exporter.export([object()] * 3) is SpanExportResult.FAILURE
        assert not exporter.accepting()
        assert exporter.export([object()] * 2) is SpanExportResult.FAILURE  # dropped, not sent
        assert inner.calls == 1 and exporter.lost == 5
        time.sleep(0.25)
        assert exporter.accepting()
        assert exporter.export([object()]) is SpanExportResult.SUCCESS
    assert inner.calls == 2 and exporter.exported == 1
    assert len([w for w in caught if issubclass(w.category, OTelExportWarning)]) == 1


def test_gate_closed_means_the_recorder_skips_the_call(index):
    from retrieval import lookup_knowledge
    from retrieval.otel import OTelRecorder

    recorder = OTelRecorder(gate=lambda: False)
    lookup_knowledge("invoice", index=index, recorder=recorder)
    assert recorder.skipped == 1 and recorder.flush(1.0)
