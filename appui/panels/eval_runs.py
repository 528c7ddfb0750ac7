"""Labelled-set panel of the Compare page: start a run or sweep, see a run's headroom, compare two runs,
open a query's lookups.

Runs, comparisons, significance and the oracle headroom come from eval/ (runs.run_evaluation,
runs.run_sweep, compare.compare_runs, oracle.headroom_table); this module only lays them out.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from appui.data import runs as runs_data
from appui.data.cells import no_none
from appui.panels import answerability, run_compare
from appui.widgets import build_bar, eval_inputs, state
from retrieval import LookupConfig
from retrieval.config import changed_settings

try:
    from eval import datasets as eval_datasets
    from eval import depth as eval_depth
    from eval import judged as eval_judged
    from eval import oracle as eval_oracle
    from eval import runs as eval_runs
    from eval import ties as eval_ties
    from eval.defaults import SAMPLE_GRID  # the comparison the README suggests first, a moving one on the sample
except ImportError as exc:  # eval/ is optional for the Lookup and Traces pages
    eval_datasets = eval_depth = eval_judged = eval_oracle = eval_runs = eval_ties = None
    SAMPLE_GRID = ""  # no sweep box without eval/
    EVAL_MISSING = f"{exc}"
else:
    EVAL_MISSING = ""


def parse_grid(text: str) -> dict[str, list[str]]:
    """`l0_filter=true,false` lines -> {"l0_filter": ["true", "false"]} (values parsed by the config)."""
    grid: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, values = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"a sweep line is setting=value1,value2, got {line!r} (e.g. l0_filter=true,false)")
        grid[key.strip()] = [v.strip() for v in values.split(",") if v.strip()]
    return grid


def run_overrides(config: LookupConfig) -> dict[str, Any]:
    """The sidebar's settings that differ from the defaults: what a run or a sweep started here records as its
    overrides, as `--set` does on the command line, so its label names them (a run with the sidebar's dense model
    is not "default settings"). `top_k` is left out: a run retrieves to its metrics' depth, not to the sidebar's."""
    return {k: v for k, v in changed_settings(config.to_dict()).items() if k != "top_k"}


def _start(ctx: state.AppContext, config: LookupConfig) -> None:
    dataset = eval_inputs.load(eval_datasets, ctx.traces_path)
    building = st.empty()  # the dataset's index, behind the same bar as the sidebar's (then from the disk cache)
    index = eval_runs.open_dataset_index(dataset, config.svd_dims, progress=build_bar.BuildBar(building, dataset.name))
    building.empty()
    bar = st.progress(0.0, text=f"{dataset.name}: {len(dataset.queries)} queries")

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"{done} / {total} lookups")

    if st.session_state.get("eval_mode") == "Sweep":
        grid = parse_grid(st.session_state.get("eval_grid", ""))
        results = eval_runs.run_sweep(dataset, grid, store=ctx.store, base_config=config,
                                      base_overrides=run_overrides(config), progress=progress)
    else:
        results = [eval_runs.run_evaluation(dataset, config, store=ctx.store, progress=progress, index=index,
                                            overrides=run_overrides(config))]
    bar.empty()
    st.session_state["eval_last"] = [r.run_id for r in results]
    _select_new(ctx, [r.run_id for r in results])
    st.success(f"Stored {len(results)} run(s): " + ", ".join(f"`{r.run_id}`" for r in results))


def _select_new(ctx: state.AppContext, new: list[str]) -> None:
    """A new run or sweep selects itself: its group, B = the newest run, A = the one before it in the group."""
    table = runs_data.run_table(ctx.store, eval_runs.list_runs(ctx.store))
    group = table.loc[table["run_id"] == new[-1], "group"].iloc[0]
    members = [r for r in table.loc[table["group"] == group, "run_id"] if r not in new[-1:]]
    st.session_state["eval_group"] = group
    st.session_state["eval_run_b"] = new[-1]
    st.session_state["eval_run_view"] = new[-1]
    if members:
        st.session_state["eval_run_a"] = new[-2] if len(new) > 1 else members[0]


@st.cache_data(show_spinner="Loading the run…", max_entries=16)
def _run(traces_path: str, run_id: str, labels: str):
    """A stored run; `labels` (the judgements' version) keys the cache, since a replay of interactive lookups
    is scored against the judgements as they are now (eval.judged)."""
    return eval_runs.load_run(state.open_store(traces_path), run_id)


def _headroom(ctx: state.AppContext, runs: pd.DataFrame) -> None:
    """One run's metrics card, beside the BM25 baseline and the oracle filter, and its filter by category."""
    ids = runs["run_id"].tolist()
    focus = st.session_state.get("eval_focus") or {}
    if focus.get("run_id") in ids:  # opened from a trace: show its run
        st.session_state["eval_run_view"] = focus["run_id"]
    chosen = (st.session_state.get("eval_select") or {}).get("b")
    if chosen in ids:  # a saved replay: show it
        st.session_state["eval_run_view"] = chosen
    if st.session_state.get("eval_run_view") not in ids:
        st.session_state["eval_run_view"] = ids[0]
    run_id = st.selectbox("Run", ids, key="eval_run_view")
    run = state.guarded(lambda: _run(ctx.traces_path, run_id, eval_judged.version(ctx.store)))
    if run is None:
        return
    summary_card(run)
    oracle = run.diagnostics.get("oracle") or {}
    st.markdown("**Headroom**: the lookup, the BM25 baseline, and the *oracle filter* (each query again with its "
                "true category as the caller's filter); headroom = oracle filter − lookup")
    headroom = eval_oracle.headroom_table(run.metrics, run.baseline, run.diagnostics)
    st.dataframe(no_none(headroom), hide_index=True, key="eval_headroom")
    if headroom.isna().any().any():
        st.caption("— : not measured for this run (no BM25 baseline, or no oracle filter: see below)")
    if "skipped" in oracle:
        st.caption(f"Oracle filter skipped: {oracle['skipped']}")
    elif oracle:
        st.caption(f"{oracle['queries_with_category']} queries filtered by the {oracle['category_rule']}, "
                   f"{oracle['queries_unfiltered']} unfiltered")
        note = eval_oracle.negative_headroom_note(oracle.get("headroom") or {})
        if note:
            st.info(note)
    by_domain = run.diagnostics.get("filter_by_domain") or {}
    if by_domain:
        st.markdown("**L0 filter by applied category** (precision = correct / applied; harm = a relevant page "
                    "outside it)")
        st.dataframe(pd.DataFrame([{"category": d, **v} for d, v in by_domain.items()]), hide_index=True,
                     key="eval_filter_domains")
    missed = run.diagnostics.get("missed_stages") or {}
    if "sentence" in missed:  # where the relevant pages were lost (docs/explain.md)
        st.markdown(f"**Missed relevant pages**: {missed['sentence']}")
    answerability.run_panel(run)
    skipped = eval_datasets.skipped_note(run.dataset)
    if skipped:
        st.caption(skipped[0].upper() + skipped[1:] + ".")
    missing = run.dataset.get("relevant_not_in_kb")
    if missing:
        st.warning(f"{missing} relevant path(s) are not in the knowledge base (e.g. "
                   f"{', '.join(run.dataset.get('relevant_not_in_kb_examples', []))}); they count as misses.")


def summary_card(run: Any) -> None:
    """The run's main metrics as a row of st.metric, the oracle headroom as each metric's delta."""
    oracle = (run.diagnostics.get("oracle") or {}).get("headroom") or {}
    with st.container(border=True, key="eval_card"):
        st.markdown(f"**Run `{run.run_id}`** · {run.dataset.get('name')} · {run.dataset.get('queries')} queries · "
                    f"{runs_data.settings_label(run.overrides, 'default settings')}")
        if run.dataset.get("labelled_queries") == 0:  # a replay of interactive lookups nobody judged
            st.caption("No query of this replay is labelled, so every metric is 0: judge blocks on the Lookup or "
                       "Traces page to score it. The Replay tab shows what changed without labels.")
        shown = list(run.metrics.items())[:6]
        for column, (name, value) in zip(st.columns(len(shown)), shown, strict=True):
            gap = oracle.get(name)
            column.metric(name, f"{value:.3f}", delta=f"{gap:+.3f} oracle headroom" if gap is not None else None,
                          delta_color="off")
        st.caption(eval_depth.judged_line(run.diagnostics)[0].upper() + eval_depth.judged_line(run.diagnostics)[1:])
        ties = run.diagnostics.get("ties") or {}
        if ties.get("flagged"):  # a metric that the order of tied scores moves by more than 0.005 (eval.ties)
            sentence = eval_ties.ties_sentence(ties)
            st.warning(sentence[0].upper() + sentence[1:])


def unavailable(ctx: state.AppContext, missing: str | None) -> bool:
    """Say why runs cannot be shown (eval/ not importable: `missing` is why; no trace file) and return True."""
    if missing:
        st.warning(f"The evaluation package (eval/) is not available: {missing}")
        return True
    if ctx.store is None:
        st.error("Runs are stored in the trace file, which could not be opened.")
        return True
    return False


def render(ctx: state.AppContext, config: LookupConfig | None) -> None:
    st.caption("Run the labelled queries under the sidebar configuration (A), or a sweep over a grid of "
               "settings; runs are stored in the trace file.")
    if unavailable(ctx, EVAL_MISSING if eval_runs is None else None):
        return
    eval_inputs.render()
    mode_col, split_col = st.columns(2)
    mode_col.radio("Mode", ["Single run", "Sweep"], key="eval_mode", horizontal=True)
    split_col.text_input("Split (blank: all)", key="eval_split")
    if st.session_state.get("eval_mode") == "Sweep":
        st.text_area("Grid: one setting per line, values separated by commas", key="eval_grid",
                     value=SAMPLE_GRID)
    if st.button("Start", key="eval_start", type="primary", disabled=config is None):
        state.guarded(lambda: _start(ctx, config))
    runs = state.guarded(lambda: eval_runs.list_runs(ctx.store))
    if runs is None or runs.empty:
        st.info("No runs stored yet: start one above.")
        return
    with st.expander(f"{len(runs)} stored run(s)"):
        settings = runs["overrides"].map(lambda o: runs_data.settings_label(o, "defaults"))  # one text column
        st.dataframe(no_none(runs.assign(overrides=settings)), hide_index=True, key="eval_runs")
        if "sweep_id" in runs and runs["sweep_id"].isna().any():
            st.caption("sweep_id — : a single run, not part of a sweep")
    _headroom(ctx, runs)
    st.divider()
    st.subheader("Compare two runs")
    table = state.guarded(lambda: runs_data.run_table(ctx.store, runs))
    if table is not None:
        run_compare.render(ctx, table)
