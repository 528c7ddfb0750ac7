"""The lookup CLI: JSON on stdout, one-line errors, every config field a flag, documented examples run."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from retrieval import MISSING_STAGES as STAGES
from retrieval import LookupConfig
from retrieval.cli import build_parser, config_flag, main

ROOT = Path(__file__).resolve().parents[1]
RESULT_KEYS = {"query", "primary", "supplement", "evidence_blocks", "relevance", "retrieval_layer",
               "retrieval_details"}


DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _documented_commands(pages: list[Path]) -> list[str]:
    """Every `python -m retrieval` line of a ```sh block in `pages`, each once."""
    blocks = [block for page in pages for block in re.findall(r"```sh\n(.*?)```", page.read_text(), re.S)]
    lines = [line for block in blocks for line in block.splitlines() if line.startswith("python -m retrieval")]
    return list(dict.fromkeys(lines))


def test_the_readme_shows_runnable_commands():
    assert _documented_commands([ROOT / "README.md"])


def test_lookup_prints_the_result_json(kb_dir, tmp_path, capsys):
    code = main(["lookup", "invoice", "--kb", str(kb_dir), "--traces", str(tmp_path / "t.duckdb")])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0
    assert set(payload) >= RESULT_KEYS
    assert payload["primary"]["source"] == "billing/invoices.md"


@pytest.mark.parametrize("args, message", [
    (["lookup", "  "], "query is empty"),
    (["lookup", "x", "--kb", "/no/such/folder"], "knowledge base not found"),
    (["lookup", "x", "--top-k", "0"], "top_k must be"),
    (["lookup", "x", "--exclude", "billing/*"], "'billing/*' is a glob pattern"),
    (["lookup", "x", "--exclude", "../elsewhere"], "contains '..'"),
])
def test_bad_input_exits_non_zero_with_one_line(args, message, tmp_path, capsys):
    code = main([*args, "--traces", str(tmp_path / "t.duckdb")])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.startswith("error: ") and err.count("\n") == 1


def test_unreadable_trace_file_exits_non_zero(kb_dir, tmp_path, capsys):
    bad = tmp_path / "bad.duckdb"
    bad.write_text("garbage")
    assert main(["lookup", "invoice", "--kb", str(kb_dir), "--traces", str(bad)]) == 2
    assert "cannot open trace file" in capsys.readouterr().err


def test_every_config_field_has_a_flag():
    help_text = build_parser()._subparsers._group_actions[0].choices["lookup"].format_help()
    for f in fields(LookupConfig):
        assert config_flag(f.name) in help_text


def test_every_config_field_is_documented_in_the_cli_reference():
    reference = (ROOT / "docs" / "cli.md").read_text()
    for f in fields(LookupConfig):
        assert f"`{f.name}`" in reference and f"`{config_flag(f.name)}`" in reference


def test_flags_reach_the_config(kb_dir, tmp_path, capsys):
    main(["lookup", "invoice", "--kb", str(kb_dir), "--no-trace", "--no-l1", "--l1-min-score", "0.4"])
    config = json.loads(capsys.readouterr().out)
    assert config["retrieval_details"]["l1"]["status"] == "disabled"


def test_l1_min_score_flag_drops_weaker_candidates(kb_dir, capsys):
    main(["lookup", "invoice", "--kb", str(kb_dir), "--no-trace", "--l1-min-score", "0"])
    lenient = json.loads(capsys.readouterr().out)["retrieval_details"]["l1"]
    main(["lookup", "invoice", "--kb", str(kb_dir), "--no-trace", "--l1-min-score", "0.99"])
    strict = json.loads(capsys.readouterr().out)["retrieval_details"]["l1"]
    assert lenient["dropped_below_min_score"] == 0 and lenient["candidate_count"] > 0
    assert strict["dropped_below_min_score"] > 0 and strict["candidate_count"] < lenient["candidate_count"]


def test_exclude_leaves_the_folder_out_of_the_lookup_and_the_index(kb_dir, tmp_path, capsys):
    def sources(*extra: str) -> list[str]:
        main(["lookup", "invoice", "--kb", str(kb_dir), "--no-trace", *extra])
        return [block["source"] for block in json.loads(capsys.readouterr().out)["evidence_blocks"]]

    assert sources()[0].startswith("billing/")
    assert not [source for source in sources("--exclude", "billing") if source.startswith("billing/")]
    main(["index", "--kb", str(kb_dir), "--exclude", "billing/"])
    summary = json.loads(capsys.readouterr().out)
    assert summary["excluded_paths"] == ["billing"]
    main(["index", "--kb", str(kb_dir)])
    assert json.loads(capsys.readouterr().out)["entries"] > summary["entries"]


def test_second_run_loads_the_index_from_cache(kb_dir, capsys):
    main(["index", "--kb", str(kb_dir), "--no-cache"])
    assert json.loads(capsys.readouterr().out)["from_cache"] is False
    main(["index", "--kb", str(kb_dir)])
    capsys.readouterr()
    main(["index", "--kb", str(kb_dir)])
    assert json.loads(capsys.readouterr().out)["from_cache"] is True


@pytest.mark.parametrize("command", _documented_commands(DOC_PAGES))
def test_documented_examples_run_as_written(command, tmp_path):
    argv = shlex.split(command)
    (tmp_path / "data").symlink_to(ROOT / "data")  # run in a scratch folder: traces land there, not in the repo
    env = {**os.environ, "LOOKUP_KNOWLEDGE_TRACES": str(tmp_path / "t.duckdb")}
    completed = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True, text=True,
                               timeout=120, env=env)
    assert completed.returncode == 0, completed.stderr
    payload = json.loads(completed.stdout)
    if argv[3] == "lookup":
        assert set(payload) >= RESULT_KEYS and payload["evidence_blocks"]
    elif argv[3] == "explain":
        assert payload["reproduced"] and all(s["stage"] in STAGES for s in payload["sources"])
    elif argv[3] == "tool-definition":
        assert payload["name"] == "lookup_knowledge" and payload["parameters"]["required"] == ["query"]
    else:
        assert payload["entries"] >= 30 and not payload["skipped"]


def test_index_cache_keeps_only_the_newest_files(kb_dir, tmp_path, monkeypatch):
    from retrieval.index import build as index_module
    from retrieval.index import cache as index_cache

    monkeypatch.setattr(index_cache, "KEEP_CACHED", 2)
    for dims in (8, 16, 32):
        index_module.open_index(kb_dir, svd_dims=dims, cache_dir=tmp_path)
    kept = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
    assert len(kept) == 2
    assert {json.loads((p / "manifest.json").read_text())["index_config"]["svd_dims"] for p in kept} == {16, 32}


def test_boolean_flags_say_what_they_turn_off():
    """`--no-l1` turns L1 off: its help says so in that sense, with the default in words, not "(default: True)"."""
    done = subprocess.run([sys.executable, "-m", "retrieval", "lookup", "--help"], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    text = " ".join(done.stdout.split())
    assert "--no-l1 turn off: run L1 semantic retrieval" in text and "(on by default)" in text
    assert "(default: True)" not in text and "(default: False)" not in text


@pytest.mark.parametrize(("package", "heavy"), [
    ("eval", {"numpy", "pandas", "sklearn", "scipy", "duckdb", "tqdm"}),
    ("retrieval", {"pandas", "sklearn", "scipy", "duckdb"}),
])
def test_help_imports_no_heavy_library(package, heavy):
    """`python -m eval --help` and `python -m retrieval --help` answer without the numeric stack (issue 22: ≤ 1 s)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", package, "--help"], capture_output=True,
                          text=True, cwd=ROOT, check=True)
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "usage:" in done.stdout and not heavy & imported, sorted(heavy & imported)


def test_every_number_setting_has_one_range_used_by_the_config_the_cli_and_the_app():
    """Issue 33: a field's range lives in its metadata; LookupConfig refuses what is outside it, --help says
    it, and the app's inputs take it as their bounds (appui/widgets/config_inputs.py)."""
    from dataclasses import fields as dataclass_fields

    from retrieval.config import field_range, is_advanced

    numbers = [f.name for f in dataclass_fields(LookupConfig) if f.type in (int, float, "int", "float")]
    assert all(field_range(name) is not None for name in numbers)
    assert field_range("top_k") == (1, 1000) and field_range("l1_timeout_ms")[0] == 1
    for name in numbers:
        low, _high = field_range(name)
        with pytest.raises(ValueError, match=f"{name} must be a number from"):
            LookupConfig().with_overrides({name: str(low - 1)})
    help_text = build_parser().parse_args.__self__._subparsers._group_actions[0].choices["lookup"].format_help()
    assert "1 to 1000" in " ".join(help_text.split())
    advanced = [name for name in numbers if is_advanced(name)]
    assert len(advanced) == 6 and all(name.startswith("l0_") for name in advanced)
    assert " ".join(help_text.split()).count("(advanced: the domain vote)") == 6
