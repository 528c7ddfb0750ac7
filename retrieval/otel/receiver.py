"""A small OTLP/HTTP traces receiver on 127.0.0.1: it decodes each protobuf `ExportTraceServiceRequest` and
keeps the spans. For tests, benchmarks and a look at what the export sends without running a collector:
`python -m retrieval.otel.receiver --port 4318` prints each span as a JSON line.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

HOST = "127.0.0.1"  # never beyond this machine


@dataclass
class OTLPReceiver:
    """Receives OTLP/HTTP protobuf at `url` (…/v1/traces) while running; `spans` holds each decoded span."""

    port: int = 0
    on_span: Callable[[dict[str, Any]], None] | None = None
    spans: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((HOST, self.port), _handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/v1/traces"

    def __enter__(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = [decode_span(span, values(rs.resource.attributes))
                 for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
        with self._lock:
            self.requests += 1
            self.spans.extend(spans)
        for span in spans if self.on_span is not None else ():
            self.on_span(span)


def decode_span(span: Any, resource: dict[str, Any]) -> dict[str, Any]:
    """One protobuf span as plain values: ids in hex, times in ns, attributes and events decoded."""
    return {"name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
            "parent_span_id": span.parent_span_id.hex() or None, "start_ns": span.start_time_unix_nano,
            "end_ns": span.end_time_unix_nano, "attributes": values(span.attributes),
            "status": {0: "UNSET", 1: "OK", 2: "ERROR"}[span.status.code], "status_message": span.status.message,
            "events": [{"name": e.name, "attributes": values(e.attributes)} for e in span.events],
            "resource": resource}


def values(attributes: Any) -> dict[str, Any]:
    return {a.key: any_value(a.value) for a in attributes}


def any_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return values(value.kvlist_value.values)
    return None if kind is None else getattr(value, kind)


def _handler(receiver: OTLPReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_error(404 if self.path.rstrip("/") != "/v1/traces" else 415)
                return
            try:
                receiver.take(body)
            except DecodeError as exc:  # a bad body is the sender's error, answered as such
                self.send_error(400, f"not an ExportTraceServiceRequest: {exc}")
                return
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=4318)
    parser.add_argument("--quiet", action="store_true", help="keep count only; print it when stopped (Ctrl-C, "
                                                             "SIGTERM)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    receiver = OTLPReceiver(args.port, on_span=None if args.quiet else
                            lambda span: print(json.dumps(span), flush=True))
    with receiver:
        print(f"receiving OTLP/HTTP at {receiver.url}", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print(json.dumps({"spans": len(receiver.spans), "requests": receiver.requests}), flush=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    main()
