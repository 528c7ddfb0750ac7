"""Who the app admits when sign-in is on (issue 52, item 2): appui.widgets.signin's pure decision from the
signed-in email, the provider's `email_verified` claim and the `[access]` allow-list, and how that section is
read. The screens are tests/test_app_signin.py's; the real login, tests/test_browser_signin.py's."""

from __future__ import annotations

import pytest

from appui.widgets.signin import AllowList, admission, allow_list, providers, verified

EMAILS = ["ana@example.com", "Bo@Partner.org"]
DOMAINS = ["example.com"]


def test_an_allowed_email_is_admitted():
    decision = admission("bo@partner.org", True, EMAILS, [])
    assert decision.admitted and decision.email == "bo@partner.org"


def test_an_allowed_domain_admits_every_address_in_it():
    decision = admission("carla@example.com", None, [], DOMAINS)
    assert decision.admitted and "example.com" in decision.reason


def test_an_address_elsewhere_is_refused_with_its_email_in_the_reason():
    decision = admission("dan@other.net", True, EMAILS, DOMAINS)
    assert not decision.admitted
    assert decision.reason == "dan@other.net is not on the allowed list of this app."


@pytest.mark.parametrize("email", ["ANA@EXAMPLE.COM", " Ana@Example.Com ", "bo@PARTNER.ORG"])
def test_emails_compare_case_insensitively(email):
    assert admission(email, True, EMAILS, []).admitted


def test_domains_compare_case_insensitively_and_may_be_written_with_an_at():
    assert admission("eve@Example.COM", None, [], ["EXAMPLE.com"]).admitted
    assert admission("eve@example.com", None, [], ["@example.com"]).admitted


@pytest.mark.parametrize("claim", [False, "false", "no", 0, ""])
def test_an_unverified_email_is_refused_even_when_listed(claim):
    decision = admission("ana@example.com", claim, EMAILS, DOMAINS)
    assert not decision.admitted and "not verified" in decision.reason


@pytest.mark.parametrize("claim", [True, "true", "True", None])
def test_a_verified_or_absent_claim_lets_the_list_decide(claim):
    assert admission("ana@example.com", claim, EMAILS, []).admitted


def test_verified_accepts_only_true():
    assert [verified(c) for c in (True, "TRUE", 1, "1", "yes", None)] == [True, True, False, False, False, False]


@pytest.mark.parametrize("email", ["ana@example.com", "anyone@anywhere.org"])
def test_an_empty_allow_list_refuses_everyone(email):
    decision = admission(email, True, [], [])
    assert not decision.admitted and "empty" in decision.reason
    assert not admission(email, True, ["", "  "], [""]).admitted  # blank entries do not count as a list


@pytest.mark.parametrize("email", ["mallory@evil-example.com", "mallory@example.com.evil.org",
                                   "mallory@notexample.com", "mallory@mail.example.com",
                                   "example.com@evil.org", "mallory@evil.org@example.com.evil.org"])
def test_a_domain_suffix_trick_does_not_match(email):
    decision = admission(email, True, [], DOMAINS)
    assert not decision.admitted, decision


def test_the_domain_is_the_part_after_the_last_at():
    assert not admission("ana@example.com@evil.org", True, EMAILS, DOMAINS).admitted


@pytest.mark.parametrize("email", [None, "", "   ", "ana", "@example.com", "ana@", 42])
def test_no_usable_email_is_refused(email):
    decision = admission(email, True, EMAILS, DOMAINS)
    assert not decision.admitted and decision.reason == "The sign-in gave no usable email address."


def test_the_access_section_is_read_in_lower_case():
    allowed = allow_list({"allowed_emails": ["Ana@Example.com "], "allowed_domains": ["@Partner.ORG"]})
    assert allowed == AllowList(frozenset({"ana@example.com"}), frozenset({"partner.org"}))
    assert not allowed.empty and allow_list({}).empty


@pytest.mark.parametrize(("access", "named"), [
    ({"allowed_emails": "ana@example.com"}, "allowed_emails must be a list of strings"),
    ({"allowed_domains": ["example.com", 3]}, "allowed_domains must be a list of strings"),
    ({"allowed_domains": {"example.com": 1}}, "allowed_domains must be a list of strings"),
    ({"allowed_email": ["ana@example.com"]}, "unknown key(s) allowed_email"),
])
def test_a_malformed_access_section_is_refused_naming_the_key(access, named):
    with pytest.raises(ValueError, match=r"^\[access\] ") as error:
        allow_list(access)
    assert named in str(error.value) and "\n" not in str(error.value)


def test_providers_are_the_named_subsections_of_auth():
    assert providers({"redirect_uri": "u", "cookie_secret": "s", "client_id": "c"}) == []
    assert providers({"redirect_uri": "u", "google": {"client_id": "g"}, "okta": {"server_metadata_url": "m"},
                      "client_kwargs": {"prompt": "login"}}) == ["google", "okta"]
