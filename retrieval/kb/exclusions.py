"""Path prefixes left out of a knowledge base: validated once, then matched against source identities.

A prefix is relative to the knowledge-base root (`news`, `news/`, `about/features.md`). A Markdown file
is excluded when its relative source equals the prefix or lies under it (`news` excludes `news/a.md`,
not `newsletter.md`). For JSONL corpora the source is the record's `_id`, which has no folders, so a
prefix there is a plain string prefix of the `_id` (`news` excludes `news-1` and `newsletter`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath, PureWindowsPath


class ExcludePathError(ValueError):
    """An exclude prefix is not a plain relative path (absolute, `..`, empty, or a glob pattern)."""


GLOB_CHARACTERS = frozenset("*?")


def normalize_prefixes(prefixes: Iterable[str] | str) -> tuple[str, ...]:
    """Validated, normalised (no `./`, no trailing `/`), deduplicated and sorted prefixes.

    A single string is read as a comma-separated list, so `"news,showcase"` and `["news", "showcase"]`
    are the same. Raises ExcludePathError naming the bad prefix when one is absolute, contains `..`,
    is empty (an empty prefix would exclude everything), or is a glob pattern (`*`, `?`: prefixes match
    literally, so a pattern would silently match nothing).
    """
    items = prefixes.split(",") if isinstance(prefixes, str) else list(prefixes)
    return tuple(sorted({_normalize(str(item)) for item in items if str(item).strip()}))


def _normalize(prefix: str) -> str:
    text = prefix.strip().replace("\\", "/")
    if text.startswith("/") or PureWindowsPath(prefix.strip()).is_absolute():
        raise ExcludePathError(f"exclude prefix {prefix!r} is absolute; give a path relative to the "
                               f"knowledge-base root, e.g. 'news' or 'about/features.md'")
    parts = [p for p in PurePosixPath(text).parts if p != "."]
    if ".." in parts:
        raise ExcludePathError(f"exclude prefix {prefix!r} contains '..'; give a path inside the "
                               f"knowledge-base root, e.g. 'news'")
    if not parts:
        raise ExcludePathError(f"exclude prefix {prefix!r} is empty; it would exclude every file")
    if GLOB_CHARACTERS & set(text):
        raise ExcludePathError(f"exclude prefix {prefix.strip()!r} is a glob pattern; give folders or files relative "
                               f"to the knowledge-base root, e.g. 'news' (it leaves out everything under news/)")
    return "/".join(parts)


def is_excluded(source: str, prefixes: Iterable[str]) -> bool:
    """True when a Markdown source (relative POSIX path) equals a prefix or lies under one."""
    return any(source == prefix or source.startswith(prefix + "/") for prefix in prefixes)


def is_excluded_id(record_id: str, prefixes: Iterable[str]) -> bool:
    """True when a JSONL record `_id` starts with a prefix (plain string prefix: ids have no folders)."""
    return any(record_id.startswith(prefix) for prefix in prefixes)
