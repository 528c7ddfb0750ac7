"""The app's reads of the trace file and the runs, with no Streamlit: filters, pages of rows, replays, exports.

`sql_sandbox` is the app's security boundary: the one place an analyst's SQL runs, on the trace file itself,
opened read-only and sealed, after `sql_allow_list` has checked it (docs/security.md).
"""
