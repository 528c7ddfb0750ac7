"""Who may use the app: with an `[auth]` section in `.streamlit/secrets.toml`, an OpenID Connect sign-in
(`st.login`) and then only the users the `[access]` section allows; without `[auth]`, the app runs as before.

`[access]` lists `allowed_emails` (whole addresses) and/or `allowed_domains` (everyone whose address ends in
`@` and that domain, exactly: no subdomains, no look-alikes), compared case-insensitively. Fail closed: `[auth]`
with no allow-list admits nobody. A provider's `email_verified` claim, when it sends one, must be true.
Streamlit only authenticates; this module is the authorization (docs/security.md, "Serving the app beyond
localhost").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAuthError

AUTH_SECTION = "auth"
ACCESS_SECTION = "access"
ACCESS_KEYS = ("allowed_emails", "allowed_domains")
SETTINGS_FILE = ".streamlit/secrets.toml"
PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")  # what makes a subsection a provider
LOG_OUT_ICON = ":material/logout:"
EXAMPLE = '[access]\nallowed_emails = ["ana@example.com"]\nallowed_domains = ["example.com"]'


@dataclass(frozen=True)
class AllowList:
    """Who may enter: whole addresses and whole domains, lower case."""

    emails: frozenset[str] = frozenset()
    domains: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        """No address and no domain: nobody is admitted."""
        return not self.emails and not self.domains


@dataclass(frozen=True)
class Admission:
    """The decision on one signed-in user: `email` is the address as compared (lower case), `reason` a sentence
    to show them."""

    admitted: bool
    email: str | None
    reason: str


def _address(value: object) -> str:
    return value.strip().lower() if isinstance(value, str) else ""


def _domain(value: object) -> str:
    return _address(value).removeprefix("@")


def verified(email_verified: object) -> bool:
    """Whether a provider's `email_verified` claim says yes: True, or the string "true" some providers send."""
    return email_verified is True or (isinstance(email_verified, str) and email_verified.strip().lower() == "true")


def admission(email: object, email_verified: object, allowed_emails: Iterable[str],
              allowed_domains: Iterable[str]) -> Admission:
    """Whether the user signed in as `email` may enter: the address is listed, or its domain is, exactly.

    `email_verified` is the provider's claim (None when it sent none); present and not true refuses. An empty
    allow-list refuses everyone (fail closed)."""
    address = _address(email)
    emails = {e for e in map(_address, allowed_emails) if e}
    domains = {d for d in map(_domain, allowed_domains) if d}
    local, at, domain = address.rpartition("@")
    if not at or not local or not domain:
        return Admission(False, address or None, "The sign-in gave no usable email address.")
    if email_verified is not None and not verified(email_verified):
        return Admission(False, address, f"The provider says {address} is not verified; only a verified address is "
                                          "admitted.")
    if not emails and not domains:
        return Admission(False, address, f"The allow-list ([{ACCESS_SECTION}]) is empty: nobody is admitted.")
    if address in emails:
        return Admission(True, address, f"{address} is on the allowed list.")
    if domain in domains:
        return Admission(True, address, f"The domain {domain} is on the allowed list.")
    return Admission(False, address, f"{address} is not on the allowed list of this app.")


def allow_list(access: Mapping[str, Any]) -> AllowList:
    """The `[access]` section read as an AllowList; ValueError naming the key when it is not lists of strings."""
    unknown = sorted(set(access) - set(ACCESS_KEYS))
    if unknown:
        raise ValueError(f"[{ACCESS_SECTION}] has unknown key(s) {', '.join(unknown)}: use "
                         f"{' and/or '.join(ACCESS_KEYS)}")
    lists = {}
    for key in ACCESS_KEYS:
        value = access.get(key, [])
        if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
            raise ValueError(f'[{ACCESS_SECTION}] {key} must be a list of strings, like {key} = ["…", "…"]')
        lists[key] = list(value)
    return AllowList(frozenset(e for e in map(_address, lists["allowed_emails"]) if e),
                     frozenset(d for d in map(_domain, lists["allowed_domains"]) if d))


def _settings() -> Mapping[str, Any]:
    """The secrets files' content (`secrets.files`: .streamlit/secrets.toml), empty when there is none."""
    return st.secrets if st.secrets.load_if_toml_exists() else {}


def providers(auth: Mapping[str, Any]) -> list[str]:
    """The named providers of an `[auth]` section (`[auth.NAME]` subsections); empty means the default one."""
    return [name for name, value in auth.items()
            if isinstance(value, Mapping) and any(key in value for key in PROVIDER_KEYS)]


def auth_configured() -> bool:
    """Whether the settings have an `[auth]` section, so the app asks for a sign-in."""
    return AUTH_SECTION in _settings()


def _user() -> dict[str, Any]:
    return st.user.to_dict()


def _judged(user: Mapping[str, Any], allowed: AllowList) -> Admission:
    return admission(user.get("email"), user.get("email_verified"), allowed.emails, allowed.domains)


def signed_in_email() -> str | None:
    """The admitted user's email (lower case), to record who did what; None when the app has no sign-in."""
    settings = _settings()
    user = _user() if AUTH_SECTION in settings else {}
    if not user.get("is_logged_in"):
        return None
    try:
        decision = _judged(user, allow_list(settings.get(ACCESS_SECTION) or {}))
    except ValueError:  # the gate shows the settings' error and admits nobody: there is no admitted user
        return None
    return decision.email if decision.admitted else None


def _login(provider: str | None) -> None:
    try:
        st.login(provider)
    except StreamlitAuthError as error:  # [auth] is incomplete: say what Streamlit misses, on the sign-in screen
        st.session_state["signin_error"] = str(error)


def _literal(text: str) -> str:
    """`text` escaped for Streamlit Markdown: an address from the provider shows as typed, never as a link or
    emphasis or math."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!<>|~$])", r"\\\1", text)


def _identity(user: Mapping[str, Any]) -> str:
    """`Name <email>` as plain text (the provider's claims are never read as Markdown)."""
    name, email = str(user.get("name") or "").strip(), str(user.get("email") or "").strip()
    return f"{name} <{email}>" if name and email else name or email or "an account without a name or email"


def _sign_in_screen(auth: Mapping[str, Any]) -> None:
    st.title("lookup-knowledge")
    st.markdown("Sign in to use the analysts' app.")
    named = providers(auth)
    for name in named or [None]:
        label, slot = f"Log in with {name}" if len(named) > 1 else "Log in", name or "default"
        st.button(label, key=f"signin_login_{slot}", type="primary", on_click=_login, args=(name,),
                  icon=":material/login:")
    if st.session_state.get("signin_error"):
        st.error(st.session_state.pop("signin_error"))


def _settings_error(message: str, user: Mapping[str, Any]) -> None:
    st.title("lookup-knowledge")
    with st.container(key="signin_settings_error"):
        st.error(message)
    st.code(EXAMPLE, language="toml")
    if user.get("is_logged_in"):
        st.button("Log out", key="signin_settings_logout", on_click=st.logout, icon=LOG_OUT_ICON)


def _refusal(decision: Admission, user: Mapping[str, Any]) -> None:
    st.title("lookup-knowledge")
    st.text(f"Signed in as {_identity(user)}")
    with st.container(key="signin_refused"):
        st.error(f"{_literal(decision.reason)} Ask the app's administrator to add your address or domain to "
                 "its allowed list, or log out and sign in with another account.")
    st.button("Log out", key="signin_refused_logout", on_click=st.logout, icon=LOG_OUT_ICON)


def gate() -> bool:
    """Draws the sign-in, refusal or settings-error screen and returns False, or returns True: the app may run
    (an admitted user, or no `[auth]` section at all)."""
    settings = _settings()
    if AUTH_SECTION not in settings:
        return True
    user = _user()
    try:
        allowed = allow_list(settings.get(ACCESS_SECTION) or {})
    except ValueError as error:
        _settings_error(f"The allow-list in `{SETTINGS_FILE}` cannot be read: {error}. Nobody is admitted until "
                        "it is fixed.", user)
        return False
    if allowed.empty:
        _settings_error(f"Sign-in is on (`[{AUTH_SECTION}]` in `{SETTINGS_FILE}`), but no one is allowed in: add "
                        f"an `[{ACCESS_SECTION}]` section listing the addresses and/or domains that may use the app, "
                        "then reload this page.", user)
        return False
    if not user.get("is_logged_in"):
        _sign_in_screen(settings[AUTH_SECTION])
        return False
    decision = _judged(user, allowed)
    if not decision.admitted:
        _refusal(decision, user)
        return False
    return True


def identity_sidebar() -> None:
    """The sidebar's `Signed in as` line and Log out button; nothing without `[auth]`."""
    if not auth_configured():
        return
    user = _user()
    with st.sidebar.container(key="signin_identity"):
        st.caption("Signed in as")
        st.text(_identity(user))
        st.button("Log out", key="signin_logout", on_click=st.logout, icon=LOG_OUT_ICON)
