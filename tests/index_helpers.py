"""Data and helpers of the index tests: tests/test_domains.py's base where a filtered lookup must widen (also
tests/test_app_domain.py's), and the categories of tests/test_l1_exactness.py's generated base."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from retrieval import IndexConfig

WIDEN_KB = {
    "guides/reset.md": "---\ntitle: Widget reset\n---\nReset the widget: hold the widget reset button, the widget "
                       "reset light blinks, the widget reset completes. Widget reset done.\n",
    "billing/reset.md": "---\ntitle: Widget reset\ncategory: Billing\n---\nCharges stay the same.\n",
    "billing/plans.md": "---\ntitle: Plans\ncategory: Billing\n---\nPlans and prices.\n",
    **{f"misc/page{i}.md": f"---\ntitle: Topic {word}\ncategory: Misc\n---\nAll about {word}.\n"
       for i, word in enumerate(["dashboards", "tokens", "agents", "exports", "alerts"])},
}
CATEGORIES = ("ops", "billing", "security", "docs")  # of the generated base's pages, in turn


def fast_equals_exact(index, queries, filter_sets) -> int:
    """Assert the bounded search gives the exact scan's candidates for every query, filter and setting; how
    many of those searches scored fewer rows than the scan."""
    pruned = 0
    for query in queries:
        for filters in filter_sets:
            for top_k, min_score, weight, page_weight in ((1, 0.0, 0.9, 0.5), (5, 0.05, 0.9, 0.5),
                                                          (30, 0.05, 0.5, 0.0), (3, 0.3, 0.7, 1.0)):
                kwargs = dict(top_k=top_k, filters=filters, min_score=min_score, tfidf_weight=weight,
                              page_weight=page_weight)
                index._last_scores = None
                fast = index.search(query, **kwargs)
                exact = index.search(query, exact=True, **kwargs)
                assert [(c.chunk.chunk_id, c.score, c.lsa_score, c.page_score) for c in fast.candidates] == \
                    [(c.chunk.chunk_id, c.score, c.lsa_score, c.page_score) for c in exact.candidates]
                pruned += fast.rows_scored < exact.rows_scored
    return pruned


CONFIG = IndexConfig(svd_dims=48)
PAGES = 600


def write_generated_base(root: Path, pages: int = PAGES, seed: int = 5) -> list[str]:
    """Markdown pages of 1-6 sections over a Zipf-like vocabulary; queries over its words."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(2000)]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1) ** 0.9
    weights /= weights.sum()
    root.mkdir(parents=True)
    for page in range(pages):
        sections = "".join(f"## Section {s} of page {page}\n{' '.join(rng.choice(vocabulary, 30, p=weights))}\n\n"
                           for s in range(int(rng.integers(1, 7))))
        (root / f"p{page}.md").write_text(f"---\ntitle: Page {page}\ncategory: {CATEGORIES[page % 4]}\n---\n"
                                          f"{sections}", encoding="utf-8")
    return [" ".join(rng.choice(vocabulary[:500], size=int(rng.integers(1, 5)))) for _ in range(20)] + [
        "w1999 w1998", "brandnewword w3"]


def edit_generated_pages(root: Path, numbers, marker: str = "brandnewword") -> None:
    for number in numbers:
        page = root / f"p{number}.md"
        page.write_text(page.read_text(encoding="utf-8") + f"## Revised\n{marker} w7 w8 and more w9\n",
                        encoding="utf-8")
