"""The app in a real browser: `streamlit run app.py` on a free port, driven by Debian's Chromium via Playwright.

One flow on the sample knowledge base: a lookup, a comparison with a labelled sweep, a trace row click,
a CSV download checked row by row, and a screenshot of each page (into docs/screenshots only when
UPDATE_SCREENSHOTS=1, else under tmp_path). Waits are on the `stApp` element's
`data-test-script-state=notRunning` and on expected elements, never on fixed sleeps.
"""

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

import pandas as pd
import pytest

from retrieval import TraceStore

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TIMEOUT_MS = 60_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM} "
                       "(apt-get install chromium; .ci/run installs it)"),
]
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
    """The app's environment in a browser test: its trace file and index cache under `root`, and the
    sample knowledge base, as `streamlit run app.py` opens it."""
    env = {**os.environ, "LOOKUP_KNOWLEDGE_TRACES": str(root / "traces.duckdb"),
           "LOOKUP_KNOWLEDGE_CACHE": str(root / "cache")}
    env.pop("LOOKUP_KNOWLEDGE_KB", None)
    return env


@contextmanager
def browser_tab(viewport: dict[str, int]) -> Iterator:
    """One Chromium tab of `viewport` size that accepts downloads, closed with its browser afterwards."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=viewport, accept_downloads=True)
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


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    root = tmp_path_factory.mktemp("browser")
    with running_app(app_env(root), root / "streamlit.log") as url:
        yield {"url": url, "traces": root / "traces.duckdb", "root": root}


@pytest.fixture(scope="module")
def page(app_server: dict) -> Iterator:
    with browser_tab({"width": 1500, "height": 1100}) as tab:
        yield tab


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshot_folder(tmp_path_factory, "screenshots")


def wait_for_app(page) -> None:
    """Streamlit e2e style: connected, and the script run finished."""
    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']")
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']")


def visible(page, locator) -> None:
    """Wait for an element a rerun produces, then for the run to finish."""
    sync_api.expect(locator).to_be_visible(timeout=TIMEOUT_MS)
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


def test_lookup_compare_traces_and_export_in_a_real_browser(app_server, page, shots):
    page.goto(app_server["url"])
    wait_for_app(page)
    visible(page, page.get_by_test_id("stHeading").filter(has_text="Lookup").first)

    page.locator(".st-key-lookup_query input").fill("rotate an API token")
    page.locator(".st-key-lookup_query input").press("Enter")
    visible(page, page.get_by_test_id("stMetric").filter(has_text="Final blocks"))
    sync_api.expect(page.get_by_text("Filter decision:")).to_be_visible()
    sync_api.expect(page.get_by_text("api/api-tokens.md").first).to_be_visible()
    screenshot(page, shots, "lookup")

    open_page(page, "Compare settings")
    page.locator(".st-key-cfg_l0_filter label").click()  # A: no L0 filter; B keeps the default
    wait_for_app(page)
    page.locator(".st-key-cmp_query input").fill("download last month's invoice")
    page.locator(".st-key-cmp_run button").click()
    visible(page, page.get_by_text("What changed (A → B)"))
    screenshot(page, shots, "compare")

    page.get_by_role("tab", name="Labelled set").click()
    page.locator(".st-key-eval_mode").get_by_text("Sweep").click()
    visible(page, page.locator(".st-key-eval_grid textarea"))
    page.locator(".st-key-eval_start button").click()
    visible(page, page.get_by_text("Stored 2 run(s)"))
    pairs = page.locator(".st-key-eval_pairs [data-testid='stDataFrameResizable']")
    visible(page, pairs)
    click_first_row(page, pairs)
    visible(page, page.get_by_test_id("stHeading").filter(has_text="Run B:").first)
    screenshot(page, shots, "compare-runs")

    open_page(page, "Traces")
    page.locator(".st-key-tr_run").click()
    page.get_by_role("option", name="(interactive lookups)").click()
    visible(page, page.get_by_text("3 trace(s)"))
    click_first_row(page, page.locator(".st-key-tr_table [data-testid='stDataFrameResizable']"))
    opened = page.get_by_text("Trace in full")
    visible(page, opened)
    sync_api.expect(opened).to_contain_text("download last month's invoice")  # the newest row, clicked
    screenshot(page, shots, "traces")

    open_page(page, "Export")
    button = page.locator(".st-key-ex_download button")
    visible(page, button)
    with page.expect_download() as download:
        button.click()
    saved = app_server["root"] / "traces.csv"
    download.value.save_as(saved)
    rows = pd.read_csv(saved)
    stored = TraceStore(app_server["traces"]).query("SELECT id FROM tool_invocation WHERE run_id IS NULL")
    assert sorted(rows["id"]) == sorted(stored["id"])  # exactly the Traces page's filtered rows
    assert sorted(rows["query"]) == ["download last month's invoice"] * 2 + ["rotate an API token"]
    assert set(rows["l1_status"]) == {"ok"}
    screenshot(page, shots, "export")
