"""The configuration's inputs: one keyed widget per LookupConfig field, in the groups analysts think in, each
within its field's range (retrieval.config.field_range), the domain vote's advanced parameters in an expander."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import streamlit as st

from appui.widgets import wording
from retrieval import IndexConfig, LookupConfig
from retrieval.config import field_choices, field_range, is_advanced

GROUPS = {"L0 and filter": ("l0_filter", "l0_max_matches", "l0_min_score_ratio", "l0_domain_top_n",
                             "l0_domain_temperature", "l0_domain_min_share", "l0_domain_min_coverage",
                             "filter_widen_ratio"),
          "L1": ("l1_enabled", "l1_min_score", "l1_tfidf_weight", "l1_static_weight", "l1_pool", "svd_dims",
                 "simulate_l1_failure"),
          "Models (dense part, reranker)": ("l1_dense_model", "l1_dense_weight", "l1_dense_pool", "l1_dense_norm",
                                            "rerank_model", "rerank_top", "rerank_weight", "rerank_budget_ms"),
          "Evidence ordering": ("top_k", "l1_weight", "page_weight", "l0_weight", "snippet_chars")}


def grouped_fields() -> list[tuple[str, list[Any]]]:
    """LookupConfig's fields in the groups analysts think in; fields no group names go under "Other"."""
    by_name = {f.name: f for f in fields(LookupConfig)}
    groups = [(title, [by_name[n] for n in names if n in by_name]) for title, names in GROUPS.items()]
    named = {n for names in GROUPS.values() for n in names}
    rest = [f for f in fields(LookupConfig) if f.name not in named]
    return groups + ([("Other", rest)] if rest else [])


def config_widgets(prefix: str, *, initial: LookupConfig | None = None,
                   compare_to: LookupConfig | None = None) -> LookupConfig | None:
    """One keyed widget per LookupConfig field, grouped (L0 and filter, L1, evidence ordering), help from
    the field; a field that differs from `compare_to` is labelled in orange with A's value. None, with the
    error, if invalid. Values are mirrored in `<prefix>values` so they survive pages that do not draw them.
    """
    shadow = st.session_state.setdefault(f"{prefix}values", shown_settings(initial or LookupConfig()))
    other = compare_to.to_dict() if compare_to is not None else None
    for title, group in grouped_fields():
        st.markdown(f"**{title}**")
        for f in (f for f in group if not is_advanced(f.name)):
            _config_widget(prefix, f, shadow, other)
        advanced = [f for f in group if is_advanced(f.name)]
        if advanced:  # the domain vote's parameters: rarely changed, kept out of the way
            with st.expander("Advanced: the domain vote"):
                for f in advanced:
                    _config_widget(prefix, f, shadow, other)
    try:
        return LookupConfig(**shadow)
    except (TypeError, ValueError) as exc:
        st.error(f"Invalid configuration: {wording.for_page(str(exc))}")
        return None


def _config_widget(prefix: str, f: Any, shadow: dict[str, Any], other: dict[str, Any] | None) -> None:
    """One keyed widget for config field `f`, seeded from the mirror `shadow`."""
    key = f"{prefix}{f.name}"
    # seeded from the mirror on every run: a page switch gives the widget a new id, whose
    # value would otherwise fall back to the widget default
    st.session_state[key] = shadow[f.name]
    common = {"key": key, "help": str(f.metadata.get("help", "")), "on_change": _mirror,
              "args": (shadow, f.name, key)}
    kind = f.type if isinstance(f.type, str) else f.type.__name__
    label = f.name.replace("_", " ")
    if other is not None and other.get(f.name) != shadow[f.name]:
        label = f":orange[**{label}**] (A: {other.get(f.name)})"
    span = field_range(f.name)  # the field's own range: the app refuses what LookupConfig would
    choices = field_choices(f.name)
    if kind == "bool":
        st.toggle(label, **common)
    elif choices:
        st.selectbox(label, choices, **common)
    elif kind.startswith("str"):  # a model spec: empty means unset
        st.session_state[key] = shadow[f.name] or ""
        st.text_input(label, placeholder="unset (e.g. onnx:/models/minilm)", **common)
    elif kind.startswith("int"):
        low, high = (int(span[0]), int(span[1])) if span else (0, None)
        st.number_input(label, min_value=low, max_value=high, step=1, **common)
    else:
        low, high = (float(span[0]), float(span[1])) if span else (0.0, None)
        st.number_input(label, min_value=low, max_value=high, step=0.05, format="%.3f", **common)


def _mirror(shadow: dict[str, Any], name: str, key: str) -> None:
    value = st.session_state[key]
    shadow[name] = (value.strip() or None) if isinstance(value, str) and name.endswith("_model") else value


def shown_settings(config: LookupConfig) -> dict[str, Any]:
    """`config`'s fields as the app shows and uses them: an unset `svd_dims` is the dimensions the app opens its
    index with (IndexConfig's), so the label always says the index's real dimensions."""
    return {**config.to_dict(), "svd_dims": config.svd_dims or IndexConfig().svd_dims}


def reset_config(prefix: str, config: LookupConfig | None = None) -> None:
    """Button callback: put every config widget of `prefix` back to `config` (default: the defaults)."""
    config = config or LookupConfig()
    st.session_state[f"{prefix}values"] = shown = shown_settings(config)
    for f in fields(LookupConfig):
        st.session_state[f"{prefix}{f.name}"] = shown[f.name]
