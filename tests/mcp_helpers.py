"""An MCP client on `python -m retrieval mcp` over stdio, for tests/test_mcp_server.py, tests/test_trace_table.py
and the examples of docs/mcp.md (tests/doc_examples_mcp.py).
It needs the mcp package: import it after `pytest.importorskip("mcp")`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from retrieval.lookup.orchestrator import TOOL_NAME

ROOT = Path(__file__).resolve().parents[1]
CLIENT_NAME = "pytest-mcp-client"


@dataclass
class Client:
    """A synchronous handle on an MCP client session that runs in a blocking portal's event loop."""

    portal: BlockingPortal
    session: ClientSession
    traces: Path

    def run(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.portal.call(partial(method, *args, **kwargs))

    def lookup(self, **arguments: Any) -> types.CallToolResult:
        return self.run(self.session.call_tool, TOOL_NAME, arguments)


@contextmanager
def mcp_server(folder: Path, *flags: str, env: dict[str, str] | None = None,
               client_name: str = CLIENT_NAME) -> Iterator[Client]:
    """Start `python -m retrieval mcp` on the sample base over stdio (with `env` added to its environment),
    the client introducing itself as `client_name`; leaving closes stdin and it exits."""
    traces = folder / "traces.duckdb"
    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT),
                                   args=["-m", "retrieval", "mcp", "--traces", str(traces), *flags],
                                   env={"LOOKUP_KNOWLEDGE_CACHE": str(folder.parent / "index-cache"), **(env or {})})
    info = types.Implementation(name=client_name, version="1.0")
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(stdio_client(params)) as streams, \
            portal.wrap_async_context_manager(ClientSession(*streams, client_info=info)) as session:
        portal.call(session.initialize)
        yield Client(portal, session, traces)
