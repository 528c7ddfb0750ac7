"""Where spans go, read from the standard OpenTelemetry environment variables or `--otlp-endpoint`.

This module imports nothing of OpenTelemetry: the CLI, the MCP server and the app read it on every start,
and without an endpoint they never load the SDK. Only OTLP over HTTP (protobuf) is supported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_SERVICE_NAME = "lookup-knowledge"
TRACES_PATH = "v1/traces"
SUPPORTED_PROTOCOL = "http/protobuf"
ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
TIMEOUTS = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")


@dataclass(frozen=True)
class OTelSettings:
    """The OTLP/HTTP traces URL, the service name, and the export timeout in seconds (None: the SDK's)."""

    endpoint: str
    service_name: str = DEFAULT_SERVICE_NAME
    timeout_s: float | None = None


def settings_from_env(environ: Mapping[str, str] | None = None, endpoint: str | None = None) -> OTelSettings | None:
    """The export settings, or None when nothing asks for export (no endpoint, or `OTEL_SDK_DISABLED=true`).

    `endpoint` (the `--otlp-endpoint` flag) wins over the environment. Like `OTEL_EXPORTER_OTLP_ENDPOINT` it
    is a base URL that gets `/v1/traces` appended, unless it already ends with it;
    `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as it is. Raises ValueError naming the bad setting."""
    environ = os.environ if environ is None else environ
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" and endpoint is None:
        return None
    if endpoint is not None:
        url = traces_url(endpoint, "--otlp-endpoint", base=True)
    elif environ.get(TRACES_ENDPOINT, "").strip():
        url = traces_url(environ[TRACES_ENDPOINT], TRACES_ENDPOINT, base=False)
    elif environ.get(ENDPOINT, "").strip():
        url = traces_url(environ[ENDPOINT], ENDPOINT, base=True)
    else:
        return None
    for name in PROTOCOLS:
        protocol = environ.get(name, "").strip()
        if protocol:
            if protocol != SUPPORTED_PROTOCOL:
                raise ValueError(f"{name}={protocol!r} is not supported: lookup-knowledge exports OTLP over HTTP "
                                 f"only; set {name}={SUPPORTED_PROTOCOL} (or unset it) and point the endpoint at "
                                 f"the collector's HTTP port (usually 4318)")
            break
    service = environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE_NAME
    return OTelSettings(url, service, _timeout(environ))


def traces_url(value: str, name: str, *, base: bool) -> str:
    """`value` checked as an http(s) URL; a `base` URL gets `/v1/traces` appended (the OTLP spec's rule)."""
    text = value.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{name} must be an http:// or https:// URL with a host, such as http://localhost:4318, "
                         f"got {value!r}")
    try:
        parts.port  # noqa: B018 - a port out of range or not a number raises here
    except ValueError:
        raise ValueError(f"{name} has an invalid port: {value!r}; use a number from 1 to 65535, such as "
                         f"http://localhost:4318") from None
    if parts.query or parts.fragment:
        raise ValueError(f"{name} must not hold a query or fragment (?… or #…), got {value!r}")
    if not base or text.rstrip("/").endswith("/" + TRACES_PATH):
        return text
    return text.rstrip("/") + "/" + TRACES_PATH


def _timeout(environ: Mapping[str, str]) -> float | None:
    """The export timeout in seconds from the OTLP timeout variables (which hold milliseconds)."""
    for name in TIMEOUTS:
        value = environ.get(name, "").strip()
        if value:
            try:
                millis = float(value)
            except ValueError:
                millis = -1.0
            if not millis > 0:
                raise ValueError(f"{name} takes milliseconds, a number above 0, got {value!r}")
            return millis / 1000.0
    return None
