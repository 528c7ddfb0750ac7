"""The agent-facing tool: `LookupTool`, its tool definition, and the MCP server."""

from __future__ import annotations

from retrieval import lazy_exports

_EXPORTS = {
    "LookupTool": "tool",
    "tool_definition": "tool",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
