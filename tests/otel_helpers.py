"""Reading spans in the OpenTelemetry tests: an in-memory pipeline, and the spans of one lookup as a tree.
It needs the `[otel]` extra: import it after `pytest.importorskip("opentelemetry.sdk")`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from retrieval.otel import OTelRecorder

STAGES = ["L0 hints", "L1 search", "domain vote", "evidence"]
FILTERED_STAGES = ["L0 hints", "L1 search", "domain vote", "L1 search (filtered)", "evidence"]


@dataclass
class MemorySpans:
    """A provider, its in-memory exporter and a recorder on it."""

    provider: TracerProvider
    exporter: InMemorySpanExporter
    recorder: OTelRecorder

    def spans(self) -> list[ReadableSpan]:
        assert self.recorder.flush(5.0), "the recorder's queue did not drain"
        return list(self.exporter.get_finished_spans())

    def lookup_tree(self, invocation_id: str) -> tuple[ReadableSpan, list[ReadableSpan]]:
        """The RETRIEVER span of one call and its children, in start order."""
        spans = self.spans()
        roots = [s for s in spans if s.attributes.get("lookup.invocation_id") == invocation_id]
        assert len(roots) == 1, f"expected one span for {invocation_id}, got {len(roots)}"
        children = sorted((s for s in spans if s.parent is not None and s.parent.span_id == roots[0].context.span_id),
                          key=lambda s: s.start_time)
        return roots[0], children


def memory_pipeline() -> MemorySpans:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return MemorySpans(provider, exporter, OTelRecorder(provider))


def documents(attributes: Any, prefix: str = "retrieval.documents") -> list[dict[str, Any]]:
    """The `retrieval.documents.{i}.document.*` attributes as a list of {id, score, content, metadata}."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if key.startswith(prefix + "."):
            index, _, name = key[len(prefix) + 1:].partition(".document.")
            found.setdefault(int(index), {})[name] = json.loads(value) if name == "metadata" else value
    return [found[i] for i in sorted(found)]


def events(span: ReadableSpan) -> dict[str, dict[str, Any]]:
    return {e.name: dict(e.attributes) for e in span.events}


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m retrieval ARGS` in `cwd` with the OTEL_* variables of this process removed, then `env` added."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run([sys.executable, "-m", "retrieval", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**clean, **(env or {})})


def dead_endpoint() -> str:
    """A local URL nothing listens on: a port bound and released (connections are refused at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def roots(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lookups' spans among spans a receiver decoded (those with an invocation id)."""
    return [s for s in spans if "lookup.invocation_id" in s["attributes"]]
