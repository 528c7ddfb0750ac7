"""`OTelRecorder`: a recorder (`lookup_knowledge(..., recorder=…)`) that emits each call as OpenInference spans.

Recording takes the caller's current context and queues the call (a few microseconds); a background thread
makes the spans, with the start and end times the lookup measured (plan.py), under that context: inside an
agent framework's tool span, or the MCP server's `tools/call` span, the lookup's span is its child, in the
caller's trace. The spans go to the provider's processors (a batch processor exports them on its own
thread). Nothing here raises into the lookup; `flush()` waits for the queue (the CLI's exit, tests).
The thread reads the invocation after the call returned: the lookup then only adds `timings_ms.record`,
which the spans do not read; a caller that changes a recorded invocation's details should record a copy.
"""

from __future__ import annotations

import queue
import threading
import time
import warnings
from collections.abc import Callable

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode, Tracer, TracerProvider

from retrieval import __version__
from retrieval.lookup.invocation import ToolInvocation
from retrieval.otel.plan import SpanPlan, plan_spans

TRACER_NAME = "lookup-knowledge"
MAX_QUEUE = 10_000  # calls waiting to become spans; past it they are dropped (and said once)
STATUS = {"OK": StatusCode.OK, "ERROR": StatusCode.ERROR, "UNSET": StatusCode.UNSET}


class OTelRecordingWarning(UserWarning):
    """A call could not be turned into spans, or was dropped (the lookup is unaffected); said once per recorder."""


class OTelRecorder:
    """Emits each recorded call as a RETRIEVER span with a child span per stage, through `tracer_provider`
    (default: the global one, so an application's own OpenTelemetry set-up is used as it is). With
    `background` (the default) spans are made on a thread of the recorder's; without, in the caller's.
    `gate`, when given, is asked first: a call made while it says False is skipped (and counted)."""

    def __init__(self, tracer_provider: TracerProvider | None = None, *, background: bool = True,
                 max_queue: int = MAX_QUEUE, gate: Callable[[], bool] | None = None) -> None:
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self.tracer: Tracer = provider.get_tracer(TRACER_NAME, __version__)
        self.background = background
        self.gate = gate  # False while the exporter cannot send (export.py): the call is then skipped
        self.dropped = self.skipped = 0
        self._queue: queue.Queue[tuple[ToolInvocation, otel_context.Context]] = queue.Queue(max_queue)
        self._worker: threading.Thread | None = None
        self._start = threading.Lock()
        self._warned = False

    def __call__(self, invocation: ToolInvocation) -> None:
        if self.gate is not None and not self.gate():
            self.skipped += 1
            return
        if not self.background:
            self.record(invocation)
            return
        try:
            self._queue.put_nowait((invocation, otel_context.get_current()))
        except queue.Full:
            self.dropped += 1
            self._warn(f"the span queue is full ({self._queue.maxsize} calls); spans are dropped")
            return
        if self._worker is None:
            self._start_worker()

    def record(self, invocation: ToolInvocation, parent: otel_context.Context | None = None) -> None:
        """Emit the call's spans now under `parent` (default: the current context); a failure is one warning."""
        try:
            emit(self.tracer, plan_spans(invocation), parent)
        except Exception as exc:  # noqa: BLE001 - a trace must never fail the lookup it describes
            self._warn(f"a lookup could not be turned into spans ({type(exc).__name__}: {exc})")

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued call is emitted (at most `timeout` seconds); False when time ran out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.002)
        return True

    def close(self, timeout: float | None = None) -> None:
        self.flush(timeout)

    def _start_worker(self) -> None:
        with self._start:
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="otel-recorder", daemon=True)
                self._worker.start()

    def _run(self) -> None:
        while True:
            invocation, parent = self._queue.get()
            try:
                self.record(invocation, parent)
            finally:
                self._queue.task_done()

    def _warn(self, what: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(f"{what}; the lookups are unaffected", OTelRecordingWarning, stacklevel=3)


def emit(tracer: Tracer, plan: SpanPlan, parent: otel_context.Context | None = None) -> None:
    """Start and end `plan`'s span and its children with their planned times, attributes, status and events."""
    span = tracer.start_span(plan.name, context=parent, kind=trace.SpanKind.INTERNAL,
                             attributes=plan.attributes, start_time=plan.start_ns)
    for event in plan.events:
        span.add_event(event.name, event.attributes, timestamp=plan.end_ns)
    if plan.status != "UNSET":
        span.set_status(Status(STATUS[plan.status], plan.status_description if plan.status == "ERROR" else None))
    inner = trace.set_span_in_context(span, parent)
    for child in plan.children:
        emit(tracer, child, inner)
    span.end(end_time=plan.end_ns)

