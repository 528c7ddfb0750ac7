"""Export formatting in one place, for the app and eval alike: cells safe for spreadsheets and Markdown."""

from __future__ import annotations

from retrieval import lazy_exports

_EXPORTS = {
    "FORMULA_STARTS": "cells",
    "csv_cell": "cells",
    "csv_safe": "cells",
    "markdown_cell": "cells",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
