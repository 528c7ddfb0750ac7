"""An updated index of the Hugo docs (../shared/data/hugo_docs) ranks the dev questions as a full rebuild does:
5% of the pages rewritten (front matter reordered, whitespace changed, a few real edits), MRR@10 within 0.002.
Skips with the reason when the shared folder is absent."""

from __future__ import annotations

import json
import random
import shutil

import pytest

from eval.metrics import reciprocal_rank
from retrieval import LookupConfig, lookup_knowledge, open_index
from tests.conftest import shared_path

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]
EDITED_SHARE = 0.05
REAL_EDITS = 4


def _reordered(text: str, rng: random.Random, edit: bool) -> str:
    """The page with its YAML front matter's top-level keys in another order and its whitespace changed; with
    `edit`, a sentence added to the body too."""
    if not text.startswith("---\n"):
        return text + ("\n\nThis page was revised.\n" if edit else "\n")
    end = text.index("\n---", 4)
    blocks: list[list[str]] = []
    for line in text[4:end].split("\n"):
        if line and not line[0].isspace() and not line.startswith("-") or not blocks:
            blocks.append([line])
        else:
            blocks[-1].append(line)
    rng.shuffle(blocks)
    body = text[end + 4:].replace("\n\n", "\n\n\n", 3)
    added = "\n\nThis page was revised to add a note on the new behaviour.\n" if edit else "\n"
    return "---\n" + "\n".join(line for block in blocks for line in block) + "\n---" + body + added


def _mrr(index, queries) -> float:
    config = LookupConfig(top_k=10)
    return sum(reciprocal_rank([b.source for b in lookup_knowledge(q["text"], index=index, config=config)
                                .evidence_blocks], {s: 1.0 for s in q["relevant"]}, 10)
               for q in queries) / len(queries)


def test_hugo_with_five_percent_of_pages_edited_keeps_mrr_within_0_002_of_a_rebuild(tmp_path):
    content = shared_path("hugo_docs", "content", "en")
    queries = [json.loads(line) for line in shared_path("hugo_docs", "dev_queries.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip()]
    kb, cache = tmp_path / "en", tmp_path / "cache"
    shutil.copytree(content, kb)
    open_index(kb, cache_dir=cache)
    rng = random.Random(35)
    pages = sorted(kb.rglob("*.md"))
    chosen = rng.sample(pages, round(len(pages) * EDITED_SHARE))
    for number, page in enumerate(chosen):
        page.write_text(_reordered(page.read_text(encoding="utf-8"), rng, number < REAL_EDITS), encoding="utf-8")
    updated = open_index(kb, cache_dir=cache)
    assert updated.update is not None and updated.update.parsed == len(chosen)
    rebuilt = open_index(kb, use_cache=False)
    assert [e.source for e in updated.kb.entries] == [e.source for e in rebuilt.kb.entries]
    after_update, after_rebuild = _mrr(updated, queries), _mrr(rebuilt, queries)
    print(f"MRR@10 on {len(queries)} dev questions: updated {after_update:.4f}, rebuilt {after_rebuild:.4f}")
    assert abs(after_update - after_rebuild) <= 0.002
