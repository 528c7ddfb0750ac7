"""The numbers and words of an explanation (retrieval.lookup.explain): a page's L1 standing as numbers, and the
gap to the last returned block as the parts it trails on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrieval.config import LookupConfig
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
