"""Judging page: the current annotator's queue (blind, three grades), assigning queues to annotators, and the
agreement between annotators with the disputed pages to adjudicate (appui.panels.queues and .agreement)."""

from __future__ import annotations

import streamlit as st

from appui.panels import agreement, queues
from appui.widgets import annotator, state


def render() -> None:
    ctx = state.current()
    st.title("Judging")
    if ctx.store is None:
        return
    try:
        from eval import annotation  # noqa: F401 - only checked for here
    except ImportError as exc:
        st.warning(f"Judging queues and agreement need the evaluation package, which is not available ({exc}).")
        return
    me = annotator.current()
    st.caption((f"Judging as `{me}`" if me else "No annotator yet: type your name in the sidebar")
               + " · grades: not relevant (0), relevant (1), highly relevant (2)")
    mine, assign, agree = st.tabs(["My queue", "Assign", "Agreement"])
    with mine:
        queues.queue_tab(ctx)
    with assign:
        queues.assign_tab(ctx)
    with agree:
        agreement.render(ctx)


if __name__ == "__main__":
    render()
