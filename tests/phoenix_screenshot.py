"""The screenshot of docs/otel.md: a lookup through the MCP server, exported to a real Phoenix, shown in Phoenix's
trace view. `python -m tests.phoenix_screenshot docs/screenshots/otel-phoenix-trace.png` (needs Phoenix, see
tests/phoenix_helpers.py, the mcp package, Playwright and /usr/bin/chromium)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import sync_playwright

from tests.browser_helpers import CHROMIUM, CHROMIUM_ARGS
from tests.mcp_helpers import mcp_server
from tests.phoenix_helpers import phoenix_executable, phoenix_server, wait_for

PROJECT = "lookup-knowledge"
QUERY = "how do I rotate an API token?"


def main(out: Path) -> None:
    executable = phoenix_executable()
    if executable is None:
        raise SystemExit("Phoenix is not installed; see tests/phoenix_helpers.py")
    with tempfile.TemporaryDirectory() as scratch, phoenix_server(executable, Path(scratch)) as phoenix:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url, "OTEL_RESOURCE_ATTRIBUTES":
               f"openinference.project.name={PROJECT}"}
        with mcp_server(Path(scratch), env=env) as client:
            invocation = client.lookup(query=QUERY, top_k=3).structured_content["invocation_id"]
        root = wait_for(lambda: next((s for s in phoenix.spans(PROJECT)
                                      if s["attributes"].get("lookup.invocation_id") == invocation), None),
                        30, "the lookup's span never reached Phoenix")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 950})
            page.goto(f"{phoenix.url}/projects", wait_until="networkidle")
            page.get_by_text(PROJECT, exact=True).first.click()
            page.wait_for_load_state("networkidle")
            trace_id = root["context"]["trace_id"]
            spans_page = page.url.split("?")[0].rstrip("/")  # …/projects/{id}/spans
            page.goto(f"{spans_page}/{trace_id}?selectedSpanNodeId={quote(root['id'])}", wait_until="networkidle")
            page.wait_for_timeout(1500)
            page.screenshot(path=str(out))
            browser.close()
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots/otel-phoenix-trace.png"))
