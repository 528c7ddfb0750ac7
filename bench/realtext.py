"""A real-text benchmark corpus: the machine's English man pages and /usr/share/doc as a Markdown base.

Each source page becomes one Markdown file whose sections hold about `WORDS_PER_CHUNK` words each, so the
chunker cuts one chunk per section; its category is taken from where it came from (the man section, or
"package docs"). When the machine's text runs out before `chunks`, the pages are written again under
`copy-N/` folders: the bench measures speed, and repeated text costs the index what new text would.
The folder is kept under the cache directory, keyed by the chunk count, so a second run reuses it.

`build_beir_corpus` writes the same text in BEIR's shape instead: one `corpus.jsonl` record (`_id`, `title`,
`text`) per section, so the base has as many entries as chunks, as a BEIR corpus (one entry per document)
does; the Markdown base has about 17 chunks per page.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from retrieval.text import STOP_WORDS

WORDS_PER_CHUNK = 120
MAN_ROOT = Path("/usr/share/man")
DOC_ROOT = Path("/usr/share/doc")
MAN_SECTIONS = {"1": "user commands", "2": "system calls", "3": "library functions", "4": "devices",
                "5": "file formats", "6": "games", "7": "overviews", "8": "administration"}
DOC_SUFFIXES = ("", ".gz", ".txt", ".md", ".rst", ".debian")
_ESCAPES = re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)|\\\(..|\\\*(?:\(..|\[[^\]]*\]|.)|\\[&|^/,%:ecdu0 ]|\\s[-+]?\d")
_NOT_TEXT = re.compile(r"[^\w.,;:!?'()/+-]+")


@dataclass(frozen=True)
class Page:
    """One source page: where it came from, its title, category and sections of text."""

    path: str
    title: str
    category: str
    sections: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Corpus:
    """A written benchmark base and a sample of its chunk texts, to draw queries from."""

    root: Path
    chunks: int
    pages: int
    categories: tuple[str, ...]
    samples: tuple[tuple[str, str], ...]  # (category, chunk text)


def _written(root: Path) -> Corpus:
    """A corpus written before, read back from its manifest."""
    meta = json.loads((root / "manifest.json").read_text())
    return Corpus(root / "kb", meta["chunks"], meta["pages"], tuple(meta["categories"]),
                  tuple(map(tuple, meta["samples"])))


def _shuffled_pages(seed: int) -> tuple[list, random.Random]:
    """The machine's pages in a seeded order (categories mixed through the base, as a real one would be)."""
    pages = list(_pages())
    if not pages:
        raise SystemExit("no man pages or documentation on this machine to build a real-text corpus from")
    rng = random.Random(seed)
    rng.shuffle(pages)
    return pages, rng


def build_corpus(chunks: int, cache_dir: Path, *, seed: int = 7) -> Corpus:
    """The Markdown base of about `chunks` chunks under `cache_dir`, written once and then reused."""
    root = cache_dir / f"realtext-{chunks}"
    manifest = root / "manifest.json"
    if manifest.is_file():
        return _written(root)
    pages, rng = _shuffled_pages(seed)
    written, page_count, copy, samples, categories = 0, 0, 0, [], set()
    kb = root / "kb"
    while written < chunks:
        for page in pages:
            if written >= chunks:
                break
            sections = page.sections[: chunks - written]
            file = kb / (f"copy-{copy}" if copy else "") / f"{page.path}.md"
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(_markdown(page, sections), encoding="utf-8")
            written += len(sections)
            page_count += 1
            categories.add(page.category)
            if rng.random() < 0.2:
                samples.append((page.category, rng.choice(sections)[1]))
        copy += 1
    meta = {"chunks": written, "pages": page_count, "categories": sorted(categories), "samples": samples[:5000]}
    manifest.write_text(json.dumps(meta))
    return Corpus(kb, written, page_count, tuple(sorted(categories)), tuple(map(tuple, meta["samples"])))


def build_beir_corpus(documents: int, cache_dir: Path, *, seed: int = 7) -> Corpus:
    """A BEIR-shaped base of `documents` one-chunk records under `cache_dir` (`corpus.jsonl` with `_id`,
    `title`, `text`: no metadata, as BEIR has none), written once and then reused. Each record is one
    section of a page, titled with the page's title and the section's heading."""
    root = cache_dir / f"beir-{documents}"
    manifest = root / "manifest.json"
    if manifest.is_file():
        return _written(root)
    pages, rng = _shuffled_pages(seed)
    kb = root / "kb"
    kb.mkdir(parents=True, exist_ok=True)
    written, copy, samples, categories = 0, 0, [], set()
    with (kb / "corpus.jsonl").open("w", encoding="utf-8") as out:
        while written < documents:
            for page in pages:
                for heading, text in page.sections:
                    if written >= documents:
                        break
                    record = {"_id": f"{f'c{copy}/' if copy else ''}{page.path}#{written}",
                              "title": f"{page.title}: {heading}", "text": text}
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    written += 1
                    categories.add(page.category)
                    if rng.random() < 0.05:
                        samples.append((page.category, text))
            copy += 1
    meta = {"chunks": written, "pages": written, "categories": sorted(categories), "samples": samples[:5000]}
    manifest.write_text(json.dumps(meta))
    return Corpus(kb, written, written, tuple(sorted(categories)), tuple(map(tuple, meta["samples"])))


def queries_from(corpus: Corpus, count: int, *, seed: int = 11) -> list[tuple[str, str]]:
    """(category, query) pairs: 2 to 6 content words drawn in order from a sampled chunk, as a user who half
    remembers a page would type them."""
    rng = random.Random(seed)
    queries = []
    for _ in range(count):
        category, text = rng.choice(corpus.samples)
        words = [w for w in _NOT_TEXT.sub(" ", text).lower().split()
                 if len(w) > 2 and w.isalpha() and w not in STOP_WORDS]
        if len(words) < 2:
            continue
        n = rng.randint(2, min(6, len(words)))
        start = rng.randrange(0, len(words) - n + 1)
        queries.append((category, " ".join(words[start:start + n])))
    return queries


def _pages() -> Iterator[Page]:
    for number, name in MAN_SECTIONS.items():
        for file in sorted((MAN_ROOT / f"man{number}").glob("*")):
            page = _man_page(file, f"man {number}: {name}")
            if page is not None:
                yield page
    for file in sorted(DOC_ROOT.rglob("*")):
        if file.is_file() and not file.is_symlink() and file.suffix.lower() in DOC_SUFFIXES:
            page = _doc_page(file)
            if page is not None:
                yield page


def _read(file: Path) -> str | None:
    try:
        raw = gzip.decompress(file.read_bytes()) if file.suffix == ".gz" else file.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if b"\0" in raw[:4096]:
        return None
    return raw.decode("utf-8", errors="replace")


def _man_page(file: Path, category: str) -> Page | None:
    text = _read(file)
    if text is None or text.startswith(".so "):
        return None  # a link to another page
    heading, lines, sections = "Overview", [], []
    for line in text.splitlines():
        if line.startswith((".\\\"", "'\\\"")):
            continue
        if line.startswith((".SH", ".SS")):
            sections.extend(_blocks(heading, " ".join(lines)))
            heading, lines = _clean(line[3:]).strip('" ') or "Section", []
        elif line.startswith("."):
            words = line.split(None, 1)
            if len(words) == 2 and words[0] in (".B", ".I", ".BR", ".IR", ".BI", ".RB", ".IB", ".RI"):
                lines.append(_clean(words[1]).replace('"', ""))
        else:
            lines.append(_clean(line))
    sections.extend(_blocks(heading, " ".join(lines)))
    name = file.name.split(".")[0]
    return _page(f"man{file.parent.name[3:]}/{_safe(file.name)}", name, category, sections)


def _doc_page(file: Path) -> Page | None:
    text = _read(file)
    if text is None:
        return None
    relative = file.relative_to(DOC_ROOT)
    sections: list[tuple[str, str]] = []
    for number, paragraph in enumerate(re.split(r"\n\s*\n", text)):
        sections.extend(_blocks(f"Part {number + 1}", " ".join(paragraph.split())))
    merged = _merge(sections)
    return _page(f"doc/{_safe(relative.as_posix())}", f"{relative.parts[0]} {file.stem}", "package docs", merged)


def _page(path: str, title: str, category: str, sections: list[tuple[str, str]]) -> Page | None:
    sections = [(h, t) for h, t in sections if len(t.split()) >= 20]
    return Page(path, title, category, tuple(sections)) if sections else None


def _blocks(heading: str, text: str) -> list[tuple[str, str]]:
    words = text.split()
    return [(heading if i == 0 else f"{heading} ({i // WORDS_PER_CHUNK + 1})",
             " ".join(words[i:i + WORDS_PER_CHUNK])) for i in range(0, len(words), WORDS_PER_CHUNK)]


def _merge(sections: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Short paragraphs of a document joined until a section holds about WORDS_PER_CHUNK words."""
    merged: list[tuple[str, str]] = []
    heading, words = "", []
    for h, text in sections:
        heading = heading or h
        words.extend(text.split())
        if len(words) >= WORDS_PER_CHUNK:
            merged.extend(_blocks(heading, " ".join(words)))
            heading, words = "", []
    if words:
        merged.extend(_blocks(heading, " ".join(words)))
    return merged


def _clean(line: str) -> str:
    return _ESCAPES.sub("", line.replace("\\-", "-").replace("\\e", "\\"))


def _safe(name: str) -> str:
    return re.sub(r"[^\w./-]", "_", name).replace("..", "_")


def _markdown(page: Page, sections: tuple[tuple[str, str], ...]) -> str:
    title = json.dumps(page.title)
    body = "\n\n".join(f"## {heading}\n\n{text}" for heading, text in sections)
    return f"---\ntitle: {title}\ncategories: [{json.dumps(page.category)}]\n---\n\n{body}\n"
