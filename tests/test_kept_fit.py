"""A full rebuild that keeps the cached index's LSA fit (`open_index(..., rebuild=True, keep_fit=True)`,
`python -m retrieval index --rebuild --keep-fit`) recomputes everything else from the files, so an updated index
must rank exactly as it does (issue 35, item 1: the top 10 after an update equals a full rebuild's)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.cli import main
from retrieval.paths import SAMPLE_KB

QUERIES = [json.loads(line)["text"] for line in
           (SAMPLE_KB.parent / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def _ranking(index, query: str) -> list[tuple[str, str, float]]:
    blocks = lookup_knowledge(query, index=index, config=LookupConfig(top_k=10)).evidence_blocks
    return [(b.source, b.breadcrumb, round(b.score, 5)) for b in blocks]


def _edit_a_few_pages(kb) -> None:
    pages = sorted(kb.rglob("*.md"))
    for page in pages[::40]:
        text = page.read_text(encoding="utf-8")
        page.write_text(text.replace("\n\n", "\n\nRevised: the rollout checklist now names an owner.\n\n", 1)
                        + "\n\n## Rollout owner\nEvery rollout names an owner who signs the checklist.\n",
                        encoding="utf-8")
    pages[3].unlink()
    (kb / "added.md").write_text("---\ntitle: Quota alerts\ncategory: Alerting\n---\n## Quota alerts\n"
                                 "A quota alert fires when a project nears its seat or storage quota.\n",
                                 encoding="utf-8")


def _lsa_by_text(index) -> dict[tuple[str, str, str], np.ndarray]:
    """Each live section's LSA vector, by its text (an updated index's tombstoned rows are not live)."""
    rows = index.l1.pages.every_row()
    return {(c.source, c.breadcrumb, c.text): vector
            for c, vector in zip([index.l1.chunks[r] for r in rows.tolist()], index.l1.lsa.take(rows), strict=True)}


def test_an_updated_index_ranks_as_a_full_rebuild_that_keeps_its_fit(editable_kb):
    kb, cache = editable_kb
    open_index(kb, cache_dir=cache)
    _edit_a_few_pages(kb)
    updated = open_index(kb, cache_dir=cache)
    assert updated.update is not None and updated.update.rows_added > 0
    rebuilt = open_index(kb, cache_dir=cache, rebuild=True, keep_fit=True)
    assert rebuilt.update is None and rebuilt.kept_fit == updated.update.lineage  # the fit's drift goes on
    for query in QUERIES + ["rollout owner checklist", "quota alert seats storage"]:
        assert _ranking(rebuilt, query) == _ranking(updated, query), query
    ours, theirs = _lsa_by_text(updated), _lsa_by_text(rebuilt)
    assert ours.keys() == theirs.keys()
    assert max(float(np.abs(ours[k] - theirs[k]).max()) for k in ours) < 1e-5
    assert np.array_equal(updated.l1.arrays.projection, rebuilt.l1.arrays.projection)


def test_a_rebuild_with_a_new_fit_moves_the_lsa_cosines(editable_kb):
    """The contrast the kept fit removes: a new fit of the same files gives other LSA vectors."""
    kb, cache = editable_kb
    open_index(kb, cache_dir=cache)
    _edit_a_few_pages(kb)
    updated = open_index(kb, cache_dir=cache)
    refitted = open_index(kb, cache_dir=cache, rebuild=True)
    assert refitted.kept_fit is None
    ours, theirs = _lsa_by_text(updated), _lsa_by_text(refitted)
    assert max(float(np.abs(ours[k] @ ours[k] - ours[k] @ theirs[k])) for k in ours) > 1e-3


def test_a_rebuild_keeping_the_fit_of_changed_files_updates_them_first(editable_kb):
    kb, cache = editable_kb
    built = open_index(kb, cache_dir=cache)
    _edit_a_few_pages(kb)  # not opened since: the rebuild finds the files changed
    rebuilt = open_index(kb, cache_dir=cache, rebuild=True, keep_fit=True)
    assert rebuilt.kept_fit is not None and rebuilt.kept_fit.updates == 1 and rebuilt.kept_fit.rows_changed > 0
    assert np.array_equal(built.l1.arrays.projection, rebuilt.l1.arrays.projection)
    assert _ranking(rebuilt, "quota alert seats storage")[0][0] == "added.md"
    reopened = open_index(kb, cache_dir=cache)
    assert reopened.from_cache and _ranking(reopened, "rollout owner checklist") == _ranking(
        rebuilt, "rollout owner checklist")


def test_a_rebuild_keeping_the_fit_of_a_base_never_built_fits_one(editable_kb):
    kb, cache = editable_kb
    rebuilt = open_index(kb, cache_dir=cache, rebuild=True, keep_fit=True)
    fresh = open_index(kb, use_cache=False)
    assert rebuilt.kept_fit is not None and rebuilt.kept_fit.updates == 0 and rebuilt.kept_fit.drift == 0
    assert np.array_equal(fresh.l1.arrays.projection, rebuilt.l1.arrays.projection)


@pytest.mark.parametrize("options", [{"keep_fit": True}, {"keep_fit": True, "rebuild": True, "use_cache": False}])
def test_keep_fit_without_a_cached_rebuild_is_an_error_that_says_how_to_ask(editable_kb, options):
    kb, cache = editable_kb
    with pytest.raises(ValueError, match="rebuild=True and the cache"):
        open_index(kb, cache_dir=cache, **options)


def test_the_index_command_rebuilds_keeping_the_fit_and_says_so(editable_kb, monkeypatch, capsys):
    kb, cache = editable_kb
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_CACHE", str(cache))
    assert main(["index", "--kb", str(kb)]) == 0
    _edit_a_few_pages(kb)
    capsys.readouterr()
    assert main(["index", "--kb", str(kb), "--rebuild", "--keep-fit"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["updated"] is False and summary["kept_fit"]["updates"] == 1
    assert 0 < summary["kept_fit"]["drift"] < 0.2
    assert main(["index", "--kb", str(kb), "--keep-fit"]) == 2
    assert "rebuild=True" in capsys.readouterr().err


def test_an_updated_jsonl_corpus_ranks_as_a_full_rebuild_that_keeps_its_fit(tmp_path):
    subjects = ("alerts", "billing", "tokens", "exports")
    records = [{"_id": f"d{i}", "title": f"Document {i}", "metadata": {"category": f"c{i % 3}"},
                "text": f"topic{i % 7} shared words and item{i} details with {subjects[i % 4]} notes"}
               for i in range(60)]
    corpus, cache = tmp_path / "corpus.jsonl", tmp_path / "cache"

    def write():
        corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    write()
    open_index(corpus, cache_dir=cache)
    records[5]["text"] = "zanzibar lighthouse keeper with alerts notes"
    del records[9]
    records.append({"_id": "new", "title": "New", "text": "ocelot migration notes about billing tokens"})
    write()
    updated = open_index(corpus, cache_dir=cache)
    rebuilt = open_index(corpus, cache_dir=cache, rebuild=True, keep_fit=True)
    assert updated.update is not None and rebuilt.kept_fit == updated.update.lineage
    for query in ("zanzibar lighthouse", "ocelot migration billing", "item9 details", "topic3 shared words exports",
                  "alerts notes", "tokens"):
        assert _ranking(rebuilt, query) == _ranking(updated, query), query
