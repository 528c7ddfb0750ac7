"""The app's reads of the trace file and the runs, with no Streamlit: filters, pages of rows, replays, exports.

`sql_sandbox` is the app's security boundary: the one place an analyst's SQL runs, read-only, over a
private in-memory copy of the trace tables (docs/security.md).
"""
