"""The flags of `python -m retrieval mcp --http PORT`: where it listens, who may call it, and from which names.

Read here, without the MCP SDK, into an `HttpSettings`; a setting that is missing or wrong is a one-line
ValueError (the command's exit 2) before the index is opened. A loopback host (127.0.0.1, ::1, localhost)
serves as before, authentication optional; any other host needs authentication (a static bearer token from an
environment variable or a file, never a flag value, or an OAuth issuer whose JWTs it accepts), the host
names its clients use (`--allowed-host`) and its public https URL (`--resource-url`). DNS-rebinding
protection (the Host and Origin checks) is on in every mode. retrieval/agent/mcp_auth.py turns the settings
into the SDK's verifier and settings.
"""

from __future__ import annotations

import argparse
import ipaddress
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_HOST = "127.0.0.1"
DEFAULT_SUBJECT = "token"  # the subject a static-token caller is recorded as, unless --auth-subject names one
MCP_PATH = "/mcp"  # where the SDK serves the streamable HTTP endpoint
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")  # the SDK's own allow-list for a loopback host
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
AUTH_FLAGS = "--auth-token-env NAME, --auth-token-file PATH or --oauth-issuer URL"
HTTP_ONLY = ("host", "allowed_host", "allowed_origin", "resource_url", "auth_token_env", "auth_token_file",
             "auth_subject", "oauth_issuer", "oauth_jwks", "oauth_jwks_file", "oauth_audience", "oauth_scope")


@dataclass(frozen=True)
class StaticToken:
    """One shared bearer token; a caller presenting it is recorded as `subject`."""

    secret: bytes = field(repr=False)  # never printed, logged or recorded
    subject: str
    source: str  # where the secret came from, for messages: "$NAME" or the file's path


@dataclass(frozen=True)
class OAuthIssuer:
    """JWTs signed by `issuer`'s keys (a JWKS URL or file; None for both: the issuer's discovery document
    names it), for `audience`, carrying every scope of `scopes`."""

    issuer: str
    jwks_url: str | None
    jwks_file: Path | None
    audience: str
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class HttpSettings:
    """Where the HTTP transport listens, the names and origins it answers, and who may call it (None: anyone
    who reaches it, allowed on a loopback host only)."""

    host: str
    port: int
    resource_url: str  # the endpoint's URL as clients reach it: the RFC 9728 resource, the default audience
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    auth: StaticToken | OAuthIssuer | None

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)


def add_http_flags(parser: argparse.ArgumentParser) -> None:
    """The HTTP transport's flags on the `mcp` subcommand (docs/mcp.md#serving-beyond-localhost)."""
    parser.add_argument("--host", default=None, metavar="HOST",
                        help=f"with --http: listen on HOST (default {DEFAULT_HOST}); a host that is not loopback "
                             "needs authentication, --allowed-host and --resource-url")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="HOST[,HOST...]",
                        help="a Host header value the server answers (repeatable or comma-separated; `name:*` for "
                             "any port); loopback names are always allowed on a loopback host")
    parser.add_argument("--allowed-origin", action="append", default=[], metavar="ORIGIN[,ORIGIN...]",
                        help="an Origin (scheme://host[:port], `:*` for any port) whose requests are answered "
                             "(repeatable or comma-separated); a request from any other origin is refused (403)")
    parser.add_argument("--resource-url", default=None, metavar="URL",
                        help="the endpoint's public URL (e.g. https://kb.example.com/mcp): the protected resource "
                             "its metadata names and the default token audience (default http://HOST:PORT/mcp)")
    parser.add_argument("--auth-token-env", default=None, metavar="NAME",
                        help="require this bearer token, read from the environment variable NAME")
    parser.add_argument("--auth-token-file", default=None, metavar="PATH",
                        help="require this bearer token, read from the file PATH")
    parser.add_argument("--auth-subject", default=None, metavar="NAME",
                        help=f"with a static token: the subject its calls are recorded as (default {DEFAULT_SUBJECT})")
    parser.add_argument("--oauth-issuer", default=None, metavar="URL",
                        help="accept JWTs this OAuth issuer signed (its `iss`); the server is its resource server")
    parser.add_argument("--oauth-jwks", default=None, metavar="URL",
                        help="the issuer's JWKS URL (default: the jwks_uri of its discovery document)")
    parser.add_argument("--oauth-jwks-file", default=None, metavar="PATH", help="the issuer's keys from a JWKS file")
    parser.add_argument("--oauth-audience", default=None, metavar="AUD",
                        help="the audience a token must name (default: --resource-url, as RFC 8707 has it)")
    parser.add_argument("--oauth-scope", action="append", default=[], metavar="SCOPE",
                        help="a scope every token must carry (repeatable); a token without it is refused with 403")


def http_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> HttpSettings | None:
    """The HTTP transport's settings from the `mcp` flags (None over stdio); a ValueError names what is
    missing or wrong and the flag that fixes it."""
    if args.http is None:
        given = [f"--{name.replace('_', '-')}" for name in HTTP_ONLY if getattr(args, name) not in (None, [])]
        if given:
            raise ValueError(f"{', '.join(given)}: only the HTTP transport takes these; add --http PORT (over "
                             f"stdio the client starts the server and no one else can reach it)")
        return None
    host = (args.host or DEFAULT_HOST).strip().removeprefix("[").removesuffix("]")
    if not host:
        raise ValueError("--host takes a host name or address, e.g. 127.0.0.1 or 0.0.0.0")
    loopback = is_loopback(host)
    static = args.auth_token_env is not None or args.auth_token_file is not None
    _check_modes(args, static)
    allowed_hosts = _listed(args.allowed_host, "--allowed-host", _check_host)
    allowed_origins = _listed(args.allowed_origin, "--allowed-origin", _check_origin)
    if not loopback:
        missing = [f"authentication ({AUTH_FLAGS})" if not static and args.oauth_issuer is None else "",
                   "the host names its clients use (--allowed-host kb.example.com)" if not allowed_hosts else "",
                   "its public URL (--resource-url https://kb.example.com/mcp)" if not args.resource_url else ""]
        missing = [m for m in missing if m]
        if missing:
            needs = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
            raise ValueError(f"--host {host} is not a loopback address, so the server needs {needs}; see "
                             f"docs/security.md")
    resource_url = _resource_url(args.resource_url, host, args.http, loopback)
    auth: StaticToken | OAuthIssuer | None = None
    if static:
        auth = StaticToken(_secret(args, environ), args.auth_subject or DEFAULT_SUBJECT,
                           f"${args.auth_token_env}" if args.auth_token_env else args.auth_token_file)
    elif args.oauth_issuer is not None:
        auth = OAuthIssuer(_url(args.oauth_issuer, "--oauth-issuer"),
                           None if args.oauth_jwks is None else _url(args.oauth_jwks, "--oauth-jwks"),
                           None if args.oauth_jwks_file is None else Path(args.oauth_jwks_file),
                           _audience(args.oauth_audience, resource_url),
                           _listed(args.oauth_scope, "--oauth-scope", _check_scope))
    return HttpSettings(host, args.http, resource_url,
                        (*LOOPBACK_HOSTS, *allowed_hosts) if loopback else allowed_hosts,
                        (*LOOPBACK_ORIGINS, *allowed_origins) if loopback else allowed_origins, auth)


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is this machine only."""
    host = host.removeprefix("[").removesuffix("]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def _check_modes(args: argparse.Namespace, static: bool) -> None:
    """One authentication mode, and no flag of a mode that is not on."""
    if args.auth_token_env is not None and args.auth_token_file is not None:
        raise ValueError("give the token one way: --auth-token-env NAME or --auth-token-file PATH, not both")
    if static and args.oauth_issuer is not None:
        raise ValueError("choose one authentication mode: a static token (--auth-token-env/--auth-token-file) or "
                         "an OAuth issuer (--oauth-issuer), not both")
    if args.auth_subject is not None and not static:
        raise ValueError("--auth-subject names the caller of a static token: add --auth-token-env NAME or "
                         "--auth-token-file PATH (an OAuth caller is its JWT's `sub`)")
    if args.auth_subject is not None and not args.auth_subject.strip():
        raise ValueError("--auth-subject takes a non-empty name, e.g. --auth-subject ci-agent")
    oauth_only = [flag for flag, value in (("--oauth-jwks", args.oauth_jwks), ("--oauth-jwks-file",
                                           args.oauth_jwks_file), ("--oauth-audience", args.oauth_audience),
                                           ("--oauth-scope", args.oauth_scope or None)) if value is not None]
    if oauth_only and args.oauth_issuer is None:
        raise ValueError(f"{', '.join(oauth_only)} configure OAuth: add --oauth-issuer URL (the issuer whose "
                         f"JWTs are accepted)")
    if args.oauth_jwks is not None and args.oauth_jwks_file is not None:
        raise ValueError("give the issuer's keys one way: --oauth-jwks URL or --oauth-jwks-file PATH, not both")


def _secret(args: argparse.Namespace, environ: Mapping[str, str]) -> bytes:
    """The static token, stripped of surrounding whitespace; a missing or blank one refuses to start (fail
    closed: an empty secret would equal an empty presented token)."""
    if args.auth_token_env is not None:
        name = args.auth_token_env
        if not name or name not in environ:
            raise ValueError(f"--auth-token-env {name}: the environment variable {name or '(none)'} is not set; "
                             f"set it to the token (or use --auth-token-file PATH)")
        value, where = environ[name], f"the environment variable {name} (--auth-token-env)"
    else:
        try:
            value = Path(args.auth_token_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise ValueError(f"cannot read --auth-token-file {args.auth_token_file} ({reason}); give a file "
                             f"holding the token") from None
        where = f"--auth-token-file {args.auth_token_file}"
    secret = value.strip()
    if not secret:
        raise ValueError(f"{where} is empty; put the token there (an empty token would let anyone in), e.g. "
                         f"python -c \"import secrets; print(secrets.token_urlsafe(32))\"")
    return secret.encode("utf-8")


def _listed(values: Sequence[str], flag: str, check: Callable[[str, str], None]) -> tuple[str, ...]:
    """A repeatable, comma-separated flag's entries, each checked, in order, without repeats."""
    entries = [part.strip() for value in values for part in value.split(",")]
    for entry in entries:
        if not entry:
            raise ValueError(f"{flag} has an empty entry; give values separated by commas, e.g. {flag} a,b")
        check(entry, flag)
    return tuple(dict.fromkeys(entries))


def _check_host(entry: str, flag: str) -> None:
    if "/" in entry or " " in entry:
        raise ValueError(f"{flag} takes a Host header value (a name, with :PORT or :* if clients send one), "
                         f"e.g. kb.example.com or kb.example.com:8443, got {entry!r}")


def _check_origin(entry: str, flag: str) -> None:
    parts = urlsplit(entry)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query or parts.fragment:
        raise ValueError(f"{flag} takes an origin (scheme://host[:port]), e.g. https://app.example.com, "
                         f"got {entry!r}")


def _check_scope(entry: str, flag: str) -> None:
    if " " in entry:
        raise ValueError(f"{flag} takes one scope per value (repeat the flag), got {entry!r}")


def _url(value: str, flag: str) -> str:
    """An http(s) URL; plain http only for a loopback host (keys fetched over the network need TLS)."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{flag} takes an https:// URL, got {value!r}")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ValueError(f"{flag} must be https:// (keys fetched over plain http could be swapped on the way), "
                         f"got {value}")
    return value


def _resource_url(value: str | None, host: str, port: int, loopback: bool) -> str:
    """The endpoint's public URL: --resource-url, else http://HOST:PORT/mcp (a loopback host only)."""
    if value is None:
        netloc = f"[{host}]" if ":" in host else host
        return f"http://{netloc}:{port}{MCP_PATH}"
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"--resource-url takes the endpoint's URL, e.g. https://kb.example.com/mcp, got {value!r}")
    if parts.scheme == "http" and not loopback:
        raise ValueError(f"--resource-url must be https:// when --host is not loopback (a bearer token must not "
                         f"cross the network in clear: put TLS at a reverse proxy), got {value}")
    return value


def _audience(value: str | None, resource_url: str) -> str:
    if value is None:
        return resource_url
    if not value.strip():
        raise ValueError("--oauth-audience takes the audience tokens are issued for, e.g. https://kb.example.com/mcp")
    return value
