"""The column store of chunks: reading many at once gives what reading them one by one gives."""

from __future__ import annotations

import numpy as np

from retrieval.index.chunk_store import ChunkRows, ChunkStore, TextColumn
from retrieval.kb.load import parse_markdown_entry


def test_text_column_take_decodes_what_indexing_does():
    values = ["", "plain", "ünïcödé ✓", "\udcff lone surrogate", "last"]
    column = TextColumn.of(values)
    assert column.take(np.array([4, 0, 2, 3, 2])) == [values[4], values[0], values[2], values[3], values[2]]


def test_chunk_rows_take_equals_reading_one_by_one():
    entries = [parse_markdown_entry(f"{name}.md", f"---\ntitle: {name.title()}\ncategories: [{cat}]\n---\n"
                                                  "## One\nfirst section\n## Two\nsecond section ü\n")
               for name, cat in (("alpha", "ops"), ("beta", "billing"), ("gamma", "ops"))]
    store = ChunkStore.of(entries)
    rows = ChunkRows(store, np.array([5, 0, 3, 1], dtype=np.int64))
    picked = [3, 0, 2, 2]
    assert rows.take(picked) == [rows[i] for i in picked]
    assert rows.take([]) == []


def test_chunk_rows_heads_equal_the_chunks_source_title_and_domains():
    """L1 names its pages from `heads_at` (no Chunk built); it must say what the chunks say."""
    entries = [parse_markdown_entry(f"{name}.md", f"---\ntitle: {name.title()}\ncategories: [{cat}]\n---\n"
                                                  "## One\nfirst section\n## Two\nsecond section\n")
               for name, cat in (("alpha", "ops"), ("beta", "billing"), ("gamma", "ops"))]
    rows = ChunkRows(ChunkStore.of(entries), np.array([5, 0, 3, 1], dtype=np.int64))
    picked = np.array([3, 0, 2, 2])
    assert rows.heads_at(picked) == [(rows[i].source, rows[i].title, rows[i].domains) for i in picked.tolist()]
    assert [head[2] for head in rows.heads_at(picked)] == [("ops",), ("ops",), ("billing",), ("billing",)]
