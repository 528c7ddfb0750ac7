"""Lookup page: one query under the sidebar configuration, shown in full and recorded as a trace."""

from __future__ import annotations

import streamlit as st

from appui.panels import judging, why_not
from appui.widgets import annotator, origin, state, views
from retrieval import KnowledgeIndex

ANY = "(any: L0 decides)"


def _submit() -> None:
    """The form was sent (Enter in the query box, or Look up): this run looks up, on the files as they are now."""
    st.session_state["lookup_submitted"] = True


def _category() -> str | None:
    picked = st.session_state.get("lookup_category")
    return None if picked in (None, ANY) else str(picked)


def _index_or_none(ctx: state.AppContext) -> KnowledgeIndex | None:
    """With an invalid configuration, the index of the shown result's svd_dims, to check the base only."""
    tied = st.session_state.get("lookup_result_origin")
    dims = (tied or {}).get("configs", {}).get("config", {}).get("svd_dims")
    return ctx.index(dims) if dims else None


def render() -> None:
    ctx = state.current()
    config = state.sidebar_config()
    st.title("Lookup")
    submitted = st.session_state.pop("lookup_submitted", False)
    # a lookup reads the files as they are now: a page edited a moment ago is in the index it answers with
    index = ctx.index(config.svd_dims, fresh=submitted) if config else None
    if index is not None:
        state.index_caption(index, state.build_stages(ctx.kb_path, config.svd_dims, ctx.exclude_paths))
    domains = index.kb.summary()["domains"] if index is not None else []
    if st.session_state.get("lookup_category") not in [ANY, *domains]:
        st.session_state["lookup_category"] = ANY  # a domain of another base
    # a form: Enter in the query box sends it every time, the same question again included (a text box alone
    # reruns only when its text changes, so an edited page was never looked up again)
    with st.form("lookup_form", border=False, enter_to_submit=True):
        query_col, category_col = st.columns([3, 1])
        query_col.text_input("Query", key="lookup_query", placeholder="e.g. how do I rotate an API token?")
        category_col.selectbox("Caller category", [ANY, *domains], key="lookup_category",
                               help="The base's domains; a caller's category filter always wins over L0's domain")
        st.form_submit_button("Look up", key="lookup_run", type="primary", on_click=_submit)
    if submitted and config is not None and index is not None:
        result = state.run_lookup(ctx, st.session_state.get("lookup_query", ""), config,
                                  _category())
        if result is not None:
            origin.store("lookup_result", result.to_dict(), index, {"config": config.to_dict()})
    st.divider()
    shown = origin.keep("lookup_result", index if config is not None else _index_or_none(ctx),
                        {"config": config.to_dict()} if config is not None else None)
    if shown:
        st.markdown(f"### “{shown['query']}”")
        blind = annotator.blind()
        marks = judging.marks(ctx, shown["query"], blind=blind)
        views.lookup_result(shown, judge=judging.callback(ctx, shown), marks=marks.mine, others=marks.others,
                            blind=blind)
        if config is not None and index is not None and not blind:  # "Why not…?" names ranks and scores
            why_not.render(shown, index, config, category=_category(), top_k=None, key="lookup")
    elif index is not None:
        st.info("Type a question and press Enter or **Look up**. Every lookup is recorded as a trace.")


if __name__ == "__main__":
    render()
