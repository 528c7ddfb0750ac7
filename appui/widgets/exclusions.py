"""The sidebar's excluded folders: path prefixes the app's index leaves out, in the syntax of `--exclude`
(comma-separated, relative to the knowledge-base root: `news` leaves out `news/` and everything under it).

Checked here so a bad prefix is a message in the sidebar, never a traceback; the index then stays closed
rather than silently including what the analyst meant to leave out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from retrieval.kb import KnowledgeBaseError, exclude_prefixes

FOLDERS_SHOWN = 24  # top-level folders named under the field; more are summarised as a count


@dataclass(frozen=True)
class Exclusions:
    """The prefixes to leave out (normalised, sorted, deduplicated), or why the typed text cannot be used."""

    prefixes: tuple[str, ...] = ()
    error: str | None = None


def parse(text: str) -> Exclusions:
    """`text` read as `--exclude` reads it; an absolute path, `..`, or a glob pattern gives an error instead."""
    try:
        prefixes = exclude_prefixes(text or "")
    except KnowledgeBaseError as exc:
        return Exclusions(error=str(exc))
    return Exclusions(prefixes)


def markdown_root(kb_path: str | Path) -> Path | None:
    """The folder whose sub-paths the prefixes name; None for a BEIR corpus (its prefixes are `_id` prefixes)."""
    root = Path(kb_path)
    return root if root.is_dir() and not (root / "corpus.jsonl").is_file() else None


def top_folders(kb_path: str | Path) -> list[str]:
    """The knowledge base's top-level folders (not hidden), sorted; empty for a corpus.jsonl or a missing path."""
    root = markdown_root(kb_path)
    if root is None:
        return []
    try:
        return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def sidebar_input(kb_path: str | Path) -> Exclusions:
    """The keyed text field (`kb_exclude`), its error or warnings, and the base's folders to pick from."""
    st.text_input("Excluded folders", key="kb_exclude", placeholder="e.g. news,showcase",
                  help="Comma-separated paths relative to the knowledge-base root, as `--exclude` takes them: "
                       "`news` leaves out news/ and everything under it (not newsletter.md). For a corpus.jsonl "
                       "they are `_id` prefixes. The index is built (and cached) per set of exclusions.")
    parsed = parse(str(st.session_state.get("kb_exclude") or ""))
    if parsed.error:
        st.error(f"Excluded folders: {parsed.error}")
        return parsed
    root = markdown_root(kb_path)
    missing = [p for p in parsed.prefixes if root is not None and not (root / p).exists()]
    if missing:
        st.warning("Nothing in this knowledge base is under " + ", ".join(f"`{p}`" for p in missing)
                   + "; check the spelling (paths are relative to its root).")
    folders = top_folders(kb_path)
    if folders:
        more = f" and {len(folders) - FOLDERS_SHOWN} more" if len(folders) > FOLDERS_SHOWN else ""
        st.caption("Folders: " + " ".join(f"`{name}`" for name in folders[:FOLDERS_SHOWN]) + more)
    return parsed
