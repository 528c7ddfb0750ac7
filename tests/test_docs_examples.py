"""The examples of output in the docs are real: each generated region is made again from a real run (an MCP
session against `python -m retrieval mcp`, the lookup CLI, a lookup as the app words it) and must match
the page, numbers to ±0.02 (BLAS and library versions move last digits), invocation ids aside.

When the output changed on purpose, regenerate the regions that differ:
`UPDATE_DOCS=1 python -m pytest tests/test_docs_examples.py` (or `python -m tests.docs_examples --write`).
"""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from tests.doc_compare import difference, tokens
from tests.doc_regions import regions, replace_regions
from tests.docs_examples import NEEDS, PAGES, REGENERATE, ROOT, differences, write


@pytest.mark.parametrize("page", sorted(PAGES))
def test_generated_examples_match_real_output(page, tmp_path):
    needed = NEEDS.get(page)
    if needed and importlib.util.find_spec(needed) is None:
        pytest.skip(f"{page}'s examples need the {needed} package ([dev] extra)")
    generated = PAGES[page](tmp_path)
    if os.environ.get("UPDATE_DOCS") == "1":
        write(page, generated)
    found = differences(page, generated)
    assert not found, "\n".join(found) + f"\nIf the change is meant, regenerate: {REGENERATE}"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_page_with_a_generator_has_its_regions(page):
    assert regions((ROOT / page).read_text(encoding="utf-8")), f"{page} has no generated region"


def test_no_other_page_has_generated_regions():
    pages = [p.relative_to(ROOT).as_posix() for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]]
    orphans = [p for p in pages if p not in PAGES and regions((ROOT / p).read_text(encoding="utf-8"))]
    assert not orphans, f"these pages have generated regions but no generator in tests/docs_examples.py: {orphans}"


def test_the_comparison_tolerates_last_digits_and_ids_but_not_drift():
    doc = 'score 1.31275, "lexical 0.679" id a0e05279-0472-4201-9c9d-1d4a8c87a737 top_k 1'
    assert difference(doc, 'score 1.3201,  "lexical 0.68"\nid 2ee9f7b4-758d-4ba9-beaf-77d65efe9ed0 top_k 1') is None
    assert "1.565" in difference(doc, 'score 1.565235, "lexical 0.679" id a0e05279-0472-4201-9c9d-1d4a8c87a737 top_k 1')
    assert difference(doc, doc.replace("top_k 1", "top_k 2"))  # integers are exact
    assert difference("semantic match in 'API Tokens'", "L1 match: lexical 0.68 in 'API Tokens'")
    assert difference("a b", "a b c") and difference("a b c", "a b")
    assert [t[0] for t in tokens("L0+L1 (+0.252)")] == ["other", "number", "other", "other", "number", "other",
                                                         "number", "other"]


def test_json_blocks_compare_as_values_keys_in_any_order():
    def fenced(value: object) -> str:
        return f"```json\n{json.dumps(value, indent=1)}\n```\n"

    doc = {"score": 1.31275, "reason": "L1 match: lexical 0.68", "top_k": 1,
           "schema": {"type": "object", "required": []}}
    assert difference(fenced(doc), fenced({"schema": {"required": [], "type": "object"}, "top_k": 1,
                                           "reason": "L1 match: lexical 0.681", "score": 1.3201})) is None
    assert "$.score" in difference(fenced(doc), fenced({**doc, "score": 1.565235}))
    assert "$.reason" in difference(fenced(doc), fenced({**doc, "reason": "semantic match in 'API Tokens'"}))
    assert "lacks" in difference(fenced(doc), fenced({**doc, "ttl": 0}))
    assert "$.top_k" in difference(fenced(doc), fenced({**doc, "top_k": 2}))
    assert "items" in difference(fenced(doc), fenced({**doc, "schema": {"type": "object", "required": ["q"]}}))


def test_regions_are_replaced_between_their_markers_only():
    text = "a\n<!-- generated: one; note -->\nold\n<!-- end generated -->\nb\n<!-- generated: two -->\nkeep\n" \
           "<!-- end generated -->\n"
    assert regions(text) == {"one": "old\n", "two": "keep\n"}
    assert replace_regions(text, {"one": "new"}) == text.replace("old", "new")
