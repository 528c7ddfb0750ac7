"""The Export page's trace exports, built when asked for, never on a page render:

- CSV, Parquet and JSONL stream through DuckDB (retrieval's `export_traces`): into a temporary file that the
  download then reads (`download_bytes`, the download button's callable), or, past `download_limit()`, into a
  file on the app's disk (`write_file`), since a download is held in the app's memory while the session lasts;
- Markdown and HTML reports hold the aggregates of every matching row and the first REPORT_ROWS rows in full,
  saying how many were left out (`report_bytes`).

No Streamlit calls: the page (appui/pages/export.py) wires these to its buttons.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from appui.data import trace_report, trace_summary
from appui.data.traces import FORMATS, SUMMARY_COLUMNS, TraceFilters
from retrieval import TRACE_TABLE as TABLE
from retrieval import TraceStore
from retrieval import iter_trace_rows as iter_rows
from retrieval.export import html_document, markdown_document
from retrieval.traces import ExportEstimate, ExportResult, estimate_export, export_traces

DOWNLOAD_LIMIT_MB = 200  # a larger export is written to a file instead of downloaded; $LOOKUP_KNOWLEDGE_DOWNLOAD_MB
REPORT_ROWS = trace_report.DETAIL_LIMIT  # rows a Markdown or HTML report gives (the aggregates cover every row)
DATA_FORMATS = {"CSV": "csv", "Parquet": "parquet", "JSONL": "jsonl"}
REPORT_FORMATS = ("Markdown", "HTML")


def download_limit() -> int:
    """The bytes past which a CSV, Parquet or JSONL export is written to a file: $LOOKUP_KNOWLEDGE_DOWNLOAD_MB
    megabytes (10^6 bytes), else DOWNLOAD_LIMIT_MB."""
    text = os.environ.get("LOOKUP_KNOWLEDGE_DOWNLOAD_MB", "").strip()
    try:
        megabytes = float(text) if text else DOWNLOAD_LIMIT_MB
    except ValueError:
        raise ValueError(f"$LOOKUP_KNOWLEDGE_DOWNLOAD_MB takes megabytes (e.g. 200), got {text!r}") from None
    if not megabytes >= 0:
        raise ValueError(f"$LOOKUP_KNOWLEDGE_DOWNLOAD_MB takes megabytes, 0 or more, got {text!r}")
    return int(megabytes * 1_000_000)


def check_format(fmt: str) -> None:
    """A ValueError naming the page's formats unless `fmt` is one of them."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")


def estimate(store: TraceStore, filters: TraceFilters, fmt: str) -> ExportEstimate:
    """How many rows match and about how many bytes their CSV, Parquet or JSONL takes (a sample exported)."""
    check_format(fmt)
    return estimate_export(store, DATA_FORMATS[fmt], filters.core())


def download_bytes(store: TraceStore, filters: TraceFilters, fmt: str) -> bytes:
    """The matching rows as CSV, Parquet or JSONL, exported by DuckDB into a temporary file and read back (the
    download button's callable: it runs when the button is clicked)."""
    check_format(fmt)
    with tempfile.TemporaryDirectory(prefix="trace-download-") as folder:
        out = Path(folder) / f"traces.{FORMATS[fmt][0]}"
        export_traces(store, out, DATA_FORMATS[fmt], filters.core())
        return out.read_bytes()


def write_file(store: TraceStore, filters: TraceFilters, fmt: str, path: str | Path) -> ExportResult:
    """The matching rows written to `path` (its folder made; an existing file refused), for an export past
    the download limit."""
    check_format(fmt)
    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    return export_traces(store, target, DATA_FORMATS[fmt], filters.core())


def default_folder(traces: Path) -> Path:
    """Where a large export goes unless the page is told otherwise: `exports/` beside the trace file."""
    return traces.resolve().parent / "exports"


def file_in(folder: str | Path, fmt: str, now: datetime | None = None) -> Path:
    """`folder/traces-<UTC time>.<ext>`: a new name for each export."""
    moment = now or datetime.now(timezone.utc)
    return Path(folder).expanduser() / f"traces-{moment:%Y%m%d-%H%M%S}.{FORMATS[fmt][0]}"


def report_bytes(store: TraceStore, filters: TraceFilters, fmt: str, *, title: str = "lookup_knowledge traces",
                 rows: int = REPORT_ROWS) -> bytes:
    """A Markdown or self-contained HTML report: the aggregates of every matching row, then the first `rows`
    (newest first) as a table and in full, and how many more were left out."""
    check_format(fmt)
    if fmt not in REPORT_FORMATS:
        raise ValueError(f"{fmt} is a data export, not a report; reports are {', '.join(REPORT_FORMATS)}")
    where, params = filters.to_sql()
    total = int(store.query(f"SELECT count(*) AS n FROM {TABLE}{where}", params)["n"][0])
    first = store.query(f"SELECT * FROM {TABLE}{where} ORDER BY created_at DESC, id LIMIT {int(rows)}", params)
    summary = first.reindex(columns=[c for c in SUMMARY_COLUMNS if c in first.columns])
    sections = trace_report.report_sections(title, summary, list(iter_rows(first)), limit=rows, total=total,
                                            lead=trace_summary.aggregate_sections(store, filters),
                                            about=filters.words())
    return (markdown_document(sections) if fmt == "Markdown" else html_document(sections)).encode()
