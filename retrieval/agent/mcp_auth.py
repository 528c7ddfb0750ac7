"""Who may call the MCP server over HTTP, through the SDK: a `TokenVerifier` per mode, the `AuthSettings` that
make the SDK answer 401 (with its `WWW-Authenticate` challenge pointing to the RFC 9728 metadata it serves)
and 403 `insufficient_scope`, and the Host/Origin checks (DNS-rebinding protection, on in every mode).

- A static token: the presented bearer token's bytes equal the configured secret (`hmac.compare_digest`; an
  empty secret never matches); the caller is the configured subject. The metadata names the server itself
  as the authorization server: such a token is handed out by hand, not through an OAuth flow.
- An OAuth issuer: a JWT signed with an RS/PS/ES key of the issuer's JWKS (never `none` nor HS*, whatever
  the token's header says), for the audience (RFC 8707: the server's URL by default), by the issuer, not
  expired, with a `sub`; the caller is that `sub`, its scopes the `scope`/`scp` claim.

The verifiers are the only code that sees a token: they return the caller's subject, never log a token, and
the server makes no request with one. Imported only by the `mcp` subcommand, with the SDK and PyJWT.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
import jwt
import pydantic
from jwt import PyJWK, PyJWKSet
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings

from retrieval.agent.http_flags import HttpSettings, OAuthIssuer, StaticToken, is_loopback

logger = logging.getLogger(__name__)

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")  # asymmetric only
REQUIRED_CLAIMS = ["exp", "iss", "aud", "sub"]
LEEWAY_SECONDS = 30  # clock skew allowed on exp/nbf/iat
JWKS_TTL = 300.0  # seconds a fetched JWKS is used before it is fetched again
REFETCH_GAP = 30.0  # a token naming an unknown key fetches the JWKS again at most this often
FETCH_TIMEOUT = 10.0


class JwksError(jwt.PyJWKClientError):
    """The issuer's keys could not be had (fetched, read or used); the message says which and why."""


@dataclass(frozen=True)
class ServerAuth:
    """What the MCPServer and its HTTP app take: the verifier and auth settings (both None without
    authentication) and the Host/Origin allow-lists."""

    token_verifier: TokenVerifier | None
    auth: AuthSettings | None
    transport_security: TransportSecuritySettings


def server_auth(settings: HttpSettings) -> ServerAuth:
    """The SDK's objects for `settings`; an OAuth issuer's keys are loaded now, so a server that could accept
    no token refuses to start (ValueError, one line)."""
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=list(settings.allowed_hosts),
                                         allowed_origins=list(settings.allowed_origins))
    if settings.auth is None:
        return ServerAuth(None, None, security)
    verifier: TokenVerifier
    if isinstance(settings.auth, StaticToken):
        verifier = StaticTokenVerifier(settings.auth.secret, settings.auth.subject, settings.resource_url)
        issuer, scopes = settings.resource_url, None
    else:
        verifier = JwtVerifier(settings.auth, JwksKeys.load(settings.auth))
        issuer, scopes = settings.auth.issuer, list(settings.auth.scopes) or None
    try:  # the verifiers check the audience themselves (it may differ from the resource URL)
        auth = AuthSettings(issuer_url=issuer, resource_server_url=settings.resource_url, required_scopes=scopes,
                            validate_token_resource=False)
    except pydantic.ValidationError as exc:
        raise ValueError(f"the MCP SDK refused the URLs {issuer} / {settings.resource_url}: "
                         f"{exc.errors()[0]['msg']}") from None
    return ServerAuth(verifier, auth, security)


@dataclass(frozen=True)
class StaticTokenVerifier:
    """Admits a bearer token equal to `secret` as `subject` (compared in constant time)."""

    secret: bytes = field(repr=False)
    subject: str
    resource: str

    async def verify_token(self, token: str) -> AccessToken | None:
        """The caller's access, or None (401) for any other token."""
        if not self.secret:  # fail closed: compare_digest(b"", b"") is True
            return None
        try:
            presented = token.encode("latin-1")  # the header's bytes as sent (Starlette decoded them as Latin-1)
        except UnicodeEncodeError:
            return None
        if not hmac.compare_digest(presented, self.secret):
            return None
        return AccessToken(token=token, client_id=self.subject, scopes=[], subject=self.subject,
                           resource=self.resource)


@dataclass(frozen=True)
class JwtVerifier:
    """Admits a JWT of `issuer` (signed by one of its keys, for its audience, unexpired) as its `sub`."""

    issuer: OAuthIssuer
    keys: JwksKeys

    async def verify_token(self, token: str) -> AccessToken | None:
        """The caller's access, or None (401); off the event loop, as fetching the JWKS may block."""
        return await anyio.to_thread.run_sync(self.verify, token)

    def verify(self, token: str) -> AccessToken | None:
        try:
            claims = jwt.decode(token, self.keys.key_for(token), algorithms=list(ALGORITHMS),
                                audience=self.issuer.audience, issuer=self.issuer.issuer, leeway=LEEWAY_SECONDS,
                                options={"require": REQUIRED_CLAIMS, "enforce_minimum_key_length": True})
        except jwt.PyJWTError as exc:  # PyJWT's messages name the check, never the token
            logger.info("bearer token refused: %s", exc)
            return None
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject.strip():
            logger.info("bearer token refused: its sub is empty")
            return None
        client = claims.get("client_id") or claims.get("azp") or subject
        return AccessToken(token=token, client_id=str(client), scopes=_scopes(claims), expires_at=int(claims["exp"]),
                           resource=self.issuer.audience, subject=subject, claims={"iss": claims["iss"]})


class JwksKeys:
    """The issuer's signing keys: read once from a JWKS file, or fetched from its JWKS URL and used for
    JWKS_TTL seconds (a token naming a key not in the set fetches it again, at most every REFETCH_GAP s)."""

    def __init__(self, url: str | None, keys: PyJWKSet) -> None:
        self.url = url
        self._keys = keys
        self._fetched = time.monotonic()
        self._lock = threading.Lock()

    @classmethod
    def load(cls, issuer: OAuthIssuer) -> JwksKeys:
        """The keys of `issuer` as its flags say (file, URL, or the URL its discovery document names); none to
        be had is a ValueError naming the flags."""
        try:
            if issuer.jwks_file is not None:
                return cls(None, _usable(_read_file(issuer.jwks_file), str(issuer.jwks_file)))
            url = issuer.jwks_url or discover_jwks_url(issuer.issuer)
            return cls(url, fetch_jwks(url))
        except JwksError as exc:
            raise ValueError(f"{exc}; pass --oauth-jwks URL or --oauth-jwks-file PATH") from None

    def key_for(self, token: str) -> PyJWK:
        """The key that signed `token` by its `kid` (the only key when the token names none); a
        jwt.PyJWTError when there is none or the JWKS cannot be fetched."""
        kid = jwt.get_unverified_header(token).get("kid")
        with self._lock:
            age = time.monotonic() - self._fetched
            if self.url is not None and age >= JWKS_TTL:
                self._refresh()
            key = _find(self._keys, kid)
            if key is None and self.url is not None and REFETCH_GAP <= age < JWKS_TTL:
                self._refresh()
                key = _find(self._keys, kid)
        if key is None:
            raise JwksError(f"no signing key {kid!r} in the issuer's JWKS" if kid else
                            "the token names no key (kid) and the JWKS holds more than one")
        return key

    def _refresh(self) -> None:
        self._fetched = time.monotonic()  # a failed fetch waits its turn too
        self._keys = fetch_jwks(self.url or "")


def discover_jwks_url(issuer: str) -> str:
    """The `jwks_uri` of the issuer's metadata (RFC 8414, then OpenID Connect discovery), whose `issuer`
    must be `issuer`; JwksError when neither answers."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    tried = []
    for url in (f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{path}",
                f"{issuer.rstrip('/')}/.well-known/openid-configuration"):
        document = _get_json(url, tried)
        if not isinstance(document, dict) or "jwks_uri" not in document:
            continue
        if document.get("issuer") != issuer:
            raise JwksError(f"the metadata at {url} is for issuer {document.get('issuer')!r}, not {issuer}")
        jwks = document["jwks_uri"]
        host = urlsplit(str(jwks)).hostname or ""
        if not str(jwks).startswith("https://") and not (str(jwks).startswith("http://") and is_loopback(host)):
            raise JwksError(f"the issuer's jwks_uri {jwks!r} is not an https:// URL")
        return str(jwks)
    raise JwksError(f"cannot find the JWKS of issuer {issuer} ({'; '.join(tried)})")


def fetch_jwks(url: str) -> PyJWKSet:
    """The usable keys of the JWKS at `url`; JwksError when it cannot be fetched or holds none."""
    tried: list[str] = []
    document = _get_json(url, tried)
    if document is None:
        raise JwksError(f"cannot fetch the JWKS {url} ({tried[0]})")
    return _usable(document, url)


def _get_json(url: str, tried: list[str]) -> Any:
    """The JSON document at `url` (no redirect followed), or None with why appended to `tried`."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with _OPENER.open(request, timeout=FETCH_TIMEOUT) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        tried.append(f"{url}: HTTP {exc.code}")
        return None
    except (urllib.error.URLError, OSError) as exc:
        tried.append(f"{url}: {getattr(exc, 'reason', None) or type(exc).__name__}")
        return None
    try:
        return json.loads(body)
    except ValueError:
        tried.append(f"{url}: not JSON")
        return None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a redirect is an HTTPError: keys come from the URL configured, not from where it points


_OPENER = urllib.request.build_opener(_NoRedirect)


def _read_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise JwksError(f"cannot read the JWKS file {path} ({exc.strerror or type(exc).__name__})") from None
    except ValueError as exc:
        raise JwksError(f"the JWKS file {path} is not JSON ({exc})") from None


def _usable(document: Any, where: str) -> PyJWKSet:
    """The keys of a JWKS document this server verifies with (RS/PS/ES signing keys); JwksError for none."""
    if not isinstance(document, dict):
        raise JwksError(f"the JWKS {where} is not a JSON object with `keys`")
    try:
        keys = PyJWKSet.from_dict(document)
    except jwt.PyJWTError as exc:
        raise JwksError(f"the JWKS {where} holds no usable key ({exc})") from None
    keys.keys = [key for key in keys.keys if _signs(key)]
    if not keys.keys:
        raise JwksError(f"the JWKS {where} holds no RS*, PS* or ES* signing key")
    return keys


def _signs(key: PyJWK) -> bool:
    return key.algorithm_name in ALGORITHMS and key.public_key_use in ("sig", None)


def _find(keys: PyJWKSet, kid: Any) -> PyJWK | None:
    if kid is None:
        return keys.keys[0] if len(keys.keys) == 1 else None
    return next((key for key in keys.keys if key.key_id == kid), None)


def _scopes(claims: dict[str, Any]) -> list[str]:
    """The token's scopes: the `scope` claim (space-separated, RFC 9068) or `scp` (a list or a string)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [str(item) for item in value]
    return []
