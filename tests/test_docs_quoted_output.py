"""Command output the docs quote in their prose is worded as the real output words it, figures aside: the
evaluation CLI's summary line, comparison sentence and report values (docs/evaluation.md), the MCP server's
refusals (docs/mcp.md) and the lookup CLI's warning beside a held trace file (docs/traces.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.lookup.statuses import FilterStatus
from tests.conftest import held_trace_file, settle_trace_file
from tests.doc_text import between, masked, page, values
from tests.eval_helpers import write_dataset

ROOT = Path(__file__).resolve().parents[1]
NESTED = re.compile(r"^\w+: \w+ [\d.]+(?:, \w+ [\d.]+)*$")  # a report's nested value: `key name value, …`


def prose(name: str) -> str:
    return " ".join(page(name).split())


def cli(folder: Path, module: str, *args: str, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=folder, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT),
                                            "LOOKUP_KNOWLEDGE_TRACES": str(folder / "traces.duckdb"), **(env or {})})


def eval_cli(folder: Path, *args: str) -> str:
    done = cli(folder, "eval", *args)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_evaluation_output_the_docs_quote(tmp_path):
    dataset = write_dataset(tmp_path / "data")
    summary = eval_cli(tmp_path, "run", "--dataset", str(dataset))
    first = re.search(r"run (run-\S+):", summary).group(1)
    worse = eval_cli(tmp_path, "run", "--dataset", str(dataset), "--set", "l1_enabled=false",
                     "--set", "l0_max_matches=1")
    second = re.search(r"run (run-\S+):", worse).group(1)
    comparison = masked(eval_cli(tmp_path, "compare", first, second, "--format", "markdown"))
    report = eval_cli(tmp_path, "report", first, "--format", "markdown")
    text = prose("evaluation.md")

    line = between(text, "The summary prints it beside the baseline — `", "`")
    assert masked(line) in {masked(real) for real in summary.splitlines()}, f"no summary line reads like {line!r}"
    sentence = between(text, "metric's outcome in the Compare page's words — `", "`")
    assert masked(sentence) in comparison, f"the comparison report has no sentence like {sentence!r}"
    latency = between(text, "as `key value, …` (`", "`")
    assert masked(latency) in masked(report), f"the run report has no value like {latency!r}"
    decisions = between(text, f"{latency}`, `", "`")
    real = next(v.lstrip("- ") for v in report.splitlines() if v.startswith("- filter_decisions: "))
    assert NESTED.match(decisions) and NESTED.match(real), (decisions, real)
    assert set(re.findall(r"([a-z_]+) \d", decisions.split(": ", 1)[1])) <= values(FilterStatus)


def test_the_mcp_refusals_the_docs_quote():
    pytest.importorskip("mcp")
    import anyio

    from retrieval import LookupConfig, open_index
    from retrieval.agent.mcp_server import build_server
    from retrieval.lookup.orchestrator import TOOL_NAME

    server = build_server(open_index(ROOT / "data" / "kb"), LookupConfig(), None)
    real = [anyio.run(server.call_tool, TOOL_NAME, arguments).content[0].text for arguments in
            ({"query": ""}, {"query": "token", "top_k": 0}, {"query": "token", "category": "weather"})]
    quoted = re.findall(r"`([^`]* must be [^`]*)`", between(prose("mcp.md"), "**Errors.**", "**Traces.**"))
    assert len(quoted) == 3, quoted
    for message in quoted:
        pattern = ".*".join(re.escape(part) for part in message.split("…"))
        assert any(re.fullmatch(pattern, m) for m in real), f"the server says none of {message!r}: {real}"


def test_the_lock_warning_the_docs_quote(tmp_path):
    quoted = "warning: " + between(prose("traces.md"), "(`warning: ", "`)")
    file = re.search(r"trace file (\S+) ", quoted).group(1)  # the doc's example file, run under that name
    args = ("retrieval", "lookup", "rotate an API token", "--kb", str(ROOT / "data" / "kb"), "--traces", file)
    fold_soon = {"LOOKUP_KNOWLEDGE_PACK_IDLE": "0.2"}  # its keeper exits 0.2 s after the fold, not 5 s: the
    # settle below waits for that exit; the warning checked is the next lookup's
    assert cli(tmp_path, *args, env=fold_soon).returncode == 0  # the file exists
    settle_trace_file(tmp_path / file)  # no keeper at work: a lookup would leave its row to it, checking nothing
    with held_trace_file(tmp_path / file):
        done = cli(tmp_path, *args, "--lock-timeout", "0.3")
    real = next((line for line in done.stderr.splitlines() if line.startswith("warning: trace file")), "")

    def holder(text: str) -> str:
        return masked(re.sub(r"by process \d+ \(.*\) for over", "by process (…) for over", text))

    assert holder(quoted) == holder(real), f"the CLI says {real!r}"
