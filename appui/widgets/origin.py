"""Results on screen are tied to the knowledge base and configuration that produced them.

A result is stored with its origin (base path, content fingerprint, configuration). When the base
changes, or cannot be opened, the result is dropped with a note; when only the configuration changes,
it stays on screen marked stale, naming the settings that changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from retrieval import KnowledgeIndex


def of(index: KnowledgeIndex, configs: Mapping[str, Any]) -> dict[str, Any]:
    """The origin of a result produced now: base path, fingerprint, and each named configuration as a dict."""
    return {"kb_path": str(index.kb.root), "kb_fingerprint": index.kb.fingerprint, "configs": dict(configs),
            "excluded_paths": list(index.kb.excluded_paths)}


def keep(key: str, index: KnowledgeIndex | None, configs: Mapping[str, Any] | None) -> Any:
    """The result under `key` if it still belongs on screen; draws the cleared or stale note.

    `index` None means the base could not be opened; `configs` None means the configuration is invalid
    (then the result is kept, marked stale).
    """
    result, origin = st.session_state.get(key), st.session_state.get(f"{key}_origin")
    if result is None:
        return None
    if origin is None or index is None or origin["kb_fingerprint"] != index.kb.fingerprint \
            or origin["kb_path"] != str(index.kb.root):
        st.session_state.pop(key, None)
        st.session_state.pop(f"{key}_origin", None)
        where = f"`{origin['kb_path']}`" if origin else "another knowledge base"
        st.info(f"The previous result came from {where}; it was cleared because {_what_changed(origin, index)}.")
        return None
    changed = _changed(origin["configs"], configs)
    if changed:
        st.warning("Stale: this result was produced under another configuration (changed: "
                   + ", ".join(f"`{name}`" for name in changed) + "). Run it again to refresh it.")
    st.caption(f"From `{origin['kb_path']}` · fingerprint `{origin['kb_fingerprint'][:12]}`")
    return result


def _what_changed(origin: Mapping[str, Any] | None, index: KnowledgeIndex | None) -> str:
    """The knowledge base changed, or (same folder, other exclusions) only its excluded folders did."""
    if origin is not None and index is not None and origin["kb_path"] == str(index.kb.root) \
            and origin.get("excluded_paths", []) != list(index.kb.excluded_paths):
        return "the excluded folders changed"
    return "the knowledge base changed"


def store(key: str, result: Any, index: KnowledgeIndex, configs: Mapping[str, Any]) -> None:
    """Keep `result` under `key` with its origin."""
    st.session_state[key] = result
    st.session_state[f"{key}_origin"] = of(index, configs)


def _changed(then: Mapping[str, Any], now: Mapping[str, Any] | None) -> list[str]:
    if now is None:
        return ["the configuration is invalid now"]
    names = []
    for label, config in then.items():
        current = now.get(label) or {}
        names += [f"{label}.{k}" if len(then) > 1 else k for k in config if current.get(k) != config[k]]
    return names
