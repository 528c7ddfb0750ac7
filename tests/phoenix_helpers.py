"""A real Phoenix server for the end-to-end test: `phoenix serve` on 127.0.0.1 with a temporary working dir and
free ports, and its REST API to read spans back. Phoenix is found at $LOOKUP_KNOWLEDGE_PHOENIX (its `phoenix`
executable), on the PATH, or in the virtual environment .ci/run installs it into (it is too heavy for [dev])."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

CI_VENV = Path.home() / ".cache" / "lookup-knowledge-ci" / "phoenix"  # where .ci/run installs arize-phoenix
START_TIMEOUT = 180.0
T = TypeVar("T")


@dataclass(frozen=True)
class Phoenix:
    """A running Phoenix: its base URL (UI, REST API and OTLP/HTTP at /v1/traces) and its log file."""

    url: str
    log: Path

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span of `project`, through the REST API (GET /v1/projects/{project}/spans, paginated)."""
        found: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = "limit=1000" + (f"&cursor={cursor}" if cursor else "")
            with urllib.request.urlopen(f"{self.url}/v1/projects/{project}/spans?{query}", timeout=30) as answer:
                page = json.load(answer)
            found += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return found


def phoenix_executable() -> str | None:
    """The `phoenix` command, or None where Phoenix is not installed."""
    named = os.environ.get("LOOKUP_KNOWLEDGE_PHOENIX")
    if named:
        return named
    return shutil.which("phoenix") or (str(CI_VENV / "bin" / "phoenix") if (CI_VENV / "bin" / "phoenix").is_file()
                                       else None)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def phoenix_server(executable: str, folder: Path) -> Iterator[Phoenix]:
    """`phoenix serve` on 127.0.0.1 (working dir `folder`, free ports, no telemetry), up until the block ends."""
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))},
           "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = folder / "phoenix.log"
    with log.open("wb") as out:
        process = subprocess.Popen([executable, "serve"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    server = Phoenix(f"http://127.0.0.1:{port}", log)
    try:
        wait_for(lambda: _healthy(server.url) or process.poll() is not None, START_TIMEOUT,
                 f"Phoenix did not answer on {server.url} within {START_TIMEOUT:g} s (log: {log})")
        if process.poll() is not None:
            raise RuntimeError(f"phoenix serve exited with {process.returncode}: {log.read_text()[-2000:]}")
        yield server
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def wait_for(check: Callable[[], T], timeout: float, message: str) -> T:
    """Poll `check` every 0.25 s until it returns something true; AssertionError with `message` at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(message)
        time.sleep(0.25)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False
