"""The Compare page's facets: every metric broken down by the questions' true category and by their own fields
(eval.facets), one facet at a time, a table per metric whose significant deltas (Holm p) are coloured as the
metric deltas above them; a warning for each value where B wins overall but loses significantly."""

from __future__ import annotations

from typing import Any

import streamlit as st

from appui.data import runs as runs_data
from appui.data.cells import no_none

DELTA = "Δ (B − A)"  # the deltas table's header, which runs_data.colour_significant colours


def panel(comparison: Any) -> None:
    """The facet picker and, for the chosen facet, one table per metric: value, n, A, B, Δ, p, Holm p."""
    from eval import facets_report

    breakdown = comparison.facets
    if breakdown is None:
        return
    if not breakdown.facets:
        st.caption("No facet to break the metrics down by: "
                   + "; ".join(f"{name} ({why})" for name, why in breakdown.skipped.items()))
        return
    if st.session_state.get("eval_facet") not in breakdown.facets:
        st.session_state["eval_facet"] = breakdown.facets[0]
    facet = st.selectbox("Break the metrics down by", list(breakdown.facets), key="eval_facet",
                         help="The questions' true category, or a field of the query file (style, kind…); a "
                              "setting can win overall and lose a whole group")
    for table in (t for t in breakdown.tables if t.facet == facet):
        for flag in table.flags():
            st.warning(flag)
    for metric in comparison.metrics:
        table = breakdown.table(facet, metric)
        if table is None:
            continue
        frame = facets_report.table_frame(table).rename(columns={"delta": DELTA})
        frame["significance"] = facets_report.significance_column(table)
        st.markdown(f"**{metric} by {facet}** (overall Δ {table.overall_delta:+.4f})")
        # a value too small to test has no p: a dash (Streamlit draws any missing cell as "None", na_rep or not)
        st.dataframe(no_none(frame, keep=(DELTA,)).style.apply(runs_data.colour_significant, axis=1)
                     .format(precision=4),
                     hide_index=True, key=f"eval_facet_{metric}")
    st.caption(" · ".join(facets_report.explained(breakdown)[:1] + tuple(
        f"not a facet: {name} ({why})" for name, why in breakdown.skipped.items())))
