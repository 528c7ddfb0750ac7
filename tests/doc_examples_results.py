"""Examples of lookup output in docs/retrieval-details.md, docs/embedder.md and docs/app.md, from real lookups
on the sample base: the CLI's printed result, and a result's blocks as the app's cards and its comparison
word them (appui.widgets.score_parts, the functions the app calls)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from retrieval import lookup_knowledge, open_index
from tests.compact_json import dumps
from tests.doc_examples_mcp import block

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "kb"
CLI_QUERY = "PagerDuty"
SILENCE_QUERY = "how do I silence alerts"
CONTENT_CHARS = 60  # the abbreviated result shows the start of the content


def cli_result(query: str, *flags: str) -> dict[str, Any]:
    """What `python -m retrieval lookup QUERY --kb data/kb FLAGS` prints, run from the repository root."""
    done = subprocess.run([sys.executable, "-m", "retrieval", "lookup", query, "--kb", "data/kb", "--no-trace",
                           "--compact", *flags], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise AssertionError(f"the lookup CLI failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def abbreviated_result(result: dict[str, Any]) -> dict[str, Any]:
    """The printed result with the primary's content cut, the block list and `retrieval_details` elided."""
    out = dict(result)
    primary = dict(result["primary"])
    if len(primary["content"]) > CONTENT_CHARS:
        primary["content"] = primary["content"][:CONTENT_CHARS].rstrip() + " …"
    out["primary"] = primary
    out["evidence_blocks"] = ["… primary first, then the supplement …"]
    out["retrieval_details"] = {"…": "see below"}
    return out


def result_example(work: Path) -> dict[str, str]:
    """docs/retrieval-details.md: `python -m retrieval lookup PagerDuty --top-k 1`, abbreviated."""
    return {"cli-result": block("json", dumps(abbreviated_result(cli_result(CLI_QUERY, "--top-k", "1"))))}


def silence_blocks() -> list[dict[str, Any]]:
    """The evidence blocks of the silence question on the sample, as the CLI and the app hold them."""
    return lookup_knowledge(SILENCE_QUERY, index=open_index(SAMPLE)).to_dict()["evidence_blocks"]


def static_reason(work: Path) -> dict[str, str]:
    """docs/embedder.md: the first hit reason of the silence question's best block."""
    return {"static-hit-reason": block("text", silence_blocks()[0]["hit_reasons"][0]["reason"])}


def app_card_words(work: Path) -> dict[str, str]:
    """docs/app.md: the first card's score line and first hit reason, and the comparison of the first two."""
    from appui.widgets.score_parts import gap_sentence, parts_line

    first, second = silence_blocks()[:2]
    lines = [parts_line(first), first["hit_reasons"][0]["reason"], gap_sentence(first, second, ("#1", "#2"))]
    return {"app-score-parts": block("text", "\n".join(lines))}
