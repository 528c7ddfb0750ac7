"""The export pipeline the CLI, the MCP server and the app build from `OTelSettings`: a TracerProvider
(service name, `OTEL_RESOURCE_ATTRIBUTES`) with a batch processor and the OTLP/HTTP exporter behind
`ReportingExporter`, which turns failed exports into one warning instead of the SDK's log lines.

A lookup only queues its spans; the batch processor's thread sends them. A dead or slow collector costs
the lookups nothing but that thread's retries, and `Tracing.shutdown` waits for it at most `timeout_s`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from retrieval import __version__
from retrieval.otel.recorder import OTelRecorder
from retrieval.otel.settings import OTelSettings

SDK_LOGGERS = ("opentelemetry.exporter", "opentelemetry.sdk._shared_internal")  # retries, failures, full queue
DOWN_FIRST_S, DOWN_MAX_S = 5.0, 60.0  # how long a failed collector counts as down (doubling while it stays down)
SLOW_EXPORT_S = 1.0  # an export waiting this long (retrying a refused connection) marks the collector as down
MAX_ATTRIBUTES = 4096  # a lookup of 100 blocks carries 400 document attributes; the SDK's default keeps 128


class OTelExportWarning(UserWarning):
    """Spans could not be sent to the collector (lookups go on; said once per exporter)."""


class ReportingExporter(SpanExporter):
    """Wraps an exporter: counts what was sent and lost, and warns once, naming the endpoint and the cause.

    After a failed export the collector counts as down: batches are dropped unsent (no encoding, no
    connection) for 5 s, doubling up to 60 s while it stays down, and `accepting()` is False then, and while
    an export has been waiting over 1 s, so the recorder makes no spans that could not be sent anyway. A dead
    collector thus costs the process nearly nothing."""

    def __init__(self, inner: SpanExporter, endpoint: str) -> None:
        self.inner, self.endpoint = inner, endpoint
        self.exported = self.lost = 0
        self.warned = False
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._backoff = 0.0
        self._since: float | None = None  # when the export in flight started

    def accepting(self) -> bool:
        """Whether spans made now can be sent: the collector is not known to be down or slow."""
        now, since = time.monotonic(), self._since
        return now >= self._down_until and (since is None or now - since < SLOW_EXPORT_S)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if time.monotonic() < self._down_until:
            with self._lock:
                self.lost += len(spans)
            return SpanExportResult.FAILURE
        self._since = time.monotonic()
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # noqa: BLE001 - an exporter's bug must not stop the batch thread
            LAST_ERROR.note(f"{type(exc).__name__}: {exc}")
            result = SpanExportResult.FAILURE
        finally:
            self._since = None
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported += len(spans)
                self._backoff = 0.0
                return result
            self.lost += len(spans)
            self._backoff = min(DOWN_MAX_S, max(DOWN_FIRST_S, self._backoff * 2))
            self._down_until = time.monotonic() + self._backoff
        self.warn(f"{len(spans)} span(s) lost")
        return result

    def warn(self, what: str) -> None:
        """The one warning of this exporter: the endpoint, what was lost and the last cause the SDK gave."""
        with self._lock:
            if self.warned:
                return
            self.warned = True
        cause = LAST_ERROR.last or "no answer"
        warnings.warn(f"OTLP export to {self.endpoint} failed ({cause}); {what}, and later failures are not "
                      f"reported again; lookups are unaffected", OTelExportWarning, stacklevel=2)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class LastError(logging.Handler):
    """Keeps the SDK exporters' last warning or error (the cause named in the one warning) and, installed
    on their loggers without propagation, keeps their retry lines off stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.last = record.getMessage()[:300]
        except (TypeError, ValueError):  # a record whose args do not fit its format string
            self.last = str(record.msg)[:300]

    def note(self, message: str) -> None:
        self.last = message[:300]

    def install(self) -> None:
        for name in SDK_LOGGERS:
            logger = logging.getLogger(name)
            if self not in logger.handlers:
                logger.addHandler(self)
            logger.propagate = False


LAST_ERROR = LastError()


@dataclass(frozen=True)
class Tracing:
    """A running export pipeline: its provider, its exporter (counts, the one warning) and a recorder on it."""

    settings: OTelSettings
    provider: TracerProvider
    exporter: ReportingExporter
    recorder: OTelRecorder

    def shutdown(self, timeout_s: float = 5.0) -> bool:
        """Send what is queued and stop, waiting at most `timeout_s`; False (and the one warning) when spans
        could not be sent in that time."""
        done = threading.Event()
        deadline = time.monotonic() + timeout_s

        def stop() -> None:
            self.recorder.flush(max(0.0, deadline - time.monotonic()))
            self.provider.shutdown()
            done.set()

        threading.Thread(target=stop, name="otel-shutdown", daemon=True).start()
        if done.wait(timeout_s) and not self.exporter.lost:
            return True
        if not done.is_set():
            self.exporter.warn(f"spans still queued after {timeout_s:g} s at exit were dropped")
            with contextlib.suppress(Exception):  # best effort: the process is leaving anyway
                self.exporter.shutdown()  # ends the exporter's retry wait, so the batch thread stops too
        return False


def start_tracing(settings: OTelSettings, *, set_global: bool = False, timeout_s: float | None = None,
                  schedule_delay_ms: float | None = None) -> Tracing:
    """The pipeline for `settings`; `set_global` makes its provider the process's (the MCP SDK's own spans,
    `tools/call …`, then go to it too). `timeout_s` bounds one export with its retries (the settings' first,
    then this, then the SDK's 10 s)."""
    resource = Resource.create({"service.name": settings.service_name, "service.version": __version__})
    limits = SpanLimits(max_span_attributes=None if os.environ.get("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT")
                        else MAX_ATTRIBUTES)
    provider = TracerProvider(resource=resource, shutdown_on_exit=False, span_limits=limits)
    LAST_ERROR.install()
    timeout = settings.timeout_s if settings.timeout_s is not None else timeout_s
    exporter = ReportingExporter(OTLPSpanExporter(endpoint=settings.endpoint, timeout=timeout), settings.endpoint)
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=schedule_delay_ms))
    if set_global:
        trace.set_tracer_provider(provider)
    return Tracing(settings, provider, exporter, OTelRecorder(provider, gate=exporter.accepting))
