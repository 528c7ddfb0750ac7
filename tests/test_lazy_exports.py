"""retrieval.lazy_exports refuses to export a name its own submodule holds: once that submodule is imported,
Python sets the package attribute to the module, and callers got "'module' object is not callable" in the
app (retrieval.traces' file_state, and prune before it) depending on what was imported first."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _package(root: Path, exports: str) -> None:
    folder = root / "pkgundertest"
    folder.mkdir()
    (folder / "thing.py").write_text("def thing():\n    return 1\n\ndef other():\n    return 2\n")
    (folder / "__init__.py").write_text(textwrap.dedent(f"""
        from retrieval import lazy_exports
        __all__, __getattr__, __dir__ = lazy_exports(__name__, {{"thing": "{exports}"}})
    """))


def _import(root: Path) -> subprocess.CompletedProcess:
    repo = Path(__file__).resolve().parents[1]
    return subprocess.run([sys.executable, "-c", "import pkgundertest.thing; from pkgundertest import *"],
                          capture_output=True, text=True, cwd=root, timeout=60,
                          env={"PYTHONPATH": f"{root}:{repo}", "PATH": ""})


def test_a_lazy_export_named_after_its_own_submodule_is_refused_at_import(tmp_path):
    _package(tmp_path, "thing other")
    done = _import(tmp_path)
    assert done.returncode != 0
    assert "pkgundertest exports thing under the name of its own submodule" in done.stderr


def test_the_same_function_under_another_name_imports(tmp_path):
    _package(tmp_path, "make_thing=thing other")
    done = _import(tmp_path)
    assert done.returncode == 0, done.stderr
