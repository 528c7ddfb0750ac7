"""Text shared by every layer: the one term analysis of L0 and L1, clean Unicode at the edge."""

from __future__ import annotations

from retrieval import lazy_exports

_EXPORTS = {
    "tokenize": "analysis",
    "analyze": "analysis",
    "normalize_label": "analysis",
    "STOP_WORDS": "analysis",
    "replace_surrogates": "surrogates",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
