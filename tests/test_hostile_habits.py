"""Code habits behind the hostile-input fixes: ruff's BLE rule, one broad catch, `guarded` narrowed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import tomllib

from appui.widgets import state

ROOT = Path(__file__).resolve().parents[1]
BROAD = {"Exception", "BaseException"}


def _broad_handlers() -> list[tuple[str, bool, str]]:
    """(`path:line`, re-raises, the line's text) of every bare `except:` or `except Exception/BaseException` in
    the project's code."""
    found = []
    for path in sorted(ROOT.glob("*.py")) + sorted(p for d in ("retrieval", "eval", "appui", "bench")
                                                   for p in (ROOT / d).rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.ExceptHandler):
                continue
            names = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            if node.type is None or any(isinstance(n, ast.Name) and n.id in BROAD for n in names):
                reraises = any(isinstance(n, ast.Raise) for n in ast.walk(node))
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", reraises, lines[node.lineno - 1]))
    return found


# The catches that swallow: each is a boundary where any failure must be contained, and says why on its line.
SWALLOWING = {
    "retrieval/l1/embedder.py",  # a plug-in embedder that fails to load: L1 goes on without the static part
    "retrieval/l1/search.py",  # a dense model that fails on the query: the search goes on without its dense part
    "retrieval/lookup/model_parts.py",  # a plugged-in model that fails to load: the lookup goes on without it
    "retrieval/lookup/guard.py",  # any L1 failure falls back to L0 evidence, recorded with its cause
    "retrieval/lookup/recorders.py",  # one recorder's failure must not skip the others (raised after them)
    "retrieval/otel/export.py",  # an exporter's bug must not stop the batch thread
    "retrieval/otel/recorder.py",  # a trace must never fail the lookup it describes
}


def test_ruff_selects_the_blind_except_rule():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "BLE" in config["tool"]["ruff"]["lint"]["select"]


def test_every_broad_catch_reraises_or_is_a_named_boundary_that_says_why():
    handlers = _broad_handlers()
    swallowing = {where.rsplit(":", 1)[0] for where, reraises, _ in handlers if not reraises}
    assert swallowing <= SWALLOWING, sorted(swallowing - SWALLOWING)
    assert {"retrieval/l1/embedder.py", "retrieval/lookup/guard.py"} <= swallowing, handlers
    for where, reraises, line in handlers:
        assert reraises or "noqa: BLE001" in line, f"{where}: a swallowing catch must say why ({line.strip()})"


def test_guarded_turns_a_known_failure_into_none():
    def refuse():
        raise ValueError("bad input")

    assert state.guarded(refuse) is None


def test_guarded_lets_a_key_error_through():
    with pytest.raises(KeyError):
        state.guarded(lambda: {}["missing"])
