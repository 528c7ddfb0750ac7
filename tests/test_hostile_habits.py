"""Code habits behind the hostile-input fixes: ruff's BLE rule, one broad catch, `guarded` narrowed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import tomllib

from appui.widgets import state

ROOT = Path(__file__).resolve().parents[1]
BROAD = {"Exception", "BaseException"}


def _broad_handlers() -> list[str]:
    """`path:line` of every bare `except:` or `except Exception/BaseException` in the project's code."""
    found = []
    for path in sorted(ROOT.glob("*.py")) + sorted(p for d in ("retrieval", "eval", "appui", "bench")
                                                   for p in (ROOT / d).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ExceptHandler):
                continue
            names = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            if node.type is None or any(isinstance(n, ast.Name) and n.id in BROAD for n in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_ruff_selects_the_blind_except_rule():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "BLE" in config["tool"]["ruff"]["lint"]["select"]


def test_the_only_broad_catches_are_around_l1_and_the_embedder_load():
    handlers = sorted(_broad_handlers())
    assert len(handlers) == 2, handlers
    assert handlers[0].startswith("retrieval/l1/embedder.py:"), handlers
    assert handlers[1].startswith("retrieval/lookup/guard.py:"), handlers


def test_guarded_turns_a_known_failure_into_none():
    def refuse():
        raise ValueError("bad input")

    assert state.guarded(refuse) is None


def test_guarded_lets_a_key_error_through():
    with pytest.raises(KeyError):
        state.guarded(lambda: {}["missing"])
