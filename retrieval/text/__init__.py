"""Text shared by every layer: the one term analysis of L0 and L1, clean Unicode at the edge."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "analysis": "tokenize analyze normalize_label STOP_WORDS",
    "surrogates": "replace_surrogates",
})
