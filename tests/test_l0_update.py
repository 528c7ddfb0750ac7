"""An update's L0 (retrieval/l0/arrays.py: only new entries tokenised, the kept ones' counts reused) equals a
fresh build's over the same files, array for array and bit for bit: same vocabulary order, idf, weights."""

from __future__ import annotations

import dataclasses

import numpy as np

from retrieval import open_index
from retrieval.index.chunk_store import TextColumn
from retrieval.kb.model import Entry
from retrieval.l0.arrays import L0Arrays, build_arrays, updated_arrays
from retrieval.l1.terms import TermIndex
from retrieval.text.analysis import tokenize


def _assert_same(updated: L0Arrays, built: L0Arrays) -> None:
    for field in dataclasses.fields(L0Arrays):
        got, want = getattr(updated, field.name), getattr(built, field.name)
        assert got.dtype == want.dtype, field.name
        np.testing.assert_array_equal(got, want, err_msg=field.name)


def test_an_updated_l0_equals_a_fresh_builds_to_the_bit(editable_kb):
    """Front matter edited (a new title word, keywords gone), a page deleted, one added with words no page had,
    and a body edit that leaves L0's fields as they were."""
    kb, cache = editable_kb
    open_index(kb, cache_dir=cache)
    invoices = kb / "billing" / "invoices.md"
    text = invoices.read_text(encoding="utf-8")
    invoices.write_text(text.replace("title: ", "title: Zephyrine ", 1), encoding="utf-8")
    (kb / "billing" / "plans.md").unlink()
    (kb / "api" / "quokka.md").write_text("---\ntitle: Quokka gateway tokens\ncategory: API\nkeywords: [quokka, "
                                          "marsupial]\n---\nThe quokka gateway issues marsupial tokens.\n",
                                          encoding="utf-8")
    limits = kb / "api" / "rate-limits.md"
    limits.write_text(limits.read_text(encoding="utf-8") + "\nOne more sentence of body text.\n", encoding="utf-8")
    updated = open_index(kb, cache_dir=cache)
    assert updated.update is not None and updated.update.parsed == 3
    full = open_index(kb, use_cache=False)
    _assert_same(updated.l0.arrays, full.l0.arrays)
    assert updated.l0.match("quokka gateway").matched_titles == full.l0.match("quokka gateway").matched_titles


def test_an_update_that_removes_every_use_of_a_term_drops_it_from_the_vocabulary():
    """A term only the deleted entry held is gone from the updated vocabulary, as a build would not know it
    (its idf would otherwise shift the mean that floors the common terms' idf); a new entry's new term is in."""
    def entry(source: str, title: str, keywords: tuple[str, ...] = ()) -> Entry:
        return Entry(source, title, ("Docs",), keywords, (), "", ())

    entries = [entry(f"p{i}.md", f"Page {i} about {'ocelots' if i == 3 else 'tokens'}", ("tokens",) * (i % 2))
               for i in range(8)]
    old = build_arrays(entries, 1.5, 0.75, 0.25)
    added = entry("new.md", "Lighthouse tokens", ("tokens", "tokens"))
    items = [2, 0, 1, 4, 5, 6, 7, added]  # an order a build never saw, runs and single entries
    updated = updated_arrays(old, items)
    _assert_same(updated, build_arrays([entries[i] for i in items[:-1]] + [added], 1.5, 0.75, 0.25))

    def knows(arrays: L0Arrays, word: str) -> bool:
        return TermIndex(TextColumn(arrays.term_blob, arrays.term_offsets), arrays.term_hashes,
                         arrays.term_ids).get(tokenize(word)[0]) >= 0

    assert knows(old, "ocelots") and not knows(updated, "ocelots")
    assert not knows(old, "lighthouse") and knows(updated, "lighthouse")
