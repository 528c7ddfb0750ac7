"""Benchmark (not a test): `python bench/incremental.py --chunks 100000`.

Incremental index updates (issue 50) on bench/realtext.py's real-text base, copied to a scratch folder so its
pages can be edited: one full build (the base), then, one after the other, an edit of 1 page, of 10 pages, a
deleted page, an added page and an edit of 1% of the pages, each followed by `open_index` (which writes a delta
beside the base: retrieval/index/incremental.py) and the next lookup, timed together. An edit appends a section
of another page's text and opens the page with a new paragraph. Each update prints its seconds and their ratio
to the full build's (measured in this run), and the bytes it wrote (its cache folder: the delta) against the
base's folder. After the 1% edit, two full builds of the same files, and the top 10 of every bench query by each
against the updated index's: one that keeps the fit the update's delta was built in (`open_index(...,
rebuild=True, keep_fit=True)`, `index --rebuild --keep-fit`: the LSA projection and BM25's mean lengths kept,
everything else recomputed from the files: what an update should equal), and one with a new fit
(`open_index(..., use_cache=False)`); then the fit's own spread: a third full build of the same files whose SVD
starts from another random_state, against the new fit's.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realtext import build_corpus, queries_from

from retrieval import IndexConfig, LookupConfig, lookup_knowledge, open_index

TOP = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--corpus-dir", type=Path, default=Path(tempfile.gettempdir()) / "lookup-knowledge-bench")
    args = parser.parse_args()
    corpus = build_corpus(args.chunks, args.corpus_dir)
    queries = [query for _, query in queries_from(corpus, args.queries)]
    config = LookupConfig(top_k=TOP)
    with tempfile.TemporaryDirectory() as scratch:
        kb, cache = Path(scratch) / "kb", Path(scratch) / "cache"
        shutil.copytree(corpus.root, kb)
        pages = sorted(kb.rglob("*.md"))
        print(f"corpus: {corpus.chunks:,} chunks in {len(pages):,} pages ({corpus.root}, copied)")
        started = time.perf_counter()
        index = open_index(kb, cache_dir=cache)
        lookup_knowledge(queries[0], index=index, config=config)
        full = time.perf_counter() - started
        print(f"full build with the first lookup: {full:.1f} s ({index.build_seconds:.1f} s to index)")
        del index
        rng = random.Random(3)
        one_percent = max(1, len(pages) // 100)
        steps = [("edit 1 page", lambda: _edit(rng.sample(pages, 1), pages, rng)),
                 ("edit 10 pages", lambda: _edit(rng.sample(pages, 10), pages, rng)),
                 ("delete 1 page", lambda: _delete(pages, rng)),
                 ("add 1 page", lambda: _add(kb, pages, rng)),
                 (f"edit 1% of pages ({one_percent})", lambda: _edit(rng.sample(pages, one_percent), pages, rng))]
        base_bytes = _folder_bytes(_newest(cache))
        print(f"the base's cache folder: {base_bytes / 2**20:,.1f} MiB")
        print("| change | update + next lookup | of a full build | bytes written (the delta) | of the base's folder "
              "| files parsed | rows added / removed | drift |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for number, (name, change) in enumerate(steps):
            change()
            started = time.perf_counter()
            index = open_index(kb, cache_dir=cache)
            lookup_knowledge(queries[number + 1], index=index, config=config)
            seconds = time.perf_counter() - started
            facts = index.update
            if facts is None:
                raise SystemExit(f"{name}: open_index built the index whole instead of updating it")
            written = _folder_bytes(_newest(cache))
            print(f"| {name} | {seconds:.2f} s | {seconds / full:.3f} | {written / 2**20:,.2f} MiB | "
                  f"{written / base_bytes:.2%} | {facts.parsed} | {facts.rows_added:,} / {facts.rows_removed:,} | "
                  f"{facts.lineage.drift:.4f} |")
        updated = [_top(index, q, config) for q in queries]
        tops = {}
        for name, rebuild in (("a full rebuild keeping the LSA fit (--rebuild --keep-fit)",
                               lambda: open_index(kb, cache_dir=cache, rebuild=True, keep_fit=True)),
                              ("a full rebuild with a new LSA fit (--rebuild)",
                               lambda: open_index(kb, use_cache=False))):
            started = time.perf_counter()
            rebuilt = rebuild()
            seconds = time.perf_counter() - started
            tops[name] = [_top(rebuilt, q, config) for q in queries]
            _compare(name, seconds, updated, tops[name])
            del rebuilt
        started = time.perf_counter()
        reseeded = open_index(kb, use_cache=False, config=IndexConfig(random_state=1))
        seconds = time.perf_counter() - started
        _compare("the fit's own spread: a full rebuild of the same files with the SVD's random_state 1, against "
                 "the new fit's (random_state 0)", seconds, tops["a full rebuild with a new LSA fit (--rebuild)"],
                 [_top(reseeded, q, config) for q in queries], "the new fit's rebuild")
        del reseeded


def _newest(cache: Path) -> Path:
    """The cache folder written last (a full build's, or an update's delta)."""
    folders = [p for p in cache.iterdir() if (p / "manifest.json").is_file()]
    return max(folders, key=lambda p: (p / "manifest.json").stat().st_mtime)


def _folder_bytes(folder: Path) -> int:
    """The bytes of a cache folder's files (a delta's own: its base is another folder)."""
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())


def _compare(name: str, seconds: float, updated: list[list[tuple[str, str]]],
             rebuilt: list[list[tuple[str, str]]], of: str = "the updated index") -> None:
    """Print how often the top 10 of `of` (the updated index) equals the rebuild's, and how nearly."""
    pairs = list(zip(updated, rebuilt, strict=True))
    n = len(pairs)
    same = sum(a == b for a, b in pairs)
    pages = sum([s for s, _ in a] == [s for s, _ in b] for a, b in pairs)
    first = sum(a[:1] == b[:1] for a, b in pairs)
    overlap = sum(len(set(a) & set(b)) / max(len(b), 1) for a, b in pairs) / n
    print(f"{name}, {seconds:.1f} s: the top {TOP} of {of} equals the rebuild's for {same} of {n} "
          f"queries ({same / n:.1%}); the same pages in the same order {pages / n:.1%}; the same first block "
          f"{first / n:.1%}; mean overlap of the top {TOP} {overlap:.3f}")


def _top(index, query: str, config: LookupConfig) -> list[tuple[str, str]]:
    return [(b.source, b.breadcrumb) for b in lookup_knowledge(query, index=index, config=config).evidence_blocks]


def _edit(chosen: list[Path], pages: list[Path], rng: random.Random) -> None:
    """Add an opening paragraph and append a section of another page's text: new words and old ones."""
    for page in chosen:
        donor = rng.choice(pages).read_text(encoding="utf-8").split("\n## ")[-1]
        text = page.read_text(encoding="utf-8").replace("\n\n", "\n\nRevised: this page was updated.\n\n", 1)
        page.write_text(f"{text}\n\n## Revised {donor}\n", encoding="utf-8")


def _delete(pages: list[Path], rng: random.Random) -> None:
    page = pages.pop(rng.randrange(len(pages)))
    page.unlink()


def _add(kb: Path, pages: list[Path], rng: random.Random) -> None:
    donor = rng.choice(pages)
    page = kb / "added" / f"copy-of-{donor.name}"
    page.parent.mkdir(exist_ok=True)
    page.write_text(donor.read_text(encoding="utf-8").replace('title: "', 'title: "Copy of ', 1), encoding="utf-8")
    pages.append(page)


if __name__ == "__main__":
    main()
