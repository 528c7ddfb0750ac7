"""Evidence merging invariants (hypothesis) and ordering."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from retrieval.lookup.evidence import EvidenceBlock, HitReason, dedupe, merge, rank, trim_reasons, truncate

reasons = st.builds(HitReason, layer=st.sampled_from(["L0", "L1"]), field=st.sampled_from(["title", "section"]),
                    reason=st.text(max_size=8), score=st.floats(0, 1))
blocks = st.builds(
    lambda source, layer_reasons, l1: EvidenceBlock(source, "T", "T > S", "L1", "content", tuple(layer_reasons),
                                                   l1_score=l1),
    st.sampled_from(["a.md", "b.md", "c.md"]), st.lists(reasons, min_size=1, max_size=3),
    st.one_of(st.none(), st.floats(0, 1)))


@given(st.lists(blocks, max_size=8))
def test_dedupe_is_idempotent_and_sources_are_unique(items):
    once = dedupe(items)
    assert dedupe(once) == once
    assert len({b.source for b in once}) == len(once)


@given(st.lists(blocks, max_size=8))
def test_dedupe_keeps_every_hit_reason(items):
    kept = {(b.source, r) for b in dedupe(items) for r in b.hit_reasons}
    assert kept == {(b.source, r) for b in items for r in b.hit_reasons}


def test_merge_keeps_the_best_l1_section_and_lists_the_others():
    low = EvidenceBlock("a.md", "A", "A > Low", "L1", "low", (HitReason("L1", "section", "low", 0.2),), l1_score=0.2)
    high = EvidenceBlock("a.md", "A", "A > High", "L1", "high", (HitReason("L1", "section", "high", 0.7),),
                         l1_score=0.7)
    l0 = EvidenceBlock("a.md", "A", "A", "L0", "opening", (HitReason("L0", "title", "t", 3.0),), l0_score=3.0)
    merged = dedupe([low, l0, high])[0]
    assert (merged.content, merged.breadcrumb, merged.retrieval_layer) == ("high", "A > High", "L0+L1")
    assert set(merged.other_sections) == {"A > Low", "A"}
    assert merge(merged, l0).hit_reasons == merged.hit_reasons


def test_rank_blends_l1_and_normalised_l0():
    a = EvidenceBlock("a", "", "", "L1", "", (), l1_score=0.5)
    b = EvidenceBlock("b", "", "", "L0", "", (), l0_score=10.0)
    assert [x.source for x in rank([a, b], l0_weight=0.3, l1_weight=1.0, l0_bound=10.0)] == ["a", "b"]
    assert [x.source for x in rank([a, b], l0_weight=0.6, l1_weight=1.0, l0_bound=10.0)] == ["b", "a"]


def test_truncate_cuts_at_a_word_boundary():
    block = EvidenceBlock("a", "", "", "L1", "alpha beta gamma delta", ())
    assert truncate(block, 12).content == "alpha beta …"
    assert truncate(block, 100) is block


def test_trim_reasons_keeps_the_best_l1_sections_and_every_l0_reason():
    l1 = tuple(HitReason("L1", "section", f"s{i}", i / 10) for i in range(6))
    l0 = (HitReason("L0", "title", "t", 2.0), HitReason("L0", "keywords", "k", 2.0))
    trimmed = trim_reasons(EvidenceBlock("a", "", "", "L0+L1", "", l1 + l0), 3)
    assert [r.reason for r in trimmed.hit_reasons] == ["s5", "s4", "s3", "t", "k"]
