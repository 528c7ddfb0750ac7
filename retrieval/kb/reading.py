"""Reading a knowledge base's files into entries, and recording what was read (retrieval/kb/sources.py).

Given what an earlier load of the same base read (`Prior`), a file or JSONL line that has not changed is not
parsed again: its place in the result names the earlier entry it gave (an int), so the index can keep that
entry's rows. A full load is the same reading with no prior, so both give entries in the same order, the
same problems and the same fingerprint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from retrieval.kb.entries import jsonl_entry, parse_markdown_entry
from retrieval.kb.exclusions import is_excluded_id
from retrieval.kb.files import FileSkipped, LoadProblem, decode_text, list_markdown, read_regular_file
from retrieval.kb.jsonl import duplicate_problem, parse_record, record_lines
from retrieval.kb.markdown import FrontMatterError
from retrieval.kb.model import Entry, KnowledgeBaseError
from retrieval.kb.sources import SourceTable, digest, digest_hex, stat_line


@dataclass(frozen=True)
class Prior:
    """What an earlier load of the same base (same options) read: its source table and its problems."""

    table: SourceTable
    problems: tuple[LoadProblem, ...]


@dataclass(frozen=True)
class Reading:
    """A load before it becomes a base: entries in order, each an Entry parsed now or (an int) the position
    of the prior load's entry that is unchanged; the problems, fingerprint and counts a base carries; what
    was read (the source table) and how many files or lines were parsed now."""

    items: tuple[Entry | int, ...]
    problems: tuple[LoadProblem, ...]
    fingerprint: str
    files_seen: int
    files_excluded: int
    table: SourceTable
    parsed: int


def options_bytes(exclude_fields: Iterable[str], prefixes: tuple[str, ...], max_words: int) -> bytes:
    """The load options as the fingerprint hashes them (no prefixes hashes as before exclusions existed)."""
    options = (sorted(exclude_fields), max_words, *((list(prefixes),) if prefixes else ()))
    return repr(options).encode()


def file_bytes(file: Path, source: str) -> tuple[bytes, LoadProblem | None]:
    """A file's bytes, read once for both the fingerprint and the load; or a marker and why it is unreadable."""
    try:
        return read_regular_file(file, source), None
    except FileSkipped as exc:
        return b"\0unreadable:" + exc.problem.message.encode(), exc.problem


def jsonl_bytes(path: Path) -> bytes:
    """The bytes of a JSONL corpus (one file: no size limit beyond memory; a FIFO or a folder is refused)."""
    try:
        return read_regular_file(path, path.name, max_bytes=1 << 40)
    except FileSkipped as exc:
        raise KnowledgeBaseError(f"cannot read the JSONL corpus {path}: {exc.problem.message}") from None


def fingerprint_part(source: str, content_digest: tuple[int, int]) -> bytes:
    """What a Markdown file adds to the base's fingerprint: its name and the digest of its bytes."""
    return source.encode("utf-8", "surrogateescape") + b"\0" + digest_hex(content_digest).encode() + b"\0"


def read_markdown(root: Path, excluded: frozenset[str], prefixes: tuple[str, ...], max_words: int,
                  prior: Prior | None = None, stats: Mapping[str, bytes] | None = None) -> Reading:
    """The Markdown files under `root` as entries, parsing only those the prior did not read as they are.
    `stats`: stat lines already taken, by full path (the cache key's: retrieval/index/build.py)."""
    listing = list_markdown(root, prefixes)
    fingerprint = hashlib.sha256(options_bytes(excluded, prefixes, max_words))
    known = {name: i for i, name in enumerate(prior.table.name_list())} if prior else {}
    earlier: dict[str, list[LoadProblem]] = {}
    for problem in prior.problems if prior else ():
        earlier.setdefault(problem.path, []).append(problem)
    items: list[Entry | int] = []
    problems, rows, parsed = list(listing.problems), [], 0
    for full, source in zip(listing.paths, listing.sources, strict=True):
        line = _stat_of(full, source, stats)
        i = known.get(source)
        raw = unreadable = None
        if i is not None and prior is not None and prior.table.stats[i] == line:
            pair = _pair(prior.table, i)
        else:
            raw, unreadable = file_bytes(Path(full), source)
            pair = digest(raw)
            if i is not None and prior is not None and pair != _pair(prior.table, i):
                i = None
        fingerprint.update(fingerprint_part(source, pair))
        if i is not None and prior is not None:  # unchanged: the entry (or the problems) it gave before
            entry = int(prior.table.entries[i])
            rows.append((source, line, pair, len(items) if entry >= 0 else -1))
            if entry >= 0:
                items.append(entry)
            else:
                problems.extend(earlier.get(source, ()))
            continue
        parsed += 1
        found = _parse_markdown(source, raw, unreadable, excluded, max_words)
        rows.append((source, line, pair, len(items) if isinstance(found, Entry) else -1))
        if isinstance(found, Entry):
            items.append(found)
        else:
            problems.append(found)
    return Reading(tuple(items), tuple(problems), fingerprint.hexdigest(), len(listing.paths) + len(listing.problems),
                   listing.excluded, SourceTable.of(rows), parsed)


def _stat_of(full: str, source: str, stats: Mapping[str, bytes] | None) -> str:
    """The file's stat line, taken before its bytes are read (a later edit shows as a changed line): the one the
    cache key's walk took when it is this file's, else a new one."""
    taken = stats.get(full) if stats is not None else None
    line = taken.decode("utf-8", "surrogatepass") if taken is not None else ""
    return line if line.startswith(f"{source}|") else stat_line(full, source).decode("utf-8", "surrogatepass")


def _parse_markdown(source: str, raw: bytes | None, unreadable: LoadProblem | None, excluded: frozenset[str],
                    max_words: int) -> Entry | LoadProblem:
    if unreadable is not None or raw is None:
        return unreadable or LoadProblem(source, 0, "not read")
    try:
        return parse_markdown_entry(source, decode_text(raw, source), excluded, max_words)
    except FrontMatterError as exc:
        return LoadProblem(exc.path, exc.line, exc.problem)
    except FileSkipped as exc:
        return exc.problem


def read_jsonl(path: Path, excluded: frozenset[str], prefixes: tuple[str, ...], max_words: int,
               prior: Prior | None = None) -> Reading:
    """The records of a JSONL corpus as entries, parsing only the lines the prior did not read as they are."""
    raw = jsonl_bytes(path)
    fingerprint = hashlib.sha256(options_bytes(excluded, prefixes, max_words) + raw).hexdigest()
    known = {(h, low): i for i, (h, low) in enumerate(prior.table.digests.tolist())} if prior else {}
    items: list[Entry | int] = []
    problems, rows, first_line = [], [], {}
    skipped = parsed = 0
    for number, line in record_lines(raw):
        pair = digest(line)
        i = known.get(pair)
        record = None
        if i is not None and prior is not None:
            record_id, earlier = prior.table.names[i], int(prior.table.entries[i])
        else:
            parsed += 1
            try:
                record = parse_record(line)
            except ValueError as exc:
                problems.append(LoadProblem(path.name, number, str(exc)))
                continue
            record_id, earlier = str(record["_id"]), -1
        if record_id in first_line:
            problems.append(duplicate_problem(path.name, number, record_id, first_line[record_id]))
            continue
        first_line[record_id] = number
        if prefixes and is_excluded_id(record_id, prefixes):
            skipped += 1
            rows.append((record_id, "", pair, -1))
            continue
        rows.append((record_id, "", pair, len(items)))
        items.append(earlier if record is None else jsonl_entry(record, excluded, max_words))
    return Reading(tuple(items), tuple(problems), fingerprint, len(items) + len(problems), skipped,
                   SourceTable.of(rows), parsed)


def _pair(table: SourceTable, i: int) -> tuple[int, int]:
    high, low = table.digests[i].tolist()
    return int(high), int(low)
