"""Every relative Markdown link in README.md and docs/*.md points to a file that exists, and to a heading
of it when the link names an anchor (GitHub's heading slugs)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, …


def _prose(text: str) -> str:
    """The page without fenced code blocks and inline code, where brackets are not links."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (not - or _), spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for line in re.sub(r"^(```|~~~).*?^\1", "", page.read_text(), flags=re.S | re.M).splitlines():
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            slug = _slug(match.group(1))
            anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _links() -> list[tuple[str, str]]:
    return [(page.relative_to(ROOT).as_posix(), target) for page in PAGES
            for target in LINK.findall(_prose(page.read_text())) if not EXTERNAL.match(target)]


def test_the_pages_have_relative_links():
    pages = {page for page, _ in _links()}
    assert "README.md" in pages and len(pages) >= 10


@pytest.mark.parametrize("page, target", _links())
def test_relative_link_resolves(page, target):
    path, _, anchor = target.partition("#")
    file = (ROOT / page).parent / path if path else ROOT / page
    assert file.resolve().is_relative_to(ROOT), f"{page}: {target} leaves the repository"
    assert file.exists(), f"{page}: {target} points to a missing file"
    if anchor:
        assert file.suffix == ".md" and anchor in _anchors(file), f"{page}: {target} names a missing heading"


def test_slugs_follow_github():
    assert _slug("How L0's hints name a domain, and when the filter widens") == \
        "how-l0s-hints-name-a-domain-and-when-the-filter-widens"
    assert _slug("`bench/run.py` at 100k chunks") == "benchrunpy-at-100k-chunks"
    assert _slug("L0 → L1") == "l0--l1"


def test_the_mcp_python_client_snippet_runs_as_written(tmp_path):
    """docs/mcp.md's Python client, run as written from the repository root against the sample base. The MCP
    client starts its server with only the default environment (HOME, PATH, ...), not this session's index
    cache: a home of its own keeps the server's default cache out of the user's."""
    pytest.importorskip("mcp", reason="the MCP snippet needs the mcp package ([mcp] or [dev] extra)")
    text = (ROOT / "docs" / "mcp.md").read_text()
    section = text[text.index("## A Python client"):text.index("## One complete exchange")]
    snippet = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, cwd=ROOT, timeout=180,
                          env={**os.environ, "HOME": str(home)})
    assert done.returncode == 0, done.stderr[-2000:]
    first = done.stdout.splitlines()[0].split()
    assert first[0].endswith(".md") and float(first[1]) > 0, done.stdout
