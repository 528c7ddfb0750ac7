"""Shared fixtures: the tiny knowledge base, its index, and a trace store under tmp_path; the fixtures of each
area of the suite come from the plugin modules in tests/fixtures/ (no test module defines a fixture)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The suite runs from a checkout without `pip install -e .` (with the dependencies installed): the project's
# packages are imported from this checkout, here and in every child process a test starts.
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])

from retrieval import TraceStore, build_index, load_knowledge_base  # noqa: E402
from tests.kb_fixture import write_kb  # noqa: E402

pytest_plugins = [
    "tests.fixtures.annotation_fixtures",
    "tests.fixtures.app_fixtures",
    "tests.fixtures.cache_fixtures",
    "tests.fixtures.cli_fixtures",
    "tests.fixtures.browser_fixtures",
    "tests.fixtures.eval_fixtures",
    "tests.fixtures.explain_fixtures",
    "tests.fixtures.facet_fixtures",
    "tests.fixtures.gaps_fixtures",
    "tests.fixtures.holes_fixtures",
    "tests.fixtures.incremental_fixtures",
    "tests.fixtures.hostile_fixtures",
    "tests.fixtures.index_fixtures",
    "tests.fixtures.leaderboard_fixtures",
    "tests.fixtures.mcp_fixtures",
    "tests.fixtures.mcp_http_fixtures",
    "tests.fixtures.model_fixtures",
    "tests.fixtures.otel_fixtures",
    "tests.fixtures.parallel_fixtures",
    "tests.fixtures.signin_fixtures",
    "tests.fixtures.tiny_models",
    "tests.fixtures.trec_fixtures",
    "tests.fixtures.trace_fixtures",
    "tests.fixtures.trends_fixtures",
    "tests.fixtures.trendsui_fixtures",
]

SHARED_DATA = Path(os.environ.get("LOOKUP_KNOWLEDGE_SHARED_DATA",
                                  Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A tiny knowledge base and an empty trace file under tmp_path, picked up through the app's env vars."""
    kb = write_kb(tmp_path / "kb")
    traces = tmp_path / "traces.duckdb"
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_KB", str(kb))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(traces))
    return {"kb": kb, "traces": traces, "root": tmp_path}


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Index caches of tests go to a temporary folder, never to the user's ~/.cache. Session-wide, so it is set
    before any module's or session's fixture runs an evaluation (a function-scoped one came after those, and
    their indexes went to ~/.cache)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOOKUP_KNOWLEDGE_CACHE", str(tmp_path_factory.getbasetemp() / "index-cache"))
        yield


@pytest.fixture(scope="module")
def cache_a_module_fixture_sees() -> str | None:
    """The index cache a module-scoped fixture builds in (tests/test_suite_isolation.py)."""
    return os.environ.get("LOOKUP_KNOWLEDGE_CACHE")


@pytest.fixture(scope="session")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_kb(tmp_path_factory.mktemp("kb"))


@pytest.fixture(scope="session")
def index(kb_dir: Path):
    return build_index(load_knowledge_base(kb_dir), svd_dims=64)


@pytest.fixture
def store(tmp_path: Path) -> TraceStore:
    return TraceStore(tmp_path / "traces.duckdb")


def stored_row(store: TraceStore, invocation_id: str) -> dict:
    """The `tool_invocation` row of one call, read back from DuckDB, with JSON columns decoded."""
    frame = store.query("SELECT * FROM tool_invocation WHERE id = ?", [invocation_id])
    if len(frame) != 1:
        raise AssertionError(f"expected one row for {invocation_id}, found {len(frame)}")
    row = frame.iloc[0].to_dict()
    for name in ("arguments", "config", "retrieval_details"):
        row[name] = json.loads(row[name])
    return row


def shared_path(*parts: str) -> Path:
    """A path in ../shared/data, or skip the test with the reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not found at {path} (set LOOKUP_KNOWLEDGE_SHARED_DATA to its folder)")
    return path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser flows are slow tests too, so `-m 'not slow'` leaves them out."""
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.slow)


@contextmanager
def held_trace_file(path: Path) -> Iterator[subprocess.Popen]:
    """Another process holding `path` read-write (DuckDB's lock) until the block ends; yields it (its pid)."""
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(path)!r}); "
                               "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        if holder.stdout.readline().strip() != "ready":
            raise AssertionError(f"the process meant to hold {path} did not start")
        yield holder
    finally:
        holder.kill()
        holder.wait()


def settle_trace_file(path: Path, timeout: float = 30.0) -> None:
    """Fold `path`'s live parts and log into the file now and wait for its keeper to be gone, so the file stays
    as it is (a test that checksums it or lists the files beside it)."""
    import time

    from retrieval.traces import keeper
    from retrieval.traces.fold import pack

    if pack(path, timeout=timeout) is None:
        raise AssertionError(f"{path} stayed locked for {timeout:.0f} s")
    deadline = time.monotonic() + timeout
    for child in keeper.started_here(path):  # started, maybe not yet holding (and making) its lock file
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the keeper of {path} did not exit within {timeout:.0f} s") from None
    while keeper.running(path):
        if time.monotonic() > deadline:
            raise AssertionError(f"the keeper of {path} did not exit within {timeout:.0f} s")
        time.sleep(0.05)
