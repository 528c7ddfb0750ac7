"""Driving the app in a real browser: `streamlit run app.py` on a free port, Debian's Chromium via Playwright, and
the waits and screenshots of tests/test_browser.py and tests/test_browser_flows.py. Importing it skips the
importing test module when playwright (the dev extra) is not installed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TIMEOUT_MS = 60_000

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the dev extra) is not installed")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, server: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    """Poll the server's health endpoint until it answers (or the process dies, naming its log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().decode().strip() == "ok":
                    return
        except OSError:
            time.sleep(0.1)  # polling interval of the health check, not a wait on the page
    raise RuntimeError(f"streamlit did not answer on {url} within {timeout}s:\n{log.read_text()}")


@contextmanager
def running_app(env: dict[str, str], log: Path) -> Iterator[str]:
    """`streamlit run app.py` on a free port with `env`, its output in `log`; yields the URL once healthy."""
    port = _free_port()
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                   "--server.headless", "true"], cwd=ROOT, env=env, stdout=out,
                                  stderr=subprocess.STDOUT)
    url = f"http://localhost:{port}"
    try:
        _wait_healthy(url, server, log)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def app_env(root: Path) -> dict[str, str]:
    """The app's environment in a browser test: its trace file under `root`, the session's index cache folder
    (tests/conftest.py sets it for the whole session) and the sample knowledge base, as `streamlit run app.py`
    opens it."""
    env = {**os.environ, "LOOKUP_KNOWLEDGE_TRACES": str(root / "traces.duckdb")}
    env.pop("LOOKUP_KNOWLEDGE_KB", None)
    return env


@contextmanager
def browser_tab(viewport: dict[str, int], timezone_id: str | None = None) -> Iterator:
    """One Chromium tab of `viewport` size that accepts downloads (its clock in `timezone_id`, else the
    machine's), closed with its browser afterwards."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=viewport, accept_downloads=True, timezone_id=timezone_id)
        tab = context.new_page()
        tab.set_default_timeout(TIMEOUT_MS)
        try:
            yield tab
        finally:
            context.close()
            browser.close()


def screenshot_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """docs/screenshots when UPDATE_SCREENSHOTS=1 (refreshing docs/app.md's), else a scratch folder."""
    target = ROOT / "docs" / "screenshots" if os.environ.get("UPDATE_SCREENSHOTS") == "1" \
        else tmp_path_factory.mktemp(name)
    target.mkdir(parents=True, exist_ok=True)
    return target


def wait_for_app(page) -> None:
    """Streamlit e2e style: connected, and the script run finished."""
    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']")
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']")


def visible(page, locator) -> None:
    """Wait for an element a rerun produces, then for the run to finish."""
    sync_api.expect(locator).to_be_visible(timeout=TIMEOUT_MS)
    wait_for_app(page)


def open_folder(page, folder: str) -> None:
    """Sidebar: Folder path, then `folder` as the knowledge base (Enter), and the run it starts finished."""
    page.locator(".st-key-kb_source").get_by_text("Folder path").click()
    wait_for_app(page)
    page.locator(".st-key-kb_path input").fill(folder)
    page.locator(".st-key-kb_path input").press("Enter")
    wait_for_app(page)


def open_page(page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
    visible(page, page.get_by_test_id("stHeading").filter(has_text=title).first)


def screenshot(page, shots: Path, name: str) -> None:
    """The whole page: Streamlit scrolls inside stMain, so the viewport grows to the content first."""
    page.mouse.move(0, 0)  # no hover tooltips in the picture
    size = page.viewport_size
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], min(height, 3000))})
    page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 0)")
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    path = shots / f"{name}.png"
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    assert path.stat().st_size > 10_000


def click_first_row(page, grid) -> None:
    """Select the first data row by its row marker (the grid is a canvas: click by position)."""
    visible(page, grid)
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)
