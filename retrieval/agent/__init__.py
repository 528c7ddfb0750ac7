"""The agent-facing tool: `LookupTool`, its tool definition, and the MCP server."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "tool": "LookupTool tool_definition",
})
