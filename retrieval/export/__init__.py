"""Export formatting in one place, for the app and eval alike: safe cells, Markdown and HTML pages, JSON."""

from __future__ import annotations

from retrieval import lazy_exports

_EXPORTS = {
    "FORMULA_STARTS": "cells",
    "csv_cell": "cells",
    "csv_safe": "cells",
    "cell_text": "cells",
    "markdown_cell": "cells",
    "markdown_text": "cells",
    "html_cell": "cells",
    "Section": "document",
    "STYLESHEET": "document",
    "markdown_table": "document",
    "markdown_document": "document",
    "html_table": "document",
    "html_document": "document",
    "json_object": "records",
    "json_lines": "records",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
