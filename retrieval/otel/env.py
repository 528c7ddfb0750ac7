"""Export turned on from the environment or a flag: the one entry the CLI, the MCP server and the app call.
Without an endpoint it returns None having imported nothing of OpenTelemetry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from retrieval.otel.settings import settings_from_env

if TYPE_CHECKING:
    from retrieval.otel.export import Tracing

EXTRA_HINT = "install it with pip install 'lookup-knowledge[otel]'"


def tracing_from_env(endpoint: str | None = None, *, environ: Mapping[str, str] | None = None,
                     set_global: bool = False, timeout_s: float | None = None) -> Tracing | None:
    """A running export pipeline when `endpoint` (`--otlp-endpoint`) or the OTEL_* variables ask for one,
    else None. ValueError when a setting is malformed or the `[otel]` extra is missing."""
    settings = settings_from_env(environ, endpoint)
    if settings is None:
        return None
    try:
        from retrieval.otel.export import start_tracing
    except ImportError as exc:
        raise ValueError(f"OpenTelemetry export ({settings.endpoint}) needs the OpenTelemetry SDK and OTLP "
                         f"exporter ({exc}); {EXTRA_HINT}") from None
    return start_tracing(settings, set_global=set_global, timeout_s=timeout_s)
