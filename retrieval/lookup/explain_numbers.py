"""The numbers and words of an explanation (retrieval.lookup.explain): a page's L1 standing as numbers, and the
gap to the last returned block as the parts it trails on."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from retrieval.config import LookupConfig
from retrieval.kb.model import KnowledgeBase
from retrieval.l1.standing import PageStanding
from retrieval.lookup.evidence import ScorePart


def shortfall_words(parts: Sequence[ScorePart], last: Sequence[ScorePart], gap: float) -> str:
    """The smallest change that would have let the page in, in words: the gap, and the parts it trails on."""
    mine = {p.part: p.contribution for p in parts}
    theirs = {p.part: p.contribution for p in last}
    behind = sorted(((theirs.get(k, 0.0) - mine.get(k, 0.0), k) for k in set(mine) | set(theirs)), reverse=True)
    trailing = [f"{name} part {diff:.3f} short" for diff, name in behind if diff > 1e-6][:2]
    said = f"; it trails most on the {' and the '.join(trailing)}" if trailing else ""
    return f"{gap:.3f} short of it in total{said}"


def standing_numbers(standing: PageStanding, config: LookupConfig) -> dict[str, Any]:
    return {"best_section": standing.best_section, "best_score": round(standing.best_score, 6),
            "lexical": round(standing.lexical, 6), "lsa": None if standing.lsa is None else round(standing.lsa, 6),
            "page_score": round(standing.page_score, 6), "pooling_score": round(standing.fused, 6),
            "l1_rank": standing.rank, "pages_ranked": standing.pages_ranked, "l1_min_score": config.l1_min_score,
            "l1_pool": config.l1_pool}


def number_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def absent_reason(kb: KnowledgeBase, source: str) -> tuple[str, dict[str, Any]]:
    """Why `kb` does not hold `source`: the exclusion prefix, the load problem, or absent (with close names)."""
    prefix = next((p for p in kb.excluded_paths if source == p or source.startswith(p.rstrip("/") + "/")), None)
    if prefix is not None:
        return f"excluded by the prefix {prefix!r} (--exclude)", {"excluded_by": prefix}
    problem = next((p for p in kb.problems if p.path == source or p.path.endswith("/" + source)), None)
    if problem is not None:
        return (f"skipped when the knowledge base was loaded: {problem.path}:{problem.line}: {problem.message}",
                {"skipped": {"path": problem.path, "line": problem.line, "message": problem.message}})
    close = difflib.get_close_matches(source, [e.source for e in kb.entries], n=3, cutoff=0.75)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"no page {source!r} in the knowledge base{hint}", {"close_matches": close}
