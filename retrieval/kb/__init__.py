"""The knowledge base: its model (entries, chunks), and loading Markdown folders or BEIR JSONL safely."""

from __future__ import annotations

from retrieval import lazy_exports

_EXPORTS = {
    "Chunk": "model",
    "Entry": "model",
    "KnowledgeBase": "model",
    "KnowledgeBaseError": "model",
    "load_knowledge_base": "load",
    "fingerprint": "load",
    "markdown_sources": "load",
    "exclude_prefixes": "load",
    "split_front_matter": "markdown",
    "FrontMatterError": "markdown",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
