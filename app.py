"""The analysts' app: `streamlit run app.py`. UI only; every page calls the retrieval core and eval/.

Pages: Lookup, Compare settings, Traces, Export, Judging, Trends (appui/pages/). The sidebar's knowledge-base picker
and the trace file ($LOOKUP_KNOWLEDGE_TRACES, else traces.duckdb here) are shared by every page. With an `[auth]`
section in .streamlit/secrets.toml, only a signed-in user on the `[access]` allow-list gets past the sign-in
screen (appui/widgets/signin.py).
"""

from __future__ import annotations

import streamlit as st

from appui.widgets import signin, state

LOOKUP = st.Page("appui/pages/lookup.py", title="Lookup", icon=":material/search:", url_path="home",
                 default=True)  # served at /; "home" only reserves a name, so that /lookup is free for the alias


def _lookup_by_name() -> None:
    """`/lookup`, the page's name in links and bookmarks: Streamlit serves the default page at `/` only, and
    showed "Page not found" there; this hidden page sends it to the Lookup page."""
    st.switch_page(LOOKUP)


PAGES = [
    LOOKUP,
    st.Page("appui/pages/compare.py", title="Compare settings", icon=":material/compare_arrows:",
            url_path="compare"),
    st.Page("appui/pages/traces.py", title="Traces", icon=":material/table_rows:", url_path="traces"),
    st.Page("appui/pages/export.py", title="Export", icon=":material/download:", url_path="export"),
    st.Page("appui/pages/judging.py", title="Judging", icon=":material/rule:", url_path="judging"),
    st.Page(_lookup_by_name, title="Lookup", url_path="lookup", visibility="hidden"),
    st.Page("appui/pages/trends.py", title="Trends", icon=":material/trending_up:", url_path="trends"),
]

st.set_page_config(page_title="lookup-knowledge", page_icon=":material/search:", layout="wide")
if not signin.gate():  # [auth] is on and this visitor is not (yet) admitted: no page of the app runs
    st.stop()
page = st.navigation(PAGES)
# chips (inline code: titles, sources, domains) are whole boxes: one that fits its column moves to the next line
# whole, never wrapping mid-title; only one wider than its column wraps, inside it (never over the next column)
st.html("<style>[data-testid='stMarkdownContainer'] p code, [data-testid='stMarkdownContainer'] li code"
        "{display: inline-block; max-width: 100%; white-space: normal; overflow-wrap: anywhere}</style>")
signin.identity_sidebar()
state.remember(state.sidebar_context())
page.run()  # an unexpected error shows its type only; the traceback goes to the log (.streamlit/config.toml)
