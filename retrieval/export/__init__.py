"""Export formatting in one place, for the app and eval alike: safe cells, Markdown and HTML pages, JSON."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "cells": "FORMULA_STARTS MISSING csv_cell csv_safe is_ms number_text cell_text markdown_cell markdown_text "
             "html_cell",
    "document": "Section STYLESHEET markdown_table markdown_document html_table html_document",
    "records": "json_object json_lines",
})
