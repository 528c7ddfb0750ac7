"""Driving the app in tests: the app's path, a labelled set, and AppTest steps that fail loudly on an error."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = ("appui/pages/lookup.py", "appui/pages/compare.py", "appui/pages/traces.py", "appui/pages/export.py")
QUERIES = [{"_id": "q1", "text": "rotate an API token", "relevant": ["security/tokens.md"]},
           {"_id": "q2", "text": "download invoices", "relevant": ["billing/invoices.md"]},
           {"_id": "q3", "text": "agent offline firewall port", "relevant": ["troubleshooting/agent-offline.md"]},
           {"_id": "q4", "text": "escalation when nobody acknowledges", "relevant": ["alerting/routing.md"]}]



def run_app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=60).run()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def page_text(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [c.value for c in at.code])


def json_value(element) -> dict:
    value = json.loads(element.value) if isinstance(element.value, str) else element.value
    return value if isinstance(value, dict) else {}


def lookup(at: AppTest, query: str) -> AppTest:
    at.text_input(key="lookup_query").set_value(query)
    return ok(at.button(key="lookup_run").click().run())


def select(at: AppTest, key: str, row: int) -> AppTest:
    at.session_state[key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    return at.run()
