"""`python -m retrieval mcp`: `lookup_knowledge` as a Model Context Protocol tool, with the index kept warm.

The server adds no retrieval of its own: the tool calls `lookup_knowledge` with a recorder that adds the
client's name to the invocation's arguments, maps the result to the output schema (mcp_output), and turns
the library's `ValueError` into an `is_error` result carrying the same one-line message. The resource
`knowledge://{source}` returns a whole entry (mcp_resources). Over HTTP, who may call and from which Host and
Origin is mcp_auth's (the SDK refuses the rest before the tool runs); an authenticated caller's subject is
recorded on the invocation. Imported only by the `mcp` subcommand, so `import retrieval` never imports the SDK.
"""

from __future__ import annotations

import signal
import sys
from dataclasses import dataclass, replace
from typing import Annotated, Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context, MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from retrieval import __version__
from retrieval.agent.categories import check_category
from retrieval.agent.http_flags import HttpSettings
from retrieval.agent.mcp_auth import ServerAuth
from retrieval.agent.mcp_output import LookupOutput, input_schema, render_text, structured_output
from retrieval.agent.mcp_resources import URI_TEMPLATE, SourceRefused, find_entry, render_entry
from retrieval.agent.tool import TOOL_DESCRIPTION, LookupTool
from retrieval.config import LookupConfig
from retrieval.index.build import KnowledgeIndex
from retrieval.index.live import LiveIndex, current_index
from retrieval.lookup.invocation import Recorder, ToolInvocation
from retrieval.lookup.orchestrator import TOOL_NAME, lookup_knowledge

SERVER_NAME = "lookup-knowledge"
HTTP_HOST = "127.0.0.1"  # the HTTP transport's default host; another needs authentication (http_flags)
INSTRUCTIONS = ("Call lookup_knowledge before answering questions about the product; cite each block's "
                "`source`, and read a whole entry through its `resource_uri` (knowledge://…).")


@dataclass(frozen=True)
class ClientRecorder:
    """Records an invocation with the MCP client's name (and version) added to its arguments, and the
    authenticated caller's subject (None without authentication) as its `subject`."""

    recorder: Recorder
    client: str | None
    client_version: str | None = None
    subject: str | None = None

    def __call__(self, invocation: ToolInvocation) -> None:
        arguments = {**invocation.arguments, "client": self.client, "client_version": self.client_version,
                     "via": "mcp"}
        self.recorder(replace(invocation, arguments=arguments, subject=self.subject))


def build_server(index: KnowledgeIndex | LiveIndex, config: LookupConfig, recorder: Recorder | None,
                 auth: ServerAuth | None = None) -> MCPServer:
    """An MCP server with the `lookup_knowledge` tool and the `knowledge://{source}` resource over `index` (a
    LiveIndex: each call answers from its current index, which follows the knowledge base's files); with
    `auth`'s verifier, its HTTP app admits only the callers that verifier admits."""
    definition = LookupTool(current_index(index), config).definition()
    known: list[tuple[KnowledgeIndex, frozenset[str]]] = []  # the domains of the last index asked, computed once

    def domains_of(answering: KnowledgeIndex) -> frozenset[str]:
        if not known or known[0][0] is not answering:
            known[:] = [(answering, frozenset(answering.kb.domains()))]
        return known[0][1]

    def lookup(query: Any = None, category: Any = None, top_k: Any = None,
               ctx: Context | None = None) -> Annotated[CallToolResult, LookupOutput]:
        client_recorder = None if recorder is None else ClientRecorder(recorder, *_client_info(ctx), _subject())
        answering = current_index(index)  # one index for the whole call, even if a rebuild lands meanwhile
        try:
            check_category(category, domains_of(answering),
                            {"query": query, "category": category, "top_k": top_k}, config, client_recorder)
            result = lookup_knowledge(query, index=answering, config=config, category=category, top_k=top_k,
                                      recorder=client_recorder)
        except ValueError as exc:  # the library's one-line message, as an is_error result
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
        output = structured_output(result)
        return CallToolResult(content=[TextContent(type="text", text=render_text(output))],
                              structured_content=dict(output))

    tool = Tool.from_function(lookup, name=TOOL_NAME, description=TOOL_DESCRIPTION,
                              annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    tool = tool.model_copy(update={"parameters": input_schema(definition)})
    server = MCPServer(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, tools=[tool],
                       token_verifier=auth.token_verifier if auth else None, auth=auth.auth if auth else None)

    def read_entry(source: str) -> str:
        try:
            return render_entry(find_entry(current_index(index).kb, source))
        except SourceRefused as exc:
            raise ResourceNotFoundError(str(exc)) from None

    server.resource(URI_TEMPLATE, name="knowledge-entry", mime_type="text/markdown",
                    description="A whole knowledge-base entry by its source (percent-encoded), as Markdown",
                    security=ResourceSecurity(exempt_params={"source"}))(read_entry)  # find_entry checks it
    return server


def serve(index: KnowledgeIndex | LiveIndex, config: LookupConfig, recorder: Recorder | None, *,
          http: HttpSettings | None = None, auth: ServerAuth | None = None) -> None:
    """Serve over stdio until the client disconnects, or over HTTP as `http` says (with `auth`: its verifier
    and Host/Origin checks) until the process is stopped; then flush the trace store."""
    if http is not None and auth is None:
        from retrieval.agent.mcp_auth import server_auth

        auth = server_auth(http)
    server = build_server(index, config, recorder, auth)
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        if http is not None and auth is not None:
            server.run("streamable-http", host=http.host, port=http.port,
                       transport_security=auth.transport_security)
        else:
            server.run("stdio")
    finally:
        signal.signal(signal.SIGTERM, previous)
        close_recorder(recorder)


def close_recorder(recorder: Recorder | None) -> None:
    """Flush and close the trace store when it can be (a buffered store must not lose rows on shutdown)."""
    for name in ("flush", "close"):
        method = getattr(recorder, name, None)
        if callable(method):
            method()


def _client_info(ctx: Context | None) -> tuple[str | None, str | None]:
    """The client's name and version from the MCP handshake, when the protocol gave them."""
    try:
        params = ctx.session.client_params if ctx is not None else None
    except ValueError:  # no request context (a direct call outside a session)
        return None, None
    info = params.client_info if params is not None else None
    return (info.name, info.version) if info is not None else (None, None)


def _subject() -> str | None:
    """The subject the SDK's bearer middleware admitted this request's caller as (None without authentication:
    stdio, or HTTP on a loopback host without it); the token itself is never read here."""
    access = get_access_token()
    return access.subject if access is not None else None


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    sys.exit(128 + signum)  # unwinds through serve()'s finally, which flushes the trace store
