"""Data of the index tests: tests/test_domains.py's base where a filtered lookup must widen (also
tests/test_app_domain.py's), and the categories of tests/test_l1_exactness.py's generated base."""

from __future__ import annotations

WIDEN_KB = {
    "guides/reset.md": "---\ntitle: Widget reset\n---\nReset the widget: hold the widget reset button, the widget "
                       "reset light blinks, the widget reset completes. Widget reset done.\n",
    "billing/reset.md": "---\ntitle: Widget reset\ncategory: Billing\n---\nCharges stay the same.\n",
    "billing/plans.md": "---\ntitle: Plans\ncategory: Billing\n---\nPlans and prices.\n",
    **{f"misc/page{i}.md": f"---\ntitle: Topic {word}\ncategory: Misc\n---\nAll about {word}.\n"
       for i, word in enumerate(["dashboards", "tokens", "agents", "exports", "alerts"])},
}
CATEGORIES = ("ops", "billing", "security", "docs")  # of the generated base's pages, in turn
