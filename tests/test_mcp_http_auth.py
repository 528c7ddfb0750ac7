"""Issue 52, part 1: the MCP server over HTTP beyond localhost, authenticated through the SDK's TokenVerifier.

Real servers (`python -m retrieval mcp --http PORT` subprocesses on the sample base), a real OAuth issuer on
localhost (its metadata and JWKS over HTTP, RSA-signed JWTs), the SDK's MCP client and raw HTTP requests for
the status codes. One test per scenario, named after it; the two module servers (static token, OAuth) answer
the status checks, and the tests that need a server of their own (another mode, or the trace file read after
it stops) are marked slow.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("jwt")
pytest.importorskip("cryptography")

import httpx2
import jwt

from retrieval import TraceStore
from retrieval.cli import main
from tests.fixtures.mcp_http_fixtures import REQUIRED_SCOPE, STATIC_SUBJECT
from tests.mcp_http_helpers import (
    files_holding,
    http_server,
    jwks_of,
    lookup,
    new_key,
    post,
    refused,
)

ROOT = Path(__file__).resolve().parents[1]
SECURITY_DOC = ROOT / "docs" / "security.md"


def _challenge(response: httpx2.Response) -> dict[str, str]:
    """The parameters of a `WWW-Authenticate: Bearer k="v", …` header."""
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer "), header
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


def _one_line_refusal(done: subprocess.CompletedProcess[str], *names: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def _row(traces: Path, invocation_id: str) -> dict:
    rows = TraceStore(traces).query("SELECT id, subject, status, arguments FROM tool_invocation")
    assert invocation_id in set(rows["id"]), rows
    return rows[rows["id"] == invocation_id].iloc[0].to_dict()


# --- 401 and the metadata -----------------------------------------------------------------------------------


def test_no_token_is_401_with_the_resource_metadata_pointer_and_the_metadata_names_the_issuer(oauth_server, issuer):
    response = post(oauth_server.url)
    assert response.status_code == 401
    challenge = _challenge(response)
    metadata_url = f"http://127.0.0.1:{oauth_server.port}/.well-known/oauth-protected-resource/mcp"
    assert challenge["resource_metadata"] == metadata_url
    assert challenge["error"] == "invalid_token"
    metadata = httpx2.get(metadata_url, timeout=30)
    assert metadata.status_code == 200 and metadata.headers["content-type"].startswith("application/json")
    document = metadata.json()
    assert document["resource"] == oauth_server.url
    assert [server.rstrip("/") for server in document["authorization_servers"]] == [issuer.url]
    assert document["scopes_supported"] == [REQUIRED_SCOPE]


def test_a_wrong_static_token_is_401(static_server, static_token):
    for wrong in ("tok-not-the-token", static_token[:-1], static_token + "x", static_token.upper()):
        response = post(static_server.url, wrong)
        assert response.status_code == 401, (wrong, response.status_code)
        assert _challenge(response)["error"] == "invalid_token"
    assert post(static_server.url, static_token).status_code == 200  # the right one passes the same door


# --- JWTs ----------------------------------------------------------------------------------------------------


def test_an_expired_jwt_is_401(oauth_server, issuer):
    assert post(oauth_server.url, issuer.token(oauth_server.url, expires_in=-3600)).status_code == 401
    assert post(oauth_server.url, issuer.token(oauth_server.url)).status_code == 200  # the same, unexpired


def test_a_jwt_for_another_audience_is_401(oauth_server, issuer):
    assert post(oauth_server.url, issuer.token("https://other.example/mcp")).status_code == 401


def test_a_jwt_with_a_wrong_signature_is_401(oauth_server, issuer):
    forged = issuer.token(oauth_server.url, key=new_key())  # the issuer's kid, another key's signature
    assert post(oauth_server.url, forged).status_code == 401


def test_a_jwt_signed_by_an_unknown_key_is_401(oauth_server, issuer):
    assert post(oauth_server.url, issuer.token(oauth_server.url, key=new_key(), kid="unknown-key")).status_code == 401


def test_a_jwt_of_another_issuer_is_401(oauth_server, issuer):
    assert post(oauth_server.url, issuer.token(oauth_server.url, iss="https://elsewhere.example")).status_code == 401


def test_an_unsigned_or_hmac_jwt_is_401_whatever_its_header_says(oauth_server, issuer):
    claims = {"iss": issuer.url, "sub": "mallory", "aud": oauth_server.url, "exp": int(time.time()) + 300,
              "scope": REQUIRED_SCOPE}
    public = jwks_of(issuer.key, issuer.kid)["keys"][0]
    unsigned = jwt.encode(claims, None, algorithm="none", headers={"kid": issuer.kid})
    hmac_with_public_key = jwt.encode(claims, public["n"], algorithm="HS256", headers={"kid": issuer.kid})
    assert post(oauth_server.url, unsigned).status_code == 401
    assert post(oauth_server.url, hmac_with_public_key).status_code == 401


def test_a_jwt_with_too_little_scope_is_403_insufficient_scope(oauth_server, issuer):
    response = post(oauth_server.url, issuer.token(oauth_server.url, scope="kb.write profile"))
    assert response.status_code == 403
    assert _challenge(response)["error"] == "insufficient_scope"
    assert response.json()["error"] == "insufficient_scope"


# --- Host and Origin -----------------------------------------------------------------------------------------


def test_a_forged_host_header_is_refused(static_server, static_token):
    response = post(static_server.url, static_token, headers={"Host": "attacker.example"})
    assert response.status_code == 421 and "Invalid Host header" in response.text


def test_a_forged_origin_is_refused_with_403(static_server, static_token):
    response = post(static_server.url, static_token, headers={"Origin": "https://attacker.example"})
    assert response.status_code == 403 and "Invalid Origin header" in response.text
    local = post(static_server.url, static_token, headers={"Origin": f"http://127.0.0.1:{static_server.port}"})
    assert local.status_code == 200


@pytest.mark.slow  # a server of its own: start, call, stop (2-6 s)
def test_a_loopback_server_without_auth_still_refuses_a_forged_host(tmp_path):
    with http_server(tmp_path, "--no-trace", cache=tmp_path.parent / "index-cache") as server:
        forged = post(server.url, headers={"Host": f"attacker.example:{server.port}"})
        plain = post(server.url)
    assert forged.status_code == 421
    assert plain.status_code == 200


@pytest.mark.slow  # a server of its own: start, call, stop (2-6 s)
def test_a_non_loopback_host_with_auth_and_an_allow_list_answers_only_its_allowed_host(tmp_path):
    token = "tok-beyond-localhost-0123456789"
    with http_server(tmp_path, "--no-trace", "--host", "0.0.0.0", "--auth-token-env", "KB_TOKEN",
                     "--allowed-host", "kb.test", "--allowed-origin", "https://app.kb.test",
                     "--resource-url", "https://kb.test/mcp", env={"KB_TOKEN": token},
                     cache=tmp_path.parent / "index-cache") as server:
        listening = subprocess.run(["ss", "-Hltn", f"sport = :{server.port}"], capture_output=True, text=True).stdout
        allowed = post(server.url, token, headers={"Host": "kb.test", "Origin": "https://app.kb.test"})
        by_address = post(server.url, token)  # Host: 127.0.0.1:PORT is not on the list
        anonymous = post(server.url, headers={"Host": "kb.test"})
    assert {line.split()[3] for line in listening.splitlines()} == {f"0.0.0.0:{server.port}"}
    assert allowed.status_code == 200
    assert by_address.status_code == 421
    assert anonymous.status_code == 401
    assert _challenge(anonymous)["resource_metadata"] == "https://kb.test/.well-known/oauth-protected-resource/mcp"


# --- refusing to start ---------------------------------------------------------------------------------------


def test_an_empty_token_env_var_refuses_to_start(tmp_path):
    done = refused("--http", "8000", "--auth-token-env", "KB_TOKEN", "--traces", str(tmp_path / "t.duckdb"),
                   env={"KB_TOKEN": "  "})
    _one_line_refusal(done, "KB_TOKEN", "empty")
    assert not (tmp_path / "t.duckdb").exists()


def test_a_blank_token_file_refuses_to_start(tmp_path):
    (tmp_path / "token").write_text("\n \n")
    done = refused("--http", "8000", "--auth-token-file", str(tmp_path / "token"))
    _one_line_refusal(done, "--auth-token-file", "empty")


def test_a_missing_token_env_var_refuses_to_start():
    done = refused("--http", "8000", "--auth-token-env", "KB_TOKEN_NOT_SET", unset=("KB_TOKEN_NOT_SET",))
    _one_line_refusal(done, "KB_TOKEN_NOT_SET", "not set")


def test_a_non_loopback_host_without_an_allow_list_refuses_to_start():
    done = refused("--http", "8000", "--host", "0.0.0.0", "--auth-token-env", "KB_TOKEN",
                   "--resource-url", "https://kb.example.com/mcp", env={"KB_TOKEN": "tok-0123456789"})
    line = _one_line_refusal(done, "--host 0.0.0.0", "--allowed-host")
    assert "--auth-token-env" not in line and "--resource-url" not in line  # only what is missing


def test_a_non_loopback_host_without_auth_refuses_to_start():
    done = refused("--http", "8000", "--host", "0.0.0.0", "--allowed-host", "kb.example.com",
                   "--resource-url", "https://kb.example.com/mcp")
    line = _one_line_refusal(done, "--host 0.0.0.0", "--auth-token-env", "--auth-token-file", "--oauth-issuer")
    assert "--allowed-host" not in line


def test_the_refusal_the_docs_quote_is_the_line_the_server_prints():
    block = re.search(r"```text\n\$ (python -m retrieval mcp [^\n]*)\n(error: [^\n]*)\n```", SECURITY_DOC.read_text())
    assert block, "docs/security.md quotes no refusal"
    command, quoted = block.groups()
    done = refused(*command.split()[4:])
    assert _one_line_refusal(done) == quoted


@pytest.mark.parametrize(("flags", "message"), [
    (["--host", "0.0.0.0"], "add --http PORT"),
    (["--http", "8000", "--auth-token-env", "A", "--oauth-issuer", "https://id.example"], "choose one"),
    (["--http", "8000", "--auth-token-env", "A", "--auth-token-file", "f"], "not both"),
    (["--http", "8000", "--oauth-scope", "kb.read"], "add --oauth-issuer URL"),
    (["--http", "8000", "--auth-subject", "ci"], "names the caller of a static token"),
    (["--http", "8000", "--oauth-issuer", "http://id.example"], "must be https://"),
    (["--http", "8000", "--host", "0.0.0.0", "--auth-token-env", "HOME", "--allowed-host", "kb.example.com",
      "--resource-url", "http://kb.example.com/mcp"], "must be https://"),
    (["--http", "8000", "--allowed-origin", "app.example.com"], "takes an origin"),
])
def test_a_bad_combination_of_http_flags_is_one_line_and_exit_2(flags, message, capsys):
    assert main(["mcp", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err


# --- the right caller answers, and its row names it ---------------------------------------------------------


@pytest.mark.slow  # a server of its own: start, call, stop (2-6 s)
def test_the_right_static_token_answers_and_the_row_records_the_configured_subject(tmp_path):
    token = "tok-right-static-9f3c1a7e5d"
    with http_server(tmp_path / "server", "--auth-token-env", "KB_TOKEN", "--auth-subject", STATIC_SUBJECT,
                     env={"KB_TOKEN": token}, cache=tmp_path.parent / "index-cache") as server:
        result = lookup(server.url, token, "download an invoice")
    assert not result.is_error
    assert result.structured_content["evidence_blocks"][0]["source"] == "billing/invoices.md"
    row = _row(server.traces, result.structured_content["invocation_id"])
    assert row["subject"] == STATIC_SUBJECT and row["status"] == "ok"
    assert json.loads(row["arguments"])["via"] == "mcp"
    assert files_holding(tmp_path / "server", token) == []  # the trace file, its parts, the server's log


@pytest.mark.slow  # a server of its own: start, call, stop (2-6 s)
def test_the_right_jwt_answers_and_the_row_records_its_sub(tmp_path, issuer):
    (tmp_path / "jwks.json").write_text(json.dumps(jwks_of(issuer.key, issuer.kid)))
    with http_server(tmp_path / "server", "--oauth-issuer", issuer.url, "--oauth-jwks-file",
                     str(tmp_path / "jwks.json"), "--oauth-scope", REQUIRED_SCOPE,
                     cache=tmp_path.parent / "index-cache") as server:
        token = issuer.token(server.url, subject="analyst-7", scope=f"openid {REQUIRED_SCOPE}")
        result = lookup(server.url, token, "rotate an API token")
    assert not result.is_error
    assert result.structured_content["evidence_blocks"][0]["source"] == "api/api-tokens.md"
    row = _row(server.traces, result.structured_content["invocation_id"])
    assert row["subject"] == "analyst-7"
    assert files_holding(tmp_path / "server", token) == []
    assert files_holding(tmp_path / "server", token.rsplit(".", 1)[1]) == []  # nor its signature alone


def test_a_static_verifier_with_an_empty_secret_admits_no_one_not_even_an_empty_token():
    """The second guard, behind the refusal to start: compare_digest(b"", b"") is True, so it is never asked."""
    import anyio

    from retrieval.agent.mcp_auth import StaticTokenVerifier

    empty = StaticTokenVerifier(b"", "nobody", "http://127.0.0.1:8000/mcp")
    assert anyio.run(empty.verify_token, "") is None
    right = StaticTokenVerifier(b"tok-1", "ci-agent", "http://127.0.0.1:8000/mcp")
    assert anyio.run(right.verify_token, "tok-1").subject == "ci-agent"
    assert anyio.run(right.verify_token, "") is None and "tok-1" not in repr(right)
