"""What the labelled-set panel evaluates: a dataset folder, or a docs folder with a query file, plus
excluded path prefixes. Widgets here, loading in eval.datasets (the same calls as `python -m eval run`)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import streamlit as st

from retrieval.paths import PROJECT_ROOT

DATASET, DOCS, JUDGED = "Dataset folder", "Docs folder + query file", "Docs folder + judgements"


def render() -> None:
    """The source choice and its inputs, all keyed (`eval_source`, `eval_dataset`, `eval_kb`, `eval_queries`,
    `eval_exclude`, `eval_unanswerable`, `eval_split`)."""
    st.radio("Labelled set", [DATASET, DOCS, JUDGED], key="eval_source", horizontal=True,
             help="A dataset folder (kb/ + queries.jsonl, or BEIR), a docs folder run against a query file "
                  "in place (like `python -m eval run --kb DIR --queries FILE`), or against the judgements "
                  "made in this trace file (like `--kb DIR --judgements TRACES_FILE`)")
    if st.session_state.get("eval_source") == JUDGED:
        st.text_input("Docs folder (the Markdown root the judged sources are relative to)", key="eval_kb",
                      placeholder="e.g. data/kb")
    elif st.session_state.get("eval_source") == DOCS:
        left, right = st.columns(2)
        left.text_input("Docs folder (--kb: the Markdown root)", key="eval_kb",
                        placeholder="e.g. ../shared/data/hugo_docs/content/en")
        right.text_input("Query file (--queries: JSONL, relevant paths relative to the docs folder)",
                         key="eval_queries", placeholder="e.g. ../shared/data/hugo_docs/dev_queries.jsonl")
    else:
        st.text_input("Dataset (folder with kb/ and queries.jsonl, or a BEIR folder)", key="eval_dataset",
                      value=str(PROJECT_ROOT / "data"))
    st.text_input("Excluded path prefixes (--exclude: comma-separated, relative to the knowledge-base root)",
                  key="eval_exclude", placeholder="e.g. news,showcase,myshowcase,readfiles,maintenance")
    st.text_input("Unanswerable questions (--unanswerable: a JSONL file of questions the knowledge base should "
                  "not answer; optional)", key="eval_unanswerable", placeholder="e.g. data/offtopic_queries.jsonl",
                  help='{"_id", "text"} rows: each is looked up and its relevance grade scored (it should be low '
                       "or none), beside the labelled set's own unanswerable questions")


def load(datasets_module: ModuleType, traces_path: str | None = None) -> Any:
    """The eval.datasets.Dataset the inputs name (`datasets_module` is eval.datasets, optional for the app), with
    the unanswerable questions of `eval_unanswerable` added; ValueError (DatasetError) saying what to fill in when
    they do not name one."""
    from eval.unanswerable import with_unanswerable

    extra = (st.session_state.get("eval_unanswerable", "") or "").strip() or None
    return with_unanswerable(_labelled(datasets_module, traces_path), extra)


def _labelled(datasets_module: ModuleType, traces_path: str | None) -> Any:
    """The labelled set the inputs name, as `load` describes."""
    exclude = st.session_state.get("eval_exclude", "") or ""
    split = (st.session_state.get("eval_split", "") or "").strip() or None
    if st.session_state.get("eval_source") == JUDGED:
        kb = (st.session_state.get("eval_kb", "") or "").strip()
        if not kb or not traces_path:
            raise ValueError("give the docs folder the judged sources are relative to")
        from eval import judgements
        return judgements.load_judged_set(kb, traces_path, split=split, exclude_paths=exclude)
    if st.session_state.get("eval_source") == DOCS:
        kb = (st.session_state.get("eval_kb", "") or "").strip()
        queries = (st.session_state.get("eval_queries", "") or "").strip()
        if not kb or not queries:
            raise ValueError("give both a docs folder and a query file to run a query file against a docs folder")
        return datasets_module.load_query_set(kb, queries, split=split, exclude_paths=exclude)
    dataset = (st.session_state.get("eval_dataset", "") or "").strip()
    if not dataset:
        raise ValueError("give a dataset folder (kb/ + queries.jsonl, or a BEIR folder)")
    return datasets_module.load_dataset(dataset, split=split, exclude_paths=exclude)
