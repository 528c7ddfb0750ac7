"""The app's OpenTelemetry export: on when the OTEL_EXPORTER_OTLP_* variables ask for it, else nothing of
OpenTelemetry is loaded; one pipeline per app process, flushed at exit."""

from __future__ import annotations

import atexit
from typing import Any

import streamlit as st

from retrieval.otel import tracing_from_env


@st.cache_resource(show_spinner=False)
def cached_tracing() -> Any:
    """OpenTelemetry export when the OTEL_EXPORTER_OTLP_* variables ask for it (else None, nothing loaded);
    its queued spans are sent when the app exits."""
    tracing = tracing_from_env()
    if tracing is not None:
        atexit.register(tracing.shutdown, 2.0)
    return tracing


def otel_recorder() -> Any:
    """The app's span recorder, or None; a malformed OTEL_* setting is said in the page, once per rerun."""
    try:
        tracing = cached_tracing()
    except ValueError as exc:
        st.error(f"OpenTelemetry export is off: {exc}")
        return None
    return tracing.recorder if tracing is not None else None
