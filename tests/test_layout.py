"""The layout holds: retrieval's top level is its entry points, no module is over 500 lines, no import cycle
(TYPE_CHECKING and function-level imports included), no underscore name imported from another module,
eval, appui, bench and the app use only the public API, and no test module defines a fixture."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("retrieval", "eval", "appui")
CONSUMERS = ("eval", "appui", "bench")
TOP_LEVEL = {"__init__", "__main__", "cli", "config", "paths"}  # retrieval's public entry points
PUBLIC_MODULES = {"retrieval.config", "retrieval.paths"}
# Modules are split by job, not by size: one job may run to 500 lines, and a module that would exist only to
# keep another under this ceiling is a sign the job is too big, not a reason to split it (docs/architecture.md).
MAX_LINES = 500


def _python_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[tuple[str, list[str], int]]:
    """(module, imported names, level) of every import statement in `path`, wherever it stands."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], 0
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            yield module, [a.name for a in node.names], node.level


def _known_modules() -> set[str]:
    return {_module_name(p) for p in _python_files(*PACKAGES)}


def _edges() -> dict[str, set[str]]:
    known = _known_modules()
    graph: dict[str, set[str]] = {}
    for path in _python_files(*PACKAGES):
        targets = graph.setdefault(_module_name(path), set())
        for module, names, _ in _imports(path):
            for name in names or [""]:
                submodule = f"{module}.{name}"
                if submodule in known:
                    targets.add(submodule)
                elif module in known:
                    targets.add(module)
    return graph


def _fixtures(path: Path) -> list[str]:
    """The functions of `path` decorated with pytest.fixture (bare, called, or imported as `fixture`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
            if any(ast.unparse(d) in ("pytest.fixture", "fixture") for d in decorators):
                found.append(node.name)
    return found


def test_retrieval_top_level_holds_only_the_public_entry_points():
    modules = {p.stem for p in (ROOT / "retrieval").glob("*.py")}
    assert modules <= TOP_LEVEL, f"move {sorted(modules - TOP_LEVEL)} into a subpackage"


@pytest.mark.parametrize("folder", [*PACKAGES, "bench"])
def test_no_module_is_over_500_lines(folder):
    long = {str(p.relative_to(ROOT)): n for p in _python_files(folder)
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"these modules hold more than one job's worth (lines): {long}; split them by job"


def test_no_import_cycle():
    graph = _edges()
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return [*path[path.index(target):], target] if target in path else [module, target]
            if target not in state:
                cycle = visit(target, [*path, target])
                if cycle:
                    return cycle
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module, [module])
            assert cycle is None, f"import cycle: {' -> '.join(cycle)}"


# third-party private names used on purpose, each with where and why
CHOSEN_PRIVATE = {("retrieval/l1/postings.py", "scipy.sparse", "_sparsetools"):
                  "csc_matvec adds a column into a dense sum in place, which no public scipy call does",
                  ("tests/test_postings_sum.py", "scipy.sparse", "_sparsetools"):
                  "a scipy whose csc_matvec changed, simulated"}


def test_no_underscore_name_is_imported_from_another_module():
    private = [(str(p.relative_to(ROOT)), module, name)
               for p in [*_python_files(*PACKAGES, "bench", "tests"), ROOT / "app.py"]
               for module, names, _ in _imports(p)
               for name in names if name.startswith("_") and not name.startswith("__")]
    private = [found for found in private if found not in CHOSEN_PRIVATE]
    assert not private, f"make these public, or keep them in their module: {private}"


def test_consumers_import_only_the_public_api():
    known = _known_modules()
    allowed = {m for m in known if m.startswith("retrieval") and (ROOT / m.replace(".", "/") / "__init__.py").is_file()}
    allowed |= PUBLIC_MODULES
    offending = []
    for path in [*_python_files(*CONSUMERS), ROOT / "app.py"]:
        for module, names, _ in _imports(path):
            if not module.startswith("retrieval"):
                continue
            used = [module] if not names else [f"{module}.{n}" if f"{module}.{n}" in known else module for n in names]
            offending += [(str(path.relative_to(ROOT)), m) for m in used if m not in allowed]
    assert not offending, f"import these from `retrieval` or a subpackage's __init__: {offending}"


def test_every_subpackage_api_name_resolves():
    import importlib

    for package in sorted(m for m in _known_modules() if m.startswith("retrieval")
                          and (ROOT / m.replace(".", "/") / "__init__.py").is_file()):
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            assert getattr(module, name) is not None, f"{package}.{name}"


def test_no_test_module_defines_a_fixture():
    in_tests = {p.name: names for p in sorted((ROOT / "tests").glob("test_*.py")) if (names := _fixtures(p))}
    assert not in_tests, f"move these fixtures to tests/conftest.py or a plugin in tests/fixtures/: {in_tests}"
    assert any(_fixtures(p) for p in (ROOT / "tests" / "fixtures").glob("*.py"))  # the check does find fixtures
