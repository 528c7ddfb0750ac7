"""Data of tests/test_eval_headroom.py: a docs folder where only the true category's filter puts the answer
first, and its query file."""

from __future__ import annotations

import json
from pathlib import Path

# Two pages say the same thing in different categories; the billing page says it more often, so an
# unfiltered lookup ranks it first, and only a filter on the true category (alerting) puts the answer first.
PAGES = {
    "billing/widget.md": ("Page one", "Billing", "Reset the widget. Reset the widget counter. Widget reset steps."),
    "alerting/widget.md": ("Page two", "Alerting", "Reset the widget before the alert fires."),
    "api/tokens.md": ("Tokens", "API", "Create and rotate API tokens with scopes."),
    "security/sso.md": ("Single sign-on", "Security", "Connect SAML or OIDC for single sign-on."),
    "news/release.md": ("Release notes", "News", "Version two resets the widget counter."),
}
ROWS = [
    {"_id": "q1", "text": "reset the widget", "relevant": ["alerting/widget.md"], "category_of_first": "Alerting"},
    {"_id": "q2", "text": "rotate api tokens", "relevant": ["api/tokens.md"], "category_of_first": ""},
    {"_id": "q3", "text": "widget release notes", "relevant": ["news/release.md", "billing/widget.md"],
     "categories": ["News", "Billing"]},
    {"_id": "q4", "text": "SAML single sign-on", "relevant": ["security/sso.md"]},
]


def write_kb(root: Path, pages: dict = PAGES) -> Path:
    for source, (title, category, body) in pages.items():
        path = root / source
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\ntitle: {title}\ncategory: {category}\n---\n{body}\n", encoding="utf-8")
    return root


def write_queries(path: Path, rows: list[dict] = ROWS) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
