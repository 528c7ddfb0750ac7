"""Compare settings page: one query under configurations A and B side by side, and labelled-set runs."""

from __future__ import annotations

import json
import uuid

import pandas as pd
import streamlit as st

from appui.data import traces as data
from appui.panels import eval_runs as eval_panel
from appui.panels import leaderboard as leaderboard_panel
from appui.panels import replay as replay_panel
from appui.widgets import origin, state, views


def _copy_a_to_b() -> None:
    config = st.session_state.get("cmp_config_a")
    state.reset_config("cmpb_", config)


def _changes(result: dict) -> None:
    changes = data.result_changes(result["a"], result["b"])
    diff = {k: [result["config_a"][k], result["config_b"][k]] for k in result["config_a"]
            if result["config_a"][k] != result["config_b"][k]}
    st.markdown("**What changed (A → B)**")
    st.caption("Settings: " + (", ".join(f"`{k}` {a} → {b}" for k, (a, b) in diff.items()) or "none"))
    rows = [(name, *(json.dumps(v) if isinstance(v, dict) or v is None else str(v) for v in changes[name]))
            for name in ("filter_decision", "filter_applied", "retrieval_layer", "l1_status", "relevance")]
    table = pd.DataFrame(rows, columns=["", "A", "B"])
    table["changed"] = table["A"] != table["B"]
    st.dataframe(table, hide_index=True, key="cmp_changes")
    gained, lost, moved = changes["gained"], changes["lost"], changes["reordered"]
    st.markdown(f"Blocks gained by B: {views.chips(gained)}  \nBlocks lost by B: {views.chips(lost)}  \n"
                "Reordered: " + (", ".join(f"`{s}` {ra}→{rb}" for s, ra, rb in moved) or "—"))


def _config_b(config_a) -> object:
    """Configuration B, shared by every tab; its differences from A are named before anything runs."""
    st.session_state["cmp_config_a"] = config_a
    with st.expander("Configuration B", expanded=False):
        st.button("Copy A into B", key="cmp_copy", on_click=_copy_a_to_b)
        config_b = state.config_widgets("cmpb_", initial=config_a, compare_to=config_a)
    if config_a is not None and config_b is not None:
        a, b = config_a.to_dict(), config_b.to_dict()
        diff = [f"`{k}` {a[k]} → **{b[k]}**" for k in a if a[k] != b[k]]
        if diff:
            st.warning("B differs from A: " + ", ".join(diff))
        else:
            st.caption("B equals A: open Configuration B to change a setting.")
    return config_b


def _single_query(ctx: state.AppContext, config_a, config_b) -> None:
    st.caption("A is the sidebar configuration; B is set above. Both lookups are recorded as traces.")
    query = st.text_input("Query", key="cmp_query", placeholder="e.g. my phone did not ring when the server went down")
    if st.button("Compare", key="cmp_run", type="primary") and config_a and config_b:
        # both rows carry the side and one comparison id, so the Traces page tells A from B
        comparison = f"cmp-{uuid.uuid4().hex[:8]}"
        a = state.run_lookup(ctx, query, config_a, tags=_tags(comparison, "A"))
        b = state.run_lookup(ctx, query, config_b, tags=_tags(comparison, "B")) if a is not None else None
        index = ctx.index(config_a.svd_dims)
        if a is not None and b is not None and index is not None:
            origin.store("cmp_result", {"a": a.to_dict(), "b": b.to_dict(), "config_a": config_a.to_dict(),
                                        "config_b": config_b.to_dict(), "comparison_id": comparison}, index,
                         {"A": config_a.to_dict(), "B": config_b.to_dict()})
    if "cmp_result" not in st.session_state:
        return
    tied = (st.session_state.get("cmp_result_origin") or {}).get("configs", {}).get("A", {})
    dims = config_a.svd_dims if config_a else tied.get("svd_dims")
    result = origin.keep("cmp_result", ctx.index(dims) if dims else None,
                         {"A": config_a.to_dict(), "B": config_b.to_dict()} if config_a and config_b else None)
    if not result:
        return
    st.markdown(f"### “{result['a']['query']}”")
    if result.get("comparison_id"):
        st.caption(f"Recorded as comparison `{result['comparison_id']}`: the Traces page shows its two calls as "
                   "A and B, each with its settings.")
    _changes(result)
    left, right = st.columns(2)
    for column, side in ((left, "a"), (right, "b")):
        with column:
            res = result[side]
            views.compact_details(res["retrieval_details"], title=f"Configuration {side.upper()}")
            rel = res["relevance"]
            st.caption(f"Relevance {rel['level']} · semantic support {rel['semantic_support']}")


def _tags(comparison: str, side: str) -> dict[str, str]:
    """The `tags` of one side's recorded call: this page, the comparison id both sides share, and the side."""
    return {"page": "compare", "comparison_id": comparison, "side": side}


def render() -> None:
    ctx = state.current()
    config_a = state.sidebar_config(title="Configuration (A)")
    st.title("Compare settings")
    config_b = _config_b(config_a)
    one, labelled, replayed, board = st.tabs(["One query", "Labelled set", "Replay", "Leaderboard"])
    with one:
        _single_query(ctx, config_a, config_b)
    with labelled:
        eval_panel.render(ctx, config_a)
    with replayed:
        replay_panel.render(ctx, config_b)
    with board:  # after the Labelled set tab, which picks run B: its dataset is the default here
        leaderboard_panel.render(ctx)


if __name__ == "__main__":
    render()
