"""Finding and reading knowledge-base files safely: inside the root only, one bad file never fails the load.

A Markdown load lists files without following symlinked folders, skips (and lists) symlinks that leave
the root or loop, anything that is not a regular file, files over MAX_FILE_BYTES, names that are not
valid UTF-8, binary content and text that is not UTF-8. A UTF-8 BOM is dropped and CRLF / CR line ends
become LF. Every skip is a LoadProblem naming the path (and line, where one applies).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from retrieval.kb.exclusions import is_excluded

MARKDOWN_SUFFIXES = (".md", ".markdown")
MAX_FILE_BYTES = 8 * 1024 * 1024  # a larger "Markdown" file is a dump or a mistake; it would dominate the index
BINARY_PROBE_BYTES = 8192


@dataclass(frozen=True)
class LoadProblem:
    """A file (or JSONL line) skipped by a lenient load, with the line to look at."""

    path: str
    line: int
    message: str


@dataclass(frozen=True)
class Listing:
    """What a walk of the root found: files to read (full paths, and their sources: relative POSIX names), files
    left out by prefixes, files skipped and why."""

    paths: tuple[str, ...]
    sources: tuple[str, ...]
    excluded: int
    problems: tuple[LoadProblem, ...]


class FileSkipped(ValueError):
    """One file cannot be used; `problem` says which and why."""

    def __init__(self, problem: LoadProblem) -> None:
        self.problem = problem
        super().__init__(f"{problem.path}:{problem.line}: {problem.message}")


def list_markdown(root: Path, prefixes: tuple[str, ...] = ()) -> Listing:
    """Markdown files under `root` in sorted order (a Path's order: component by component), never leaving it
    (symlinked folders are not followed). One `scandir` per folder: its entries say which are folders and
    links without a stat call, and the names stay strings (a Path, a link check and a relative_to per file were
    most of listing 6k files)."""
    real_root = root.resolve()
    files, problems, excluded = [], [], 0
    for folder, inside, dirs, names, links in _folders(os.fspath(root)):
        markdown_dirs = [d for d in dirs if d.lower().endswith(MARKDOWN_SUFFIXES) and d not in links]
        candidates = [n for n in names if not n.startswith(".") and n.lower().endswith(MARKDOWN_SUFFIXES)]
        for name in [*candidates, *(d for d in dirs if d in links), *markdown_dirs]:
            relative = inside + name
            valid = _valid_utf8(relative)
            source = relative if valid else _escaped(relative)
            if prefixes and is_excluded(source, prefixes):
                excluded += 1  # never read: counted from the listing only
                continue
            full = f"{folder}/{name}"
            if valid and name not in links and name not in dirs:  # a plain file: nothing to check
                files.append((relative.split("/"), full, source))
                continue
            problem = _unusable(Path(full), source, real_root, is_folder=name in dirs, valid_name=valid)
            if problem is not None:
                problems.append(problem)
            else:
                files.append((relative.split("/"), full, source))
    files.sort(key=lambda found: found[0])
    return Listing(tuple(f[1] for f in files), tuple(f[2] for f in files), excluded,
                   tuple(sorted(problems, key=lambda p: p.path)))


def _folders(top: str) -> Iterator[tuple[str, str, list[str], list[str], set[str]]]:
    """Each folder under `top` (hidden ones and symlinked ones not entered), as os.walk(top) lists it: its
    path, its path relative to `top` ("" or "a/b/"), its subfolders (links to folders included), its other
    names, and which of them are symlinks. An unreadable folder is passed over, as os.walk does."""
    stack = [(top, "")]
    while stack:
        folder, inside = stack.pop()
        try:
            with os.scandir(folder) as found:
                entries = list(found)
        except OSError:
            continue
        dirs, names, links = [], [], set()
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else names).append(entry.name)
            try:
                if entry.is_symlink():
                    links.add(entry.name)
            except OSError:
                pass
        dirs = [d for d in dirs if not d.startswith(".")]
        yield folder, inside, dirs, names, links
        stack.extend((f"{folder}/{d}", f"{inside}{d}/") for d in dirs if d not in links)


def relative_source(path: Path, root: Path) -> str:
    """The source name of `path`: relative to the root, POSIX slashes; undecodable bytes shown escaped."""
    relative = path.relative_to(root).as_posix()
    return relative if _valid_utf8(relative) else _escaped(relative)


def _escaped(relative: str) -> str:
    """A name with undecodable bytes (lone surrogates from os.walk) shown as backslash escapes."""
    return relative.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _valid_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # os.walk gives undecodable name bytes as lone surrogates
        return False
    return True


def _unusable(path: Path, source: str, real_root: Path, *, is_folder: bool,
              valid_name: bool) -> LoadProblem | None:
    """Why `path` cannot be read as a knowledge-base file, or None when it can be."""
    if not valid_name:
        return LoadProblem(source, 0, "file name is not valid UTF-8; rename the file")
    if os.path.islink(path):
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            return LoadProblem(source, 0, f"broken symlink or symlink loop ({type(exc).__name__}); skipped")
        if not target.is_relative_to(real_root):
            return LoadProblem(source, 0, "symlink points outside the knowledge base; skipped, not read")
        if is_folder or target.is_dir():
            return LoadProblem(source, 0, "symlinked folder not followed; link the files or copy the folder")
    elif is_folder:
        return LoadProblem(source, 0, "a folder named like a Markdown file; its contents are read, not it")
    return None


def read_regular_file(path: Path, source: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; never blocks on a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise FileSkipped(LoadProblem(source, 0, f"cannot open: {exc.strerror or exc}")) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise FileSkipped(LoadProblem(source, 0, "not a regular file (a folder, FIFO or device); skipped"))
        if info.st_size > max_bytes:
            raise FileSkipped(LoadProblem(source, 0, f"file is {info.st_size:,} bytes, over the "
                                                     f"{max_bytes:,}-byte limit; split it"))
        try:
            return handle.read(info.st_size + 1)  # st_size bounded above: never read past the limit by much
        except OSError as exc:
            raise FileSkipped(LoadProblem(source, 0, f"cannot read: {exc.strerror or exc}")) from None


def decode_text(raw: bytes, source: str) -> str:
    """UTF-8 text of `raw` (BOM dropped, CRLF and CR as LF); FileSkipped for binary or non-UTF-8 bytes."""
    if b"\0" in raw[:BINARY_PROBE_BYTES]:
        raise FileSkipped(LoadProblem(source, 0, "binary content (NUL bytes), not Markdown text; skipped"))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise FileSkipped(LoadProblem(source, line, f"not UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as "
                                                    f"UTF-8")) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")
