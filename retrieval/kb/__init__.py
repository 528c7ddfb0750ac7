"""The knowledge base: its model (entries, chunks), and loading Markdown folders or BEIR JSONL safely."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "model": "Chunk Entry KnowledgeBase KnowledgeBaseError",
    "load": "load_knowledge_base fingerprint markdown_sources exclude_prefixes",
    "markdown": "split_front_matter FrontMatterError",
})
