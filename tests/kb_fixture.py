"""A tiny knowledge base written by the tests: every front-matter case, small enough to reason about."""

from __future__ import annotations

from pathlib import Path

LONG_SECTION = " ".join(
    f"Step {i}: the retention job compacts raw samples into hourly rollups and deletes expired partitions."
    for i in range(1, 80)
)

FILES: dict[str, str] = {
    "alerting/routing.md": """---
title: Alert routing
category: Alerting
keywords: [routing, escalation]
entities: [PagerDuty]
---
Alert routing decides which team is notified when a check fails.

## Routes
A route matches alerts by service label and sends them to a receiver such as a team channel.

## Escalation policies
If nobody acknowledges the alert within ten minutes, the escalation policy pages the next on-call engineer.
""",
    "alerting/silences.md": """

---
title: Silencing alerts
category: "  ALERTING "
keywords: [silence, maintenance window]
---
Silence alerts during planned maintenance so on-call engineers are not woken up.

## Create a silence
Choose the matchers and the duration; the silence mutes notifications until it expires.
""",
    "billing/invoices.md": """---
title: Invoices and payment
category: Billing
keywords: [invoice, payment, credit card]
entities: [Stripe]
---
Invoices are issued on the first day of each month and charged to the card on file.

## Update the credit card
Open Billing settings and replace the card; Stripe validates it before the next charge.

## Download invoices
Every invoice is available as a PDF for accounting.
""",
    "billing/plans.md": """---
title: Plans and data retention
category: Billing
keywords: [plans, retention]
---
The Free plan keeps metrics for 7 days, Team for 90 days and Enterprise for 2 years.

## Retention walkthrough
""" + LONG_SECTION + """

## Changing plans
Upgrades apply immediately; downgrades apply at the end of the billing period.
""",
    "security/tokens.md": """---
title: API tokens
categories: [Security, API]
tags: [token, rotation]
entities: [OAuth]
---
API tokens authenticate scripts against the REST API.

## Rotate a token
Create the new token, deploy it, then revoke the old one; revoked tokens fail with HTTP 401.
""",
    "api/rate-limits.md": """---
title: Rate limits
domain: API
keywords: [throttling]
---
The REST API allows 600 requests per minute per token.

## When you hit the limit
Requests over the limit get HTTP 429 with a Retry-After header; back off and retry.
""",
    "getting-started/install.md": """---
title: Install the agent
category: ""
keywords: [install, agent]
entities: [Skylark Agent]
---
Install the Skylark Agent on every host you want to monitor.

## Linux
Download the package and start the service with systemctl; the agent reports to port 7443.

```sh
# this comment is not a heading
sudo systemctl enable --now skylark-agent
```
""",
    "troubleshooting/agent-offline.md": """# Agent shows offline

When a host's agent shows offline, check that the service runs and that port 7443 is reachable.

## Firewall
Open outbound TCP 7443 to the server; a blocked port is the usual cause.
""",
    "integrations/pagerduty.md": """---
title: PagerDuty integration
category: Integrations
keywords: [incident]
entities: [PagerDuty]
---
Connect PagerDuty to open an incident for every critical alert.

## Set up the service key
Paste the PagerDuty integration key in the receiver settings.
""",
}

BROKEN_FILE = ("broken/bad-yaml.md", """---
title: Broken page
keywords: [one, two
category: Billing
---
Body.
""")


def write_kb(root: Path, *, with_broken: bool = False) -> Path:
    """Write the tiny knowledge base under `root` and return it."""
    files = dict(FILES)
    if with_broken:
        files[BROKEN_FILE[0]] = BROKEN_FILE[1]
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
