"""What the docs quote from output outside the generated regions agrees with real output on the sample base:
hit reasons have the wording lookups give (the old "semantic match …" is gone), the agent tool's result has
the keys and about the size the docs say, the embedder is the one named, and the shortfall reasons app.md
quotes are what `retrieval_details.shortfall.reason` says."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.agent.tool import LookupTool
from tests.doc_text import backticked, between, masked

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SAMPLE = ROOT / "data" / "kb"
QUERIES = ("how do I rotate an API token?", "how do I silence alerts", "PagerDuty", "download last month's invoice",
           "agent offline")
L1_REASON = re.compile(r"L1 match: [^`\"\n]*?'[^'\n]*'")
SIZES = re.compile(r"that is (\d+(?:\.\d)?)k characters of JSON \(`json.dumps`\), against (\d+(?:\.\d)?)k")


@cache
def sample_index() -> Any:
    return open_index(SAMPLE)


def skeleton(reason: str) -> str:
    """A hit reason's wording without its figures and its section: 'L1 match: lexical #, LSA #, … in '…''."""
    return re.sub(r"[-+]?\d+(?:\.\d+)?", "#", re.sub(r"'[^']*'$", "'…'", reason))


def real_l1_wordings() -> set[str]:
    """The wordings of the L1 hit reasons of a few lookups, with the static part and without it."""
    found = set()
    for config in (LookupConfig(), LookupConfig(l1_static_weight=0.0)):
        for query in QUERIES:
            result = lookup_knowledge(query, index=sample_index(), config=config)
            found |= {skeleton(r.reason) for b in result.evidence_blocks for r in b.hit_reasons if r.layer == "L1"}
    return found


def test_no_page_uses_the_old_hit_reason_wording():
    old = [p.name for p in PAGES if "semantic match" in p.read_text(encoding="utf-8").lower()]
    assert not old, f"'semantic match …' is the old hit reason (now 'L1 match: lexical …'): {old}"


def test_every_quoted_l1_hit_reason_is_worded_as_lookups_word_it():
    quoted = {(p.name, q) for p in PAGES for q in L1_REASON.findall(p.read_text(encoding="utf-8"))}
    assert len(quoted) >= 3  # the check finds them (retrieval-details, embedder, app, mcp)
    real = real_l1_wordings()
    assert any("static" in w for w in real) and any("static" not in w for w in real)
    wrong = sorted((name, q) for name, q in quoted if skeleton(q) not in real)
    assert not wrong, f"quoted hit reasons not worded as any real one ({sorted(real)}): {wrong}"


def test_the_agent_tool_result_has_the_keys_and_size_the_docs_say():
    text = " ".join((ROOT / "docs" / "retrieval-details.md").read_text(encoding="utf-8").split())
    payload = LookupTool(sample_index())("how do I silence alerts")
    listed = backticked(between(text, "(`retrieval.agent.tool.agent_payload`):", "; the full"))
    assert listed == set(payload), f"documented {sorted(listed)}, the tool returns {sorted(payload)}"
    match = SIZES.search(text)
    assert match, "the sentence with the payload sizes moved; update this test"
    full = lookup_knowledge("how do I silence alerts", index=sample_index()).to_dict()
    for documented, actual in zip(match.groups(), (payload, full), strict=True):
        size = len(json.dumps(actual)) / 1000
        assert abs(float(documented) - size) <= 0.05 * size, f"the docs say {documented}k, it is {size:.1f}k"


def test_the_embedder_the_docs_name_is_the_packaged_one():
    text = (ROOT / "docs" / "embedder.md").read_text(encoding="utf-8")
    quoted = json.loads(between(" ".join(text.split()), "names the embedder, `", "`"))
    real = lookup_knowledge("silence alerts", index=sample_index()).retrieval_details["l1"]["embedder"]
    version = re.compile(r"@[\w.]+$")  # the wordllama release installed; any in the pinned range
    assert version.sub("@…", quoted["name"]) == version.sub("@…", real["name"])
    assert quoted["dimensions"] == real["dimensions"]


def test_the_shortfall_reasons_the_app_page_quotes_are_real():
    text = " ".join((ROOT / "docs" / "app.md").read_text(encoding="utf-8").split())
    quoted = re.findall(r'"([^"]+)"', between(text, "why (a block is one page: ", "), the evidence blocks"))
    assert len(quoted) == 3, quoted
    cases = [("invoice", {"category": "billing", "top_k": 10}, LookupConfig(l1_min_score=0.0)),  # the filter
             ("PagerDuty", {"top_k": 10}, LookupConfig(simulate_l1_failure=True)),  # l1
             ("Opsgenie", {"top_k": 20}, LookupConfig(l0_filter=False))]  # matches
    real = [lookup_knowledge(query, index=sample_index(), config=config, **kw).retrieval_details["shortfall"]
            for query, kw, config in cases]
    assert [r["limit"] for r in real] == ["filter", "l1", "matches"]
    for fragment, shortfall in zip(quoted, real, strict=True):
        assert masked(fragment) in masked(shortfall["reason"]), f"the reason is {shortfall['reason']!r}"
