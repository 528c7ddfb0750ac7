"""Judging queues in the app: the current annotator's queue (one page at a time, blind by default, three grades),
assigning pages to annotators (from the hole loop of two runs, or the pages someone already marked) and the table
of queues. Queues, assignments and marks live in eval.annotation and eval.judgements; this module lays them out."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
import streamlit as st

from appui.widgets import annotator, state
from retrieval import LookupConfig

GRADE_BUTTONS = ((0, "Not relevant", ":material/thumb_down:"), (1, "Relevant", ":material/thumb_up:"),
                 (2, "Highly relevant", ":material/verified:"))
ALL = "(all my queues)"
HOLES, MARKED = "Hole loop of two runs", "Pages already marked"
UPCOMING = 5  # pages named under the one being judged


def known_annotators(ctx: state.AppContext) -> list[str]:
    """Everyone who marked a page or has a queue, and the current annotator, sorted."""
    from eval import annotation

    names = {annotator.current()}
    marked = state.guarded(lambda: annotation.by_annotator(ctx.store))
    queues = state.guarded(lambda: annotation.queues(ctx.store))
    for frame, column in ((marked, "who"), (queues, "annotator")):
        if frame is not None and not frame.empty:
            names.update(str(n) for n in frame[column])
    return sorted(n for n in names if n.strip())


def pick_annotators(ctx: state.AppContext, key: str) -> None:
    """A multiselect of the known annotators (`<key>_annotators`) and a free-text field of others, separated by
    commas (`<key>_others`); chosen_annotators reads them."""
    left, right = st.columns(2)
    left.multiselect("Annotators", known_annotators(ctx), key=f"{key}_annotators",
                     help="Everyone who marked a page or has a queue")
    right.text_input("Other annotators", key=f"{key}_others", placeholder="e.g. carol, dave@example.com",
                     help="Names or emails not in the list, separated by commas")


def chosen_annotators(key: str) -> list[str]:
    """The annotators picked in pick_annotators(`key`), in order, each once."""
    typed = str(st.session_state.get(f"{key}_others") or "")
    names = [*(st.session_state.get(f"{key}_annotators") or []), *(n.strip() for n in typed.split(","))]
    return list(dict.fromkeys(n for n in names if n))


def assign_button(key: str, work: Callable[[str, str, list[str]], int]) -> None:
    """An Assign button (key `<key>_assign`) whose callback runs `work(by, queue, annotators)` with the current
    annotator and the queue name and annotators as typed (`<key>_queue`, pick_annotators), before the rerun reads
    anything (as a mark's does); it says how many assignments were added, or asks for what is missing."""
    said = st.session_state.pop(f"{key}_assigned", None)
    if said:
        st.success(said)
    st.button("Assign", key=f"{key}_assign", type="primary", on_click=_assign, args=(key, work))


def _assign(key: str, work: Callable[[str, str, list[str]], int]) -> None:
    by, queue, names = annotator.current(), str(st.session_state.get(f"{key}_queue") or "").strip(), \
        chosen_annotators(key)
    if not by:
        annotator.ask()
    elif not queue:
        st.warning("Name the queue first (e.g. “holes run-a vs run-b”).")
    elif not names:
        st.warning("Pick or type at least one annotator to assign the pages to.")
    else:
        added = state.guarded(lambda: work(by, queue, names))
        if added is not None:
            st.session_state[f"{key}_assigned"] = (
                f"{added} assignment(s) added to queue “{queue}” for {', '.join(names)}"
                + (" (the rest were assigned already)" if added == 0 else "") + ".")


def assign_holes(ctx: state.AppContext, run_a: str, run_b: str, key: str = "holes") -> None:
    """"Assign this queue to…": the hole loop's unjudged pages of runs A and B as a named queue for annotators."""
    from eval import annotation

    with st.popover("Assign this queue to…", icon=":material/group_add:"):
        st.text_input("Queue name", value=f"holes {run_a} vs {run_b}", key=f"{key}_queue")
        pick_annotators(ctx, key)
        assign_button(key, lambda by, queue, names: annotation.assign_holes(ctx.store, run_a, run_b, queue, names,
                                                                           by=by))


def _marked_pages(ctx: state.AppContext, whose: Sequence[str]) -> list[tuple[str, str]]:
    """The (query, source) pages any of `whose` marked, sorted."""
    from eval import annotation

    marked = annotation.by_annotator(ctx.store)
    return sorted({(str(q), str(s)) for q, s in marked.loc[marked["who"].isin(list(whose)), ["query", "source"]]
                   .itertuples(index=False)})


def assign_tab(ctx: state.AppContext) -> None:
    """The Judging page's Assign tab: a queue from two runs' hole loop or from pages already marked, then the table
    of every queue."""
    from eval import annotation
    from eval.runs import list_runs

    source = st.radio("Pages", [HOLES, MARKED], key="ja_source", horizontal=True,
                      help="The hole loop: the pages two runs' changed top 10s brought up that nobody judged. "
                           "Pages already marked: so that others judge the same pages")
    st.text_input("Queue name", key="ja_queue", placeholder="e.g. march audit")
    ready = True
    if source == HOLES:
        runs = state.guarded(lambda: list_runs(ctx.store))
        ids = [] if runs is None or runs.empty else runs["run_id"].tolist()
        ready = len(ids) >= 2
        if not ready:
            st.info("The hole loop needs two runs: start them on the Compare settings page.")
        else:
            left, right = st.columns(2)
            left.selectbox("Run A", ids, index=1, key="ja_run_a")
            right.selectbox("Run B", ids, index=0, key="ja_run_b")
    else:
        marked = state.guarded(lambda: annotation.annotators(ctx.store)) or []
        whose = st.multiselect("Pages marked by", marked, key="ja_marked_by",
                               help="Every page these annotators marked (any grade) goes into the queue")
        pages = state.guarded(lambda: _marked_pages(ctx, whose)) or []
        st.caption(f"{len(pages)} page(s) marked by {', '.join(whose) or 'nobody picked yet'}")
    pick_annotators(ctx, "ja")
    if ready:
        assign_button("ja", lambda by, queue, names: _assign_tab_work(ctx, by, queue, names))
    st.markdown("**Queues**")
    table_or_note(state.guarded(lambda: annotation.queues(ctx.store)), "ja_queues", "No queue yet.")


def _assign_tab_work(ctx: state.AppContext, by: str, queue: str, names: list[str]) -> int:
    """The Assign tab's assignment, from the widgets' values when the button was pressed."""
    from eval import annotation

    picked = st.session_state
    if picked.get("ja_source") == MARKED:
        return annotation.assign(ctx.store, queue, _marked_pages(ctx, picked.get("ja_marked_by") or []), names, by=by)
    return annotation.assign_holes(ctx.store, picked["ja_run_a"], picked["ja_run_b"], queue, names, by=by)


def page_text(ctx: state.AppContext, source: str) -> tuple[str, str, str]:
    """(title, breadcrumb, text) of the page `source` in the sidebar's knowledge base; the source alone when the
    base does not hold it (a page since removed)."""
    index = ctx.index(LookupConfig().svd_dims)
    entry = index.kb.entry(source) if index is not None else None
    if entry is None:
        return source, "", "(this page is not in the knowledge base the sidebar names)"
    crumb = entry.chunks[0].breadcrumb if entry.chunks else ""
    return entry.title or source, crumb, "\n\n".join(c.text for c in entry.chunks)


def _record(ctx: state.AppContext, query: str, source: str, grade: int) -> None:
    from eval import judgements

    who = annotator.current()
    if not who:
        annotator.ask()
        return
    state.guarded(lambda: judgements.record(ctx.store, query, source, grade, who=who))


def queue_tab(ctx: state.AppContext) -> None:
    """The Judging page's My queue tab: the current annotator's next unmarked page, blind unless turned off, with
    the three grades and "n of m" progress; a mark takes the page out and brings up the next."""
    from eval import annotation, judgements

    me = annotator.current()
    if not me:
        annotator.ask()
        return
    blind = st.toggle("Blind", value=True, key="jq_blind",
                      help="Hide other annotators' marks on the page (on by default in the queue)")
    queues = state.guarded(lambda: annotation.queues(ctx.store))
    if queues is None:
        return
    mine = queues[queues["annotator"] == me] if not queues.empty else queues
    if mine.empty:
        st.info(f"No page is assigned to `{me}`: assign a queue on the Assign tab (or from the Compare page's hole "
                "loop).")
        return
    picked = st.selectbox("Queue", [ALL, *sorted(mine["queue"].astype(str).unique())], key="jq_queue")
    scope = mine if picked == ALL else mine[mine["queue"] == picked]
    pending = state.guarded(lambda: annotation.pending(ctx.store, me, None if picked == ALL else picked))
    if pending is None:
        return
    assigned = int(scope["assigned"].sum())
    done = assigned - len(pending)
    st.progress(done / assigned if assigned else 1.0, text=f"{done} of {assigned} judged")
    if pending.empty:
        st.success(f"Nothing left to judge for `{me}` in {'your queues' if picked == ALL else picked}.")
        return
    first = pending.iloc[0]
    query, source = str(first["query"]), str(first["source"])
    title, crumb, text = page_text(ctx, source)
    with st.container(border=True, key="jq_card"):
        st.markdown(f"**Query:** “{query}”")
        st.markdown(f"**{title}**")
        st.caption(f"`{source}`" + (f" › {crumb}" if crumb else ""))
        if not blind:
            _others(ctx, query, source, me, judgements.GRADES)
        for column, (grade, label, icon) in zip(st.columns(len(GRADE_BUTTONS)), GRADE_BUTTONS, strict=True):
            column.button(label, key=f"jq_grade_{grade}", icon=icon, on_click=_record,
                          args=(ctx, query, source, grade))
        st.text(text)
    if len(pending) > 1:
        st.caption("Next: " + " · ".join(f"“{q}” `{s}`" for q, s in
                                         pending[["query", "source"]].iloc[1:1 + UPCOMING].itertuples(index=False))
                   + (f" · and {len(pending) - 1 - UPCOMING} more" if len(pending) > 1 + UPCOMING else ""))


def _others(ctx: state.AppContext, query: str, source: str, me: str, grades: dict[int, str]) -> None:
    """Other annotators' marks on this page (shown only with Blind off)."""
    from eval import annotation

    frame = state.guarded(lambda: annotation.by_annotator(ctx.store))
    if frame is None:
        return
    rows = frame[(frame["query"] == query) & (frame["source"] == source) & (frame["who"] != me)]
    st.caption("Other annotators: " + (", ".join(f"{r.who}: {grades.get(int(r.grade))}"
                                                 for r in rows.itertuples(index=False)) or "no mark yet"))


def table_or_note(frame: pd.DataFrame | None, key: str, empty: str) -> None:
    """A dataframe, or `empty` said when it has no row."""
    if frame is None:
        return
    if frame.empty:
        st.caption(empty)
    else:
        st.dataframe(frame, hide_index=True, key=key)
