"""Labelled-set panel of the Compare page: start a run or sweep, see a run's headroom, compare two runs,
open a query's lookups.

Runs, comparisons, significance and the oracle headroom come from eval/ (runs.run_evaluation,
runs.run_sweep, compare.compare_runs, oracle.headroom_table); this module only lays them out.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from appui import eval_inputs, state, views
from retrieval import LookupConfig

try:
    from eval import compare as eval_compare
    from eval import datasets as eval_datasets
    from eval import oracle as eval_oracle
    from eval import runs as eval_runs
except ImportError as exc:  # eval/ is optional for the Lookup and Traces pages
    eval_compare = eval_datasets = eval_oracle = eval_runs = None
    EVAL_MISSING = f"{exc}"
else:
    EVAL_MISSING = ""

SIGNIFICANCE = 0.05


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


def _start(ctx: state.AppContext, config: LookupConfig) -> None:
    dataset = eval_inputs.load(eval_datasets)
    bar = st.progress(0.0, text=f"{dataset.name}: {len(dataset.queries)} queries")

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"{done} / {total} lookups")

    if st.session_state.get("eval_mode") == "Sweep":
        grid = parse_grid(st.session_state.get("eval_grid", ""))
        results = eval_runs.run_sweep(dataset, grid, store=ctx.store, base_config=config, progress=progress)
    else:
        results = [eval_runs.run_evaluation(dataset, config, store=ctx.store, progress=progress)]
    bar.empty()
    st.session_state["eval_last"] = [r.run_id for r in results]
    st.success(f"Stored {len(results)} run(s): " + ", ".join(f"`{r.run_id}`" for r in results))


@st.cache_data(show_spinner="Loading the run…", max_entries=16)
def _run(traces_path: str, run_id: str):
    return eval_runs.load_run(state.open_store(traces_path), run_id)


def _headroom(ctx: state.AppContext, runs: pd.DataFrame) -> None:
    """One run's metrics beside the BM25 baseline and the oracle filter, and its filter by category."""
    ids = runs["run_id"].tolist()
    run_id = st.selectbox("Run", ids, index=0, key="eval_run_view")
    run = state.guarded(lambda: _run(ctx.traces_path, run_id))
    if run is None:
        return
    oracle = run.diagnostics.get("oracle") or {}
    st.markdown("**Headroom**: the lookup, the BM25 baseline, and the *oracle filter* (each query again with its "
                "true category as the caller's filter); headroom = oracle filter − lookup")
    st.dataframe(eval_oracle.headroom_table(run.metrics, run.baseline, run.diagnostics), hide_index=True,
                 key="eval_headroom")
    if "skipped" in oracle:
        st.caption(f"Oracle filter skipped: {oracle['skipped']}")
    elif oracle:
        st.caption(f"{oracle['queries_with_category']} queries filtered by the {oracle['category_rule']}, "
                   f"{oracle['queries_unfiltered']} unfiltered")
    by_domain = run.diagnostics.get("filter_by_domain") or {}
    if by_domain:
        st.markdown("**L0 filter by applied category** (precision = correct / applied; harm = a relevant page "
                    "outside it)")
        st.dataframe(pd.DataFrame([{"category": d, **v} for d, v in by_domain.items()]), hide_index=True,
                     key="eval_filter_domains")
    missing = run.dataset.get("relevant_not_in_kb")
    if missing:
        st.warning(f"{missing} relevant path(s) are not in the knowledge base (e.g. "
                   f"{', '.join(run.dataset.get('relevant_not_in_kb_examples', []))}); they count as misses.")


@st.cache_data(show_spinner="Comparing runs…", max_entries=16)
def _comparison(traces_path: str, run_a: str, run_b: str):
    return eval_compare.compare_runs(state.open_store(traces_path), run_a, run_b)


def _metrics_table(comparison: Any) -> pd.DataFrame:
    table = pd.DataFrame.from_dict(comparison.metrics, orient="index").rename_axis("metric").reset_index()
    table["significant"] = table["p_randomization"] < SIGNIFICANCE
    return table


def _pair_lookups(ctx: state.AppContext, comparison: Any, row: pd.Series) -> None:
    """The stored lookups of one query in both runs, side by side."""
    st.markdown(f"#### Query `{row['query_id']}`: “{row['query']}”")
    columns = st.columns(2)
    for column, run_id, side in ((columns[0], comparison.run_a, "A"), (columns[1], comparison.run_b, "B")):
        frame = ctx.store.query("SELECT retrieval_details FROM tool_invocation WHERE run_id = ? AND query_id = ? "
                                "ORDER BY created_at DESC LIMIT 1", [run_id, str(row["query_id"])])
        with column:
            if frame.empty:
                st.warning(f"No stored lookup of this query in {run_id}")
                continue
            views.compact_details(json.loads(frame["retrieval_details"][0]), title=f"Run {side}: {run_id}")


def _compare(ctx: state.AppContext, runs: pd.DataFrame) -> None:
    ids = runs["run_id"].tolist()
    labels = {r.run_id: f"{r.run_id} · {r.dataset} · {json.dumps(r.overrides) if r.overrides else 'defaults'}"
              for r in runs.itertuples()}
    left, right = st.columns(2)
    run_a = left.selectbox("Run A", ids, index=min(1, len(ids) - 1), key="eval_run_a", format_func=labels.get)
    run_b = right.selectbox("Run B", ids, index=0, key="eval_run_b", format_func=labels.get)
    if run_a == run_b:
        st.info("Pick two different runs to compare them.")
        return
    comparison = state.guarded(lambda: _comparison(ctx.traces_path, run_a, run_b))
    if comparison is None:
        return
    st.markdown(f"**Metric deltas (B − A)** on {len(comparison.per_query)} paired queries; significant = "
                f"randomisation-test p < {SIGNIFICANCE}")
    st.dataframe(_metrics_table(comparison), hide_index=True, key="eval_metrics")
    if comparison.config_diff:
        st.caption("Settings: " + ", ".join(f"`{k}` {a} → {b}" for k, (a, b) in comparison.config_diff.items()))
    st.markdown(f"**Per query, largest loss on {comparison.primary_metric} first** (click a row to open both lookups)")
    selection = st.dataframe(comparison.per_query, hide_index=True, key="eval_pairs", on_select="rerun",
                             selection_mode="single-row")
    rows = selection.selection.rows if selection else []
    if rows:
        _pair_lookups(ctx, comparison, comparison.per_query.iloc[rows[0]])


def render(ctx: state.AppContext, config: LookupConfig | None) -> None:
    st.caption("Run the labelled queries under the sidebar configuration (A), or a sweep over a grid of "
               "settings; runs are stored in the trace file.")
    if eval_runs is None:
        st.warning(f"The evaluation package (eval/) is not available: {EVAL_MISSING}")
        return
    if ctx.store is None:
        st.error("Runs are stored in the trace file, which could not be opened.")
        return
    eval_inputs.render()
    mode_col, split_col = st.columns(2)
    mode_col.radio("Mode", ["Single run", "Sweep"], key="eval_mode", horizontal=True)
    split_col.text_input("Split (blank: all)", key="eval_split")
    if st.session_state.get("eval_mode") == "Sweep":
        st.text_area("Grid: one setting per line, values separated by commas", key="eval_grid",
                     value="l0_filter=true,false")
    if st.button("Start", key="eval_start", type="primary", disabled=config is None):
        state.guarded(lambda: _start(ctx, config))
    runs = state.guarded(lambda: eval_runs.list_runs(ctx.store))
    if runs is None or runs.empty:
        st.info("No runs stored yet: start one above.")
        return
    with st.expander(f"{len(runs)} stored run(s)"):
        st.dataframe(runs, hide_index=True, key="eval_runs")
    _headroom(ctx, runs)
    _compare(ctx, runs)
