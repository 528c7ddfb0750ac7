"""A knowledge base full of broken and odd files loads: valid files indexed, the rest listed, nothing outside read.

Tests run as root, where `chmod 000` does not stop a read: an unreadable file is simulated by a FIFO,
a folder named `x.md`, and `os.open` patched to raise PermissionError for one file.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from retrieval import KnowledgeBaseError, build_index, load_knowledge_base, lookup_knowledge
from retrieval.kb.load import fingerprint, markdown_sources
from retrieval.kb.markdown import FrontMatterError, split_front_matter
from tests.hostile_helpers import ALIAS_BOMB, BROKEN, BROKEN_BYTES, BYTES, OUTSIDE_SECRET, VALID


def _problems(kb) -> dict[str, str]:
    return {p.path: p.message for p in kb.problems}


def test_every_valid_file_is_indexed(hostile_kb, denied):
    kb = load_knowledge_base(hostile_kb)
    expected = set(VALID) | set(BYTES) | {"inside-link.md"}
    assert {e.source for e in kb.entries} == expected


def test_every_other_file_is_listed_with_its_reason(hostile_kb, denied):
    problems = _problems(load_knowledge_base(hostile_kb))
    for name, (_, reason) in {**BROKEN, **BROKEN_BYTES}.items():
        assert reason in problems[name], (name, problems.get(name))
    reasons = {"huge.md": "limit", "fifo.md": "not a regular file", "passwd.md": "outside the knowledge base",
               "linked-folder": "outside the knowledge base", "loop-a.md": "loop", "loop-b.md": "loop",
               "dangling.md": "broken symlink", "dir.md": "folder named like", "bad-\\xff-name.md": "not valid UTF-8",
               "permission.md": "Permission denied"}
    for name, reason in reasons.items():
        assert reason in problems[name], (name, problems.get(name))
    assert len(problems) == len(BROKEN) + len(BROKEN_BYTES) + len(reasons)
    assert len(problems) + len(VALID) + len(BYTES) >= 20  # kinds of broken and odd files (36)


def test_nothing_from_outside_the_root_is_read(hostile_kb, denied):
    kb = load_knowledge_base(hostile_kb)
    assert not any(OUTSIDE_SECRET in c.text for c in kb.chunks)
    assert "passwd.md" not in markdown_sources(hostile_kb)


def test_latin1_file_is_skipped_with_its_line_number(hostile_kb, denied):
    problem = next(p for p in load_knowledge_base(hostile_kb).problems if p.path == "latin1.md")
    assert problem.line == 3


def test_bom_and_crlf_are_handled(hostile_kb, denied):
    kb = load_knowledge_base(hostile_kb)
    assert kb.entry("bom.md").title == "With BOM"
    crlf = kb.entry("crlf.md")
    assert crlf.title == "With CRLF" and not any("\r" in c.text or "\r" in c.breadcrumb for c in crlf.chunks)


def test_odd_categories_are_handled_sensibly(hostile_kb, denied):
    kb = load_knowledge_base(hostile_kb)
    assert kb.entry("categories-list.md").domains == ("billing", "api")
    assert kb.entry("categories-number.md").domains == ("42",)
    assert kb.entry("categories-null.md").domains == ()
    assert kb.entry("categories-mapping.md").domains == ()
    assert kb.entry("title-list.md").title == "Listed title"


def test_deep_headings_keep_at_most_six_levels(hostile_kb, denied):
    entry = load_knowledge_base(hostile_kb).entry("deep-headings.md")
    assert len(entry.chunks) >= 599
    assert max(c.breadcrumb.count(" > ") for c in entry.chunks) <= 6
    assert any("seven hashes" in c.text for c in entry.chunks)


def test_alias_bomb_is_rejected_in_milliseconds():
    assert len(ALIAS_BOMB) < 700
    started = time.perf_counter()
    with pytest.raises(FrontMatterError, match="aliases"):
        split_front_matter(f"---\n{ALIAS_BOMB}---\nBody.", "bomb.md")
    assert time.perf_counter() - started < 0.1


def test_the_load_and_fingerprint_finish_quickly_without_blocking(hostile_kb, denied):
    started = time.perf_counter()
    kb = load_knowledge_base(hostile_kb)
    digest = fingerprint(hostile_kb)
    assert time.perf_counter() - started < 10
    assert digest == kb.fingerprint


def test_fingerprint_does_not_crash_on_an_unreadable_file(hostile_kb, denied):
    assert len(fingerprint(hostile_kb)) == 64


def test_strict_mode_fails_on_the_first_problem_naming_it(hostile_kb, denied):
    with pytest.raises(KnowledgeBaseError, match="strict mode"):
        load_knowledge_base(hostile_kb, strict=True)


def test_lookup_details_and_summary_count_the_skipped_files(hostile_kb, denied):
    kb = load_knowledge_base(hostile_kb)
    index = build_index(kb, svd_dims=8)
    details = lookup_knowledge("rotate the keys", index=index).retrieval_details
    assert details["kb"]["skipped_count"] == len(kb.problems) == kb.summary()["skipped_count"] == 19


def test_jsonl_bad_lines_are_skipped_with_their_line_numbers(tmp_path):
    lines = [b"\xef\xbb\xbf" + json.dumps({"_id": "a", "title": "First", "text": "alpha"}).encode(),  # 1: BOM
             b"null", b"[1, 2]", b'"a string"',  # 2-4
             json.dumps({"_id": "b", "text": "caf\xe9"}).encode().replace(b"\\u00e9", b"\xe9"),  # 5: latin-1 é
             json.dumps({"_id": "c", "text": "x", "metadata": "a string"}).encode(),  # 6
             json.dumps({"_id": "a", "text": "again"}).encode(),  # 7: duplicate
             b"{broken json", json.dumps({"title": "no id"}).encode(),  # 8, 9
             json.dumps({"_id": "d", "text": "lone \\ud800 surrogate"}).encode().replace(b"\\\\", b"\\"),  # 10
             json.dumps({"_id": 7, "text": "numeric id", "metadata": {"category": ["ops", 3]}}).encode() + b"\r",
             json.dumps({"_id": True, "text": "bool id"}).encode()]  # 12
    (tmp_path / "corpus.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    kb = load_knowledge_base(tmp_path)
    assert [e.source for e in kb.entries] == ["a", "d", "7"]
    assert kb.entry("d").chunks[0].text == "lone \ufffd surrogate"
    assert kb.entry("7").domains == ("ops", "3")
    problems = {p.line: p.message for p in kb.problems}
    assert sorted(problems) == [2, 3, 4, 5, 6, 7, 8, 9, 12]
    assert "null" in problems[2] and "list" in problems[3] and "str" in problems[4]
    assert "not UTF-8" in problems[5] and "metadata" in problems[6] and "duplicate _id 'a'" in problems[7]
    assert all(p.path == "corpus.jsonl" for p in kb.problems)


def test_cli_lookup_counts_skipped_files_and_names_them_on_stderr(tmp_path, capsys):
    from retrieval.cli import main

    root = tmp_path / "kb"
    root.mkdir()
    (root / "good.md").write_text("# Good\nRotate the keys monthly.\n")
    (root / "bad.md").write_bytes(b"caf\xe9\n")
    os.symlink("/etc/passwd", root / "passwd.md")
    assert main(["lookup", "rotate keys", "--kb", str(root), "--no-trace", "--no-cache"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["retrieval_details"]["kb"]["skipped_count"] == 2
    assert "2 knowledge-base file(s)" in captured.err and "bad.md:1" in captured.err and "passwd.md" in captured.err
    assert "root:" not in captured.out
