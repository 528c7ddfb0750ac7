"""Driving the app in tests: the app's path, a labelled set, and AppTest steps that fail loudly on an error."""

from __future__ import annotations

import json
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = ("appui/pages/lookup.py", "appui/pages/compare.py", "appui/pages/traces.py", "appui/pages/export.py",
         "appui/pages/judging.py", "appui/pages/trends.py")
QUERIES = [{"_id": "q1", "text": "rotate an API token", "relevant": ["security/tokens.md"]},
           {"_id": "q2", "text": "download invoices", "relevant": ["billing/invoices.md"]},
           {"_id": "q3", "text": "agent offline firewall port", "relevant": ["troubleshooting/agent-offline.md"]},
           {"_id": "q4", "text": "escalation when nobody acknowledges", "relevant": ["alerting/routing.md"]}]
# an [auth] section for AppTest's secrets: the sign-in gate is on (AppTest sets st.user itself)
AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "a test cookie secret, 32 chars",
        "client_id": "lookup-knowledge", "client_secret": "not a secret",
        "server_metadata_url": "http://localhost:9/.well-known/openid-configuration"}
# interactive lookups recorded under mixed settings: (query, l0_filter)
MIXED_LOOKUPS = (("rotate an API token", True), ("download invoices", False), ("silence an alert", False))


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


def named(at: AppTest, name: str = "ana") -> AppTest:
    """The sidebar's annotator set to `name` (the name an analyst types when the app has no login)."""
    at.text_input(key="annotator_name").set_value(name)
    return ok(at.run())


def select(at: AppTest, key: str, row: int) -> AppTest:
    at.session_state[key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    return at.run()


def judge_card(at: AppTest, source: str, grade: int, key: str = "lookup") -> AppTest:
    """Click Relevant (grade 1) or Not relevant (0) on the shown result's card of `source`, found by the source
    line under its title; as annotator "ana" when no name is typed yet."""
    if not at.text_input(key="annotator_name").value:
        at = named(at)
    cards = [c.value.split("`")[1] for c in at.caption if re.fullmatch(r"`[^`]+`( › .*)?", c.value, re.DOTALL)]
    if source not in cards:
        raise AssertionError(f"no card of {source} among {cards}")
    return ok(at.button(key=f"{key}_judge_{cards.index(source) + 1}_{grade}").click().run())
