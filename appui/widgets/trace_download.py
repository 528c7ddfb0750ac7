"""Download the one trace on screen, where it is shown: a Markdown or HTML report of why it returned what it
did (appui.data.trace_report), or its row as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from appui.data import trace_report
from appui.widgets import state


def buttons(row: Mapping[str, Any], *, key: str) -> None:
    """One download button per format (keys `<key>_download_md`, `_html`, `_json`), side by side."""
    name = f"trace-{str(row.get('id'))[:8]}"
    formats = trace_report.FORMATS.items()
    for column, (fmt, (extension, mime)) in zip(st.columns(len(formats) + 1)[:-1], formats, strict=True):
        payload = state.guarded(lambda fmt=fmt: trace_report.single_trace(row, fmt))
        if payload is not None:
            column.download_button(f"Download as {fmt}", payload, file_name=f"{name}.{extension}", mime=mime,
                                   key=f"{key}_download_{extension}", on_click="ignore", icon=":material/download:",
                                   help="This trace as a report: hints, filter rationale, every block's score "
                                        "parts and hit reasons" if fmt != "JSON" else "This trace's row as JSON")
