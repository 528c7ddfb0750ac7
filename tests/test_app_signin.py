"""The app's sign-in gate as Streamlit's AppTest runs it (issue 52, item 2): with `[auth]` in the secrets, the
sign-in screen, the refusal and the settings' errors stand in for every page; an admitted user sees the app and
their identity in the sidebar; without `[auth]` nothing changes. AppTest sets `st.user` and `st.secrets` itself;
the real OIDC round trip is tests/test_browser_signin.py's."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from tests.app_helpers import APP, AUTH, ok

ACCESS = {"allowed_emails": ["bo@partner.org"], "allowed_domains": ["example.com"]}
ANA = {"is_logged_in": True, "email": "Ana@Example.com", "email_verified": True, "name": "Ana Analyst"}


def _app(secrets: dict[str, Any] | None, user: dict[str, Any]) -> AppTest:
    """app.py run once with `secrets` (None: the real, absent secrets file) and `st.user` as `user`, without an
    exception (a refusal's st.error is expected: `ok` checks a run that shows none)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets.update(secrets or {})
    at.user = user
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _query_boxes(at: AppTest) -> list:
    return [box for box in at.text_input if box.key == "lookup_query"]


def test_without_auth_the_app_runs_as_before_with_no_identity(env):
    at = ok(_app(None, {"email": "test@example.com"}))  # AppTest's own default user: no sign-in, no identity shown
    assert _query_boxes(at)
    assert not [b for b in at.button if b.label in ("Log in", "Log out")]
    assert not [t for t in at.sidebar.text if "example.com" in t.value]


def test_a_secrets_file_without_auth_changes_nothing(env):
    at = ok(_app({"access": ACCESS, "other": {"token": "x"}}, {}))
    assert _query_boxes(at) and not [b for b in at.button if b.label == "Log in"]


def test_with_auth_a_visitor_sees_only_the_sign_in_screen(env):
    at = _app({"auth": AUTH, "access": ACCESS}, {"is_logged_in": False})
    assert [b.label for b in at.button] == ["Log in"]
    assert not _query_boxes(at) and not at.sidebar.text


def test_several_named_providers_get_a_button_each(env):
    auth = {"redirect_uri": AUTH["redirect_uri"], "cookie_secret": AUTH["cookie_secret"],
            "google": {k: AUTH[k] for k in ("client_id", "client_secret", "server_metadata_url")},
            "okta": {k: AUTH[k] for k in ("client_id", "client_secret", "server_metadata_url")}}
    at = _app({"auth": auth, "access": ACCESS}, {"is_logged_in": False})
    assert [b.label for b in at.button] == ["Log in with google", "Log in with okta"]


def test_an_allowed_user_gets_the_app_and_their_identity_in_the_sidebar(env):
    at = ok(_app({"auth": AUTH, "access": ACCESS}, ANA))
    assert _query_boxes(at)
    assert [t.value for t in at.sidebar.text] == ["Ana Analyst <Ana@Example.com>"]
    assert at.button(key="signin_logout").label == "Log out"


def test_a_user_not_on_the_list_is_refused_and_no_page_runs(env):
    at = _app({"auth": AUTH, "access": ACCESS}, {"is_logged_in": True, "email": "mallory@evil-example.com"})
    assert [t.value for t in at.text] == ["Signed in as mallory@evil-example.com"]
    # the address as typed, escaped for Markdown (the browser test reads it rendered)
    assert at.error[0].value.startswith(r"mallory@evil\-example\.com is not on the allowed list")
    assert [b.label for b in at.button] == ["Log out"]
    assert not _query_boxes(at) and not at.sidebar.text


def test_an_unverified_email_is_refused(env):
    at = _app({"auth": AUTH, "access": ACCESS}, {**ANA, "email_verified": False})
    assert "is not verified" in at.error[0].value and not _query_boxes(at)


def test_auth_without_an_allow_list_admits_nobody_and_says_how_to_fix_it(env):
    at = _app({"auth": AUTH}, ANA)
    message = at.error[0].value
    assert "no one is allowed in" in message and "[access]" in message and ".streamlit/secrets.toml" in message
    assert "allowed_emails" in at.code[0].value
    assert [b.label for b in at.button] == ["Log out"] and not _query_boxes(at)


def test_a_malformed_allow_list_admits_nobody_and_names_the_key(env):
    at = _app({"auth": AUTH, "access": {"allowed_emails": "ana@example.com"}}, ANA)
    assert "allowed_emails must be a list of strings" in at.error[0].value and not _query_boxes(at)


def _who() -> None:
    import streamlit as st

    from appui.widgets import signin

    st.text(repr(signin.signed_in_email()))


def test_signed_in_email_is_the_admitted_users_address_and_none_otherwise():
    def who(secrets: dict[str, Any], user: dict[str, Any]) -> str:
        at = AppTest.from_function(_who)
        at.secrets.update(secrets)
        at.user = user
        return ok(at.run()).text[0].value

    assert who({"auth": AUTH, "access": ACCESS}, ANA) == "'ana@example.com'"
    assert who({}, {"email": "test@example.com", "is_logged_in": True}) == "None"  # no [auth]: no sign-in
    assert who({"auth": AUTH, "access": ACCESS}, {"is_logged_in": True, "email": "m@evil.org"}) == "None"
    assert who({"auth": AUTH, "access": ACCESS}, {"is_logged_in": False}) == "None"
    assert who({"auth": AUTH}, ANA) == "None"


def test_log_out_in_the_sidebar_returns_to_the_sign_in_screen(env):
    at = ok(_app({"auth": AUTH, "access": ACCESS}, ANA))
    at = at.button(key="signin_logout").click().run()
    assert not at.exception and at.user == {"is_logged_in": False}
    assert [b.key for b in at.button] == ["signin_login_default"] and not _query_boxes(at)


def test_a_refused_user_can_log_out(env):
    at = _app({"auth": AUTH, "access": ACCESS}, {"is_logged_in": True, "email": "mallory@evil-example.com"})
    at = at.button(key="signin_refused_logout").click().run()
    assert [b.key for b in at.button] == ["signin_login_default"] and not at.error


def test_a_signed_in_user_can_log_out_of_a_misconfigured_app(env):
    at = _app({"auth": AUTH}, ANA)
    at = at.button(key="signin_settings_logout").click().run()
    assert "no one is allowed in" in at.error[0].value and not at.button  # still closed, no one to log out


def test_log_in_with_an_incomplete_auth_section_shows_streamlits_reason_on_the_sign_in_screen(env):
    incomplete = {k: v for k, v in AUTH.items() if k != "redirect_uri"}
    at = _app({"auth": incomplete, "access": ACCESS}, {"is_logged_in": False})
    at = at.button(key="signin_login_default").click().run()
    assert not at.exception  # Streamlit's StreamlitAuthError, caught: its message names the file to fix
    assert ".streamlit/secrets.toml" in at.error[0].value and at.button(key="signin_login_default")
