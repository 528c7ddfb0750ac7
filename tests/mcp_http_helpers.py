"""Servers for tests/test_mcp_http_auth.py: `python -m retrieval mcp --http` started as a subprocess on a free
port, a tiny OAuth issuer on localhost (its RFC 8414 metadata and JWKS over HTTP, and JWTs signed with its RSA
key), an MCP client session that sends a bearer token, and raw requests for status checks.
It needs the mcp package, PyJWT and cryptography: import it after `pytest.importorskip("mcp")`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import mcp_types as types
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from retrieval.lookup.orchestrator import TOOL_NAME

ROOT = Path(__file__).resolve().parents[1]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "pytest-raw", "version": "1.0"}}}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class HttpServer:
    """A running `python -m retrieval mcp --http PORT` and where it writes."""

    process: subprocess.Popen
    port: int
    traces: Path
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        """SIGTERM, as a service manager stops it: the server flushes its trace store and exits."""
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


@contextmanager
def http_server(folder: Path, *flags: str, cache: Path, env: dict[str, str] | None = None) -> Iterator[HttpServer]:
    """`python -m retrieval mcp --http PORT --traces folder/traces.duckdb FLAGS` on the sample base (its index
    cached in `cache`, shared by the tests), until left."""
    folder.mkdir(parents=True, exist_ok=True)
    port, traces, log = free_port(), folder / "traces.duckdb", folder / "server.log"
    with log.open("w") as sink:
        process = subprocess.Popen([sys.executable, "-m", "retrieval", "mcp", "--http", str(port), "--traces",
                                    str(traces), *flags], cwd=ROOT, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=sink,
                                   env={**os.environ, "LOOKUP_KNOWLEDGE_CACHE": str(cache),
                                        **(env or {})})
    server = HttpServer(process, port, traces, log)
    try:
        _wait_for_port(server)
        yield server
    finally:
        server.stop()


def _wait_for_port(server: HttpServer, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"server exited: {server.log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{server.port} after {timeout:.0f}s")


def refused(*flags: str, env: dict[str, str] | None = None,
            unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """`python -m retrieval mcp FLAGS`, expected to refuse to start (it is given 60 s to prove otherwise)."""
    environ = {key: value for key, value in os.environ.items() if key not in unset}
    return subprocess.run([sys.executable, "-m", "retrieval", "mcp", *flags], cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, env={**environ, **(env or {})})


def post(url: str, token: str | None = None, headers: dict[str, str] | None = None) -> httpx2.Response:
    """A raw `initialize` POST, with `Authorization: Bearer token` when given."""
    sent = {**MCP_HEADERS, **({"Authorization": f"Bearer {token}"} if token is not None else {}), **(headers or {})}
    return httpx2.post(url, headers=sent, json=INITIALIZE, timeout=30)


def lookup(url: str, token: str, query: str) -> types.CallToolResult:
    """`lookup_knowledge` called by the SDK's client over streamable HTTP, sending the bearer token."""
    async def call() -> types.CallToolResult:
        info = types.Implementation(name="pytest-http-auth", version="1.0")
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http, \
                streamable_http_client(url, http_client=http) as streams, \
                ClientSession(*streams[:2], client_info=info) as session:
            await session.initialize()
            return await session.call_tool(TOOL_NAME, {"query": query})

    return anyio.run(call)


def files_holding(folder: Path, secret: str) -> list[str]:
    """The files under `folder` (the trace file, its spool, parts and log, the server's log) holding `secret`."""
    needle = secret.encode()
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes())


@dataclass
class Issuer:
    """An OAuth issuer on localhost: its metadata names its JWKS, which holds one RSA key (`kid`)."""

    url: str
    key: rsa.RSAPrivateKey
    kid: str

    def token(self, audience: str, *, subject: str = "analyst-7", scope: str = "kb.read", expires_in: int = 300,
              key: rsa.RSAPrivateKey | None = None, kid: str | None = None, **claims: Any) -> str:
        """A JWT of this issuer (or signed by `key`, naming `kid`), RS256."""
        now = int(time.time())
        payload = {"iss": self.url, "sub": subject, "aud": audience, "iat": now, "exp": now + expires_in,
                   "scope": scope, **claims}
        return jwt.encode(payload, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid})


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwks_of(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return {"keys": [{**public, "kid": kid, "use": "sig", "alg": "RS256"}]}


@contextmanager
def oauth_issuer() -> Iterator[Issuer]:
    """An issuer serving `/.well-known/oauth-authorization-server` and `/jwks` on a free localhost port."""
    port = free_port()
    issuer = Issuer(f"http://127.0.0.1:{port}", new_key(), "test-key-1")
    documents = {"/.well-known/oauth-authorization-server": {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"},
                 "/jwks": jwks_of(issuer.key, issuer.kid)}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            document = documents.get(self.path)
            body = json.dumps(document).encode()
            self.send_response(200 if document is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
