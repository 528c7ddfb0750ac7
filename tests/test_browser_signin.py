"""The app behind an OpenID Connect login in a real browser (issue 52, item 2 and its acceptance test): Debian's
Chromium through Playwright, `streamlit run app.py` with `[auth]` pointing at a local provider the test starts
(oidc-provider-mock) and `[access]` allowing the domain example.com. The whole round trip is real: the app's
Log in button, the provider's form, the callback and Streamlit's signed identity cookie.

Scenarios: an allowed user gets in, sees their address in the sidebar, looks up and marks a result Relevant
(the row lands in the trace file's `judgement` table); another address is refused, with no page of the app; the
Log out button ends the session; without `[auth]` the app opens with no sign-in at all.
"""

from __future__ import annotations

import pytest

from retrieval import TraceStore
from tests.browser_helpers import CHROMIUM, sync_api, visible, wait_for_app
from tests.fixtures.signin_fixtures import ANA

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}"),
              # the provider (oidc-provider-mock 0.3) calls an Authlib 1.9 method Authlib marks deprecated
              pytest.mark.filterwarnings("ignore:get_jwt_config:DeprecationWarning")]
QUERY = "rotate an API token"


def _sign_in(tab, server: dict, subject: str) -> None:
    """Open the app, press Log in, sign in at the provider as `subject` and come back to the app."""
    tab.goto(server["url"])
    wait_for_app(tab)
    tab.locator(".st-key-signin_login_default button").click()
    tab.wait_for_url(lambda url: url.startswith(f"{server['provider']}/oauth2/authorize"))
    tab.locator("input[name=sub]").fill(subject)
    tab.get_by_role("button", name="Authorize").click()
    tab.wait_for_url(lambda url: url.rstrip("/") == server["url"])  # the callback, then Streamlit's redirect home
    wait_for_app(tab)


def _query_box(tab):
    return tab.locator(".st-key-lookup_query input")


def test_a_signed_in_allowed_user_gets_in_sees_their_email_and_marks_a_result_relevant(signin_server, signin_tab):
    tab = signin_tab
    _sign_in(tab, signin_server, ANA["sub"])
    identity = tab.locator(".st-key-signin_identity")
    visible(tab, identity.get_by_text(f"{ANA['name']} <{ANA['email']}>"))
    sync_api.expect(identity.get_by_role("button", name="Log out")).to_be_visible()
    _query_box(tab).fill(QUERY)
    _query_box(tab).press("Enter")
    visible(tab, tab.get_by_test_id("stMarkdownContainer").filter(has_text=f"“{QUERY}”").first)
    tab.locator(".st-key-lookup_judge_1_1 button:visible").first.click()
    wait_for_app(tab)
    marks = TraceStore(signin_server["traces"]).query("SELECT query, source, grade, who FROM judgement")
    assert len(marks) == 1, marks
    assert marks["query"][0] == QUERY and marks["grade"][0] == 1 and marks["source"][0].endswith(".md")
    assert marks["who"][0] == ANA["email"].lower()  # the mark names the signed-in annotator


def test_a_user_not_on_the_list_is_refused_and_sees_no_page(signin_server, signin_tab):
    tab = signin_tab
    _sign_in(tab, signin_server, "mallory@evil-example.com")  # the provider's claims: this email, no name
    refusal = tab.locator(".st-key-signin_refused")
    visible(tab, refusal.get_by_text("mallory@evil-example.com is not on the allowed list"))
    sync_api.expect(tab.get_by_text("Signed in as mallory@evil-example.com")).to_be_visible()
    sync_api.expect(tab.get_by_role("button", name="Log out")).to_be_visible()
    sync_api.expect(_query_box(tab)).to_have_count(0)
    sync_api.expect(tab.get_by_test_id("stSidebarNav")).to_have_count(0)
    sync_api.expect(tab.locator(".st-key-signin_identity")).to_have_count(0)


def test_log_out_ends_the_session_and_shows_the_sign_in_screen_again(signin_server, signin_tab):
    tab = signin_tab
    _sign_in(tab, signin_server, ANA["sub"])
    visible(tab, _query_box(tab))
    tab.locator(".st-key-signin_logout button").click()
    # the provider publishes an end_session_endpoint: Streamlit sends the browser there to end that session too
    tab.wait_for_url(lambda url: url.startswith(f"{signin_server['provider']}/oauth2/end_session"))
    tab.get_by_role("button").first.click()
    tab.wait_for_url(lambda url: url.rstrip("/") == signin_server["url"])
    wait_for_app(tab)
    visible(tab, tab.locator(".st-key-signin_login_default button"))
    sync_api.expect(_query_box(tab)).to_have_count(0)


def test_without_auth_the_app_opens_with_no_sign_in(app_server, signin_tab):
    tab = signin_tab
    tab.goto(app_server["url"])
    wait_for_app(tab)
    visible(tab, _query_box(tab))
    sync_api.expect(tab.get_by_role("button", name="Log in")).to_have_count(0)
    sync_api.expect(tab.locator(".st-key-signin_identity")).to_have_count(0)
