"""Data of the evaluation tests: the small labelled Markdown dataset of tests/test_eval_runs.py (and of
tests/test_trace_eval_runs.py), the BM25 baseline's corpus, and the sample size of the runs on ../shared/data."""

from __future__ import annotations

import json
from pathlib import Path

# the labelled dataset of tests/test_eval_runs.py: front matter with a category and a description per page
PAGES = {
    "alerting/routing.md": ("Alert routing", "Alerting", "How alerts reach the right team.",
                            "A route matches alerts by service label and sends them to a receiver. "
                            "Escalation pages the next on-call engineer."),
    "alerting/silences.md": ("Silencing alerts", "Alerting", "Mute notifications during planned work.",
                             "Silence alerts during a maintenance window so nobody is woken up."),
    "billing/invoices.md": ("Invoices and payment", "Billing", "Monthly invoices and card payments.",
                            "Invoices are issued monthly. Pay by credit card through Stripe."),
    "billing/plans.md": ("Plans and pricing", "Billing", "Free, team and enterprise plans compared.",
                         "The enterprise plan adds single sign-on and a yearly invoice."),
    "api/tokens.md": ("API tokens", "API", "Create, scope and rotate API tokens.",
                      "Create a token with scopes. Rotate or revoke a token when it leaks."),
    "api/rate-limits.md": ("Rate limits", "API", "Requests per minute and the 429 status.",
                           "Too many requests return HTTP 429; retry after the Retry-After header."),
    "security/sso.md": ("Single sign-on", "Security", "SAML and OIDC login.",
                        "Connect an identity provider with SAML or OIDC for single sign-on login."),
    "misc/faq.md": ("FAQ", "", "Questions <b>often</b> asked.", "Answers to common questions about the product."),
}
QUERIES = [
    {"_id": "q1", "text": "how do I rotate an API token", "relevant": ["api/tokens.md"]},
    {"_id": "q2", "text": "pay the invoice with a credit card", "relevant": ["billing/invoices.md"]},
    {"_id": "q3", "text": "mute alerts <script>alert(1)</script> maintenance", "relevant": ["alerting/silences.md"]},
    {"_id": "q4", "text": "too many requests 429", "relevant": ["api/rate-limits.md"]},
    {"_id": "q5", "text": "SAML login identity provider", "relevant": ["security/sso.md"]},
    {"_id": "q6", "text": "enterprise plan yearly invoice", "relevant": ["billing/plans.md", "billing/invoices.md"]},
    {"_id": "q7", "text": "what is the capital of France", "relevant": []},  # unanswerable: looked up, graded
    {"_id": "q8", "text": "a question nobody labelled"},  # no `relevant` at all: unlabelled, skipped
]


def write_dataset(root: Path) -> Path:
    for source, (title, category, description, body) in PAGES.items():
        path = root / "kb" / source
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\ntitle: {title}\ncategory: {json.dumps(category)}\n"
                        f"description: {json.dumps(description)}\n---\n{body}\n", encoding="utf-8")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in QUERIES) + "\n", encoding="utf-8")
    return root


# the corpus of tests/test_eval_baseline.py
DOCS = [
    {"_id": "a", "title": "Vitamin D and bone density",
     "text": "Vitamin D supplements increase bone density in adults."},
    {"_id": "b", "title": "Statins", "text": "Statins lower cholesterol and reduce heart attacks."},
    {"_id": "c", "title": "Sleep", "text": "Short sleep raises the risk of heart disease and obesity."},
    {"_id": "d", "title": "Exercise", "text": "Exercise improves bone strength, sleep and heart health."},
]

# queries sampled per run in tests/test_eval_shared_data.py
SHARED_SAMPLE = 60
