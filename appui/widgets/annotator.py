"""Who is judging and how: the annotator (the signed-in user's email when the app has an OIDC login, else the name
the analyst types in the sidebar) and blind judging (the system's rank, score and other annotators' marks hidden).

Both are sidebar widgets drawn on every page (state.sidebar_context), kept in session state across pages."""

from __future__ import annotations

import streamlit as st

from appui.widgets import signin

NAME_KEY, BLIND_KEY = "annotator_name", "blind_judging"
ASK = "Type your name in the sidebar (**Your name**) first: every mark records who made it."


def signed_in() -> str:
    """The admitted user's email (lower case) when the app has a sign-in (appui.widgets.signin), else "": the
    same identity the gate admitted, so a mark never records an address the allow-list refused."""
    return signin.signed_in_email() or ""


def current() -> str:
    """The annotator every mark made now records: the signed-in email, else the typed name ("" when neither)."""
    return signed_in() or str(st.session_state.get(NAME_KEY) or "").strip()


def blind() -> bool:
    """Whether the sidebar's "Blind judging" is on."""
    return bool(st.session_state.get(BLIND_KEY, False))


def sidebar() -> None:
    """The sidebar's Judging section: the annotator (fixed when signed in, else a name field) and the blind toggle."""
    st.subheader("Judging")
    email = signed_in()
    if email:
        st.caption(f"Annotator: `{email}` (signed in)", help="Your marks record the email you signed in with")
    else:
        st.text_input("Your name", key=NAME_KEY, placeholder="e.g. alice", persist_state="session",
                      help="The annotator your relevance marks record: agreement between annotators is measured "
                           "on the Judging page")
        name = current()
        st.caption(f"Annotator: `{name}`" if name else "Annotator: none yet (type your name to judge)")
    st.toggle("Blind judging", key=BLIND_KEY, persist_state="session",
              help="While judging, hide the system's rank, score, score parts, relevance and other annotators' "
                   "marks: only the query and the page's content are shown")


def ask() -> None:
    """Say that a mark needs an annotator (shown instead of recording one without a name)."""
    st.warning(ASK, icon=":material/person:")
