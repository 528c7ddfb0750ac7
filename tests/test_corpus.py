"""Knowledge-base loading: every front-matter case, chunking by headings, broken YAML, JSONL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval import KnowledgeBaseError, load_knowledge_base, open_index
from retrieval.kb.load import fingerprint, parse_markdown_entry
from retrieval.kb.markdown import FrontMatterError
from tests.kb_fixture import write_kb


def test_leading_blank_lines_before_front_matter_are_allowed(kb_dir):
    entry = load_knowledge_base(kb_dir).entry("alerting/silences.md")
    assert entry.title == "Silencing alerts"
    assert entry.keywords == ("silence", "maintenance window")


def test_domains_are_compared_after_normalising_case_and_spaces(kb_dir):
    kb = load_knowledge_base(kb_dir)
    assert kb.entry("alerting/silences.md").domains == ("alerting",)
    assert kb.entry("alerting/routing.md").domains == ("alerting",)


def test_category_domain_and_categories_fields_all_give_domains(kb_dir):
    kb = load_knowledge_base(kb_dir)
    assert kb.entry("security/tokens.md").domains == ("security", "api")
    assert kb.entry("api/rate-limits.md").domains == ("api",)
    assert kb.entry("getting-started/install.md").domains == ()


def test_tags_stand_in_for_keywords(kb_dir):
    assert load_knowledge_base(kb_dir).entry("security/tokens.md").keywords == ("token", "rotation")


def test_file_without_front_matter_is_titled_by_first_heading(kb_dir):
    entry = load_knowledge_base(kb_dir).entry("troubleshooting/agent-offline.md")
    assert entry.title == "Agent shows offline"
    assert entry.categories == ()
    assert [c.breadcrumb for c in entry.chunks] == ["Agent shows offline", "Agent shows offline > Firewall"]


def test_file_without_front_matter_or_heading_is_titled_by_file_name():
    entry = parse_markdown_entry("troubleshooting/known-issues.md", "Some prose.\n\n## Sync lag\nDetails.")
    assert entry.title == "Known issues"
    assert entry.chunks[1].breadcrumb == "Known issues > Sync lag"


def test_chunks_follow_headings_with_breadcrumbs():
    entry = parse_markdown_entry("a.md", "---\ntitle: Guide\n---\nIntro.\n## Setup\nS.\n### Linux\nL.\n## Use\nU.")
    assert [c.breadcrumb for c in entry.chunks] == ["Guide", "Guide > Setup", "Guide > Setup > Linux", "Guide > Use"]
    assert [c.text for c in entry.chunks] == ["Intro.", "S.", "L.", "U."]


def test_hash_lines_inside_code_fences_are_not_headings(kb_dir):
    entry = load_knowledge_base(kb_dir).entry("getting-started/install.md")
    assert not any("this comment" in c.breadcrumb for c in entry.chunks)
    assert any("# this comment is not a heading" in c.text for c in entry.chunks)


def test_long_section_is_split_into_parts(kb_dir):
    entry = load_knowledge_base(kb_dir).entry("billing/plans.md")
    parts = [c for c in entry.chunks if "Retention walkthrough" in c.breadcrumb]
    assert len(parts) >= 2
    assert parts[0].breadcrumb.endswith("(part 1)")
    assert all(len(p.text.split()) <= 350 for p in parts)


def test_broken_yaml_error_names_file_and_line(tmp_path):
    write_kb(tmp_path, with_broken=True)
    with pytest.raises(KnowledgeBaseError, match=r"broken/bad-yaml\.md:\d+: invalid YAML"):
        load_knowledge_base(tmp_path, strict=True)


def test_broken_yaml_is_skipped_and_reported_by_default(tmp_path):
    write_kb(tmp_path, with_broken=True)
    kb = load_knowledge_base(tmp_path)
    assert kb.entry("broken/bad-yaml.md") is None
    assert [(p.path, p.line) for p in kb.problems] == [("broken/bad-yaml.md", 4)]
    assert kb.summary()["skipped"][0]["path"] == "broken/bad-yaml.md"
    assert len(kb.entries) == kb.files_seen - 1


def test_unclosed_front_matter_is_an_error():
    with pytest.raises(FrontMatterError, match="never closed"):
        parse_markdown_entry("x.md", "---\ntitle: x\nbody")


def test_toml_front_matter_is_read():
    entry = parse_markdown_entry("t.md", '+++\ntitle = "Toml page"\ncategories = ["Ops"]\n+++\nBody.')
    assert (entry.title, entry.domains) == ("Toml page", ("ops",))


def test_source_identity_is_the_relative_path(kb_dir):
    sources = {e.source for e in load_knowledge_base(kb_dir).entries}
    assert "alerting/routing.md" in sources and all(not s.startswith("/") for s in sources)


def test_jsonl_corpus_loads_with_ids_as_sources(tmp_path):
    rows = [{"_id": "d1", "title": "Aspirin", "text": "Aspirin reduces fever.", "metadata": {"category": "Drugs"}},
            {"_id": "d2", "title": "", "text": "Sleep matters.", "metadata": {}}]
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    kb = load_knowledge_base(tmp_path)
    assert [e.source for e in kb.entries] == ["d1", "d2"]
    assert kb.entry("d1").domains == ("drugs",)
    assert kb.entry("d1").chunks[0].text == "Aspirin reduces fever."


def test_excluded_fields_are_not_indexed():
    text = "---\ntitle: T\ndescription: secret words\n---\nBody."
    assert "secret" not in " ".join(c.text for c in parse_markdown_entry("t.md", text,
                                                                         frozenset({"description"})).chunks)
    assert "secret" in " ".join(c.text for c in parse_markdown_entry("t.md", text).chunks)


def test_missing_folder_says_what_to_pass(tmp_path):
    with pytest.raises(KnowledgeBaseError, match="knowledge base not found.*load_knowledge_base") as caught:
        load_knowledge_base(tmp_path / "nope")
    assert "--kb" not in str(caught.value)  # the library's error names the function's argument, not a CLI flag


def test_fingerprint_changes_with_content(tmp_path):
    write_kb(tmp_path)
    before = load_knowledge_base(tmp_path).fingerprint
    (tmp_path / "alerting" / "routing.md").write_text("---\ntitle: Changed\n---\nNew body.")
    assert load_knowledge_base(tmp_path).fingerprint != before


def test_a_long_paragraph_is_split_at_sentences_without_new_paragraph_breaks():
    sentences = " ".join(f"Sentence {i} has a few words." for i in range(200))
    entry = parse_markdown_entry("p.md", f"---\ntitle: P\n---\n{sentences}")
    assert len(entry.chunks) > 1
    assert all("\n\n" not in c.text and len(c.text.split()) <= 350 for c in entry.chunks)
    assert " ".join(c.text for c in entry.chunks) == sentences


# excluded path prefixes -----------------------------------------------------------------------------

def _kb_with_news(root):
    write_kb(root)
    (root / "news").mkdir()
    (root / "news" / "release.md").write_text("---\ntitle: Release notes\n---\nVersion 2 ships.")
    (root / "newsletter.md").write_text("---\ntitle: Newsletter\n---\nMonthly mail.")
    return root


def test_excluded_prefix_files_are_never_read(tmp_path, monkeypatch):
    root = _kb_with_news(tmp_path / "kb")
    (root / "news" / "broken.md").write_text("---\ntitle: [unclosed\n---\nBody.")  # strict would fail on it
    read: list[str] = []
    original = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self.as_posix()) or original(self))
    kb = load_knowledge_base(root, strict=True, exclude_paths=["news"])
    assert not any("/news/" in p for p in read)
    sources = {e.source for e in kb.entries}
    assert "news/release.md" not in sources and "newsletter.md" in sources  # a prefix is a folder, not a stem
    assert (kb.excluded_paths, kb.files_excluded) == (("news",), 2)


def test_excluded_prefix_may_name_a_folder_with_slash_or_a_single_file(tmp_path):
    root = _kb_with_news(tmp_path / "kb")
    kb = load_knowledge_base(root, exclude_paths=("news/", "./billing/plans.md"))
    sources = {e.source for e in kb.entries}
    assert not {"news/release.md", "billing/plans.md"} & sources and "billing/invoices.md" in sources
    assert kb.summary()["excluded_paths"] == ["billing/plans.md", "news"]


@pytest.mark.parametrize(("prefix", "message"), [("/etc", "is absolute"), ("news/../billing", "contains '..'"),
                                                 ("..", "contains '..'"), ("./", "is empty"),
                                                 ("news/*", "is a glob pattern"), ("rel?ase.md", "is a glob pattern")])
def test_bad_exclude_prefix_is_a_knowledge_base_error_saying_why(tmp_path, prefix, message):
    root = write_kb(tmp_path / "kb")
    with pytest.raises(KnowledgeBaseError, match=message):
        load_knowledge_base(root, exclude_paths=[prefix])
    with pytest.raises(KnowledgeBaseError, match=message):
        fingerprint(root, exclude_paths=[prefix])


def test_fingerprint_and_cache_key_differ_with_excluded_paths(tmp_path, monkeypatch):
    root = _kb_with_news(tmp_path / "kb")
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_CACHE", str(tmp_path / "cache"))
    assert fingerprint(root) != fingerprint(root, exclude_paths=["news"])
    assert fingerprint(root, exclude_paths=["news/", "billing"]) == fingerprint(root, exclude_paths="billing,news")
    full = open_index(root, svd_dims=8)
    cut = open_index(root, svd_dims=8, exclude_paths=["news"])
    assert not cut.from_cache and cut.kb.entry("news/release.md") is None
    assert full.kb.entry("news/release.md") is not None
    assert open_index(root, svd_dims=8, exclude_paths=["news/"]).from_cache
    assert len(list((tmp_path / "cache").glob("*/manifest.json"))) == 2


def test_exclusions_change_nothing_when_empty(tmp_path):
    root = write_kb(tmp_path / "kb")
    assert fingerprint(root) == fingerprint(root, exclude_paths=()) == load_knowledge_base(root).fingerprint


def test_jsonl_exclude_prefix_skips_records_whose_id_starts_with_it(tmp_path):
    rows = [{"_id": "news-1", "title": "N", "text": "n"}, {"_id": "doc-1", "title": "D", "text": "d"}]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    kb = load_knowledge_base(tmp_path, exclude_paths=["news"])
    assert [e.source for e in kb.entries] == ["doc-1"] and kb.files_excluded == 1
