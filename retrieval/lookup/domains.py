"""Which domains L0's hint data carries: a vote of the best unfiltered evidence, with its reasons.

A match on one common title word is not evidence of a domain. The vote weighs the `top_n` best pages
of the unfiltered ranking (L1 sections with their page score, plus L0's title, keyword and entity
matches), each by `exp((score - best) / temperature)`, and splits a page's weight over its categories;
pages without a category vote for no domain. A domain is carried when its share of the vote reaches
`min_share` and beats the share of pages without a category; one carried domain becomes the L1 filter
(filters.decide_filter), several are ambiguous.

Measured on the Hugo natural questions (dev set, 155): the old rule (every matched entry's domain)
fired on 20% at precision 0.65; this vote (top 3, temperature 0.2, min share 0.1) fires on 17% at
0.96, and the answer lies outside the filter for 3.2% of questions. When L1 did not run (disabled,
failed, unavailable), only L0's matches vote.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

VoteBasis = Literal["ranking", "l0_matches", "none"]


@dataclass(frozen=True)
class Voter:
    """One page in the vote: where it came from, its score in the ranking and its domains."""

    source: str
    title: str
    score: float
    domains: tuple[str, ...]
    via: str


@dataclass(frozen=True)
class DomainEvidence:
    """One domain's share of the vote, its summed weight, and the pages that support it."""

    domain: str
    share: float
    weight: float
    accepted: bool
    supporting: tuple[Voter, ...]
    l0_coverage: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "share": round(self.share, 4), "weight": round(self.weight, 4),
                "l0_coverage": round(self.l0_coverage, 4), "accepted": self.accepted,
                "supporting": [{"source": v.source, "title": v.title, "score": round(v.score, 4), "via": v.via}
                               for v in self.supporting]}


@dataclass(frozen=True)
class DomainVote:
    """The vote: per-domain evidence (best first), the domains it carries, and the rule that decided."""

    basis: VoteBasis
    evidence: tuple[DomainEvidence, ...]
    top_n: int
    temperature: float
    min_share: float
    min_coverage: float
    uncategorised_share: float = 0.0

    @property
    def accepted(self) -> tuple[str, ...]:
        return tuple(e.domain for e in self.evidence if e.accepted)

    @property
    def rule(self) -> str:
        if self.basis == "none":
            return "no vote: no page was ranked and L0 matched nothing, so no domain is carried and no filter applies"
        voters = "pages of the unfiltered ranking" if self.basis == "ranking" else "of L0's matches"
        return (f"the top {self.top_n} {voters} vote, weight "
                f"exp((score - best) / {self.temperature:g}); a domain with at least {self.min_share:.0%} "
                f"of the vote is carried unless pages without a category hold as much, and so is the domain of "
                f"an L0 match whose fields hold at least {self.min_coverage:.0%} of the query's IDF mass; "
                f"exactly one carried "
                f"domain becomes the filter")

    def to_dict(self) -> dict[str, Any]:
        return {"basis": self.basis, "rule": self.rule, "top_n": self.top_n, "temperature": self.temperature,
                "min_share": self.min_share, "min_coverage": self.min_coverage,
                "uncategorised_share": round(self.uncategorised_share, 4),
                "domains": [e.to_dict() for e in self.evidence]}


def vote_domains(voters: Sequence[Voter], *, basis: VoteBasis, top_n: int, temperature: float,
                 min_share: float, l0_coverage: Mapping[str, float] | None = None,
                 min_coverage: float = 1.0) -> DomainVote:
    """Vote over the `top_n` best voters (already best first); `l0_coverage[domain]` is the best share of
    the query an L0 match of that domain covers. See the module docstring for the rule."""
    coverage = dict(l0_coverage or {})
    chosen = list(voters[:top_n])
    best = max((v.score for v in chosen), default=0.0)
    weights: dict[str, float] = {}
    support: dict[str, list[Voter]] = {}
    uncategorised, total = 0.0, 0.0
    for voter in chosen:
        weight = math.exp((voter.score - best) / temperature) if temperature > 0 else float(voter.score >= best)
        total += weight
        if not voter.domains:
            uncategorised += weight
            continue
        for domain in voter.domains:
            weights[domain] = weights.get(domain, 0.0) + weight / len(voter.domains)
            support.setdefault(domain, []).append(voter)
    total = total or 1.0

    def carried(domain: str) -> bool:
        voted = weights.get(domain, 0.0) / total >= min_share - 1e-12 and uncategorised / total < min_share
        return voted or coverage.get(domain, 0.0) >= min_coverage - 1e-12

    domains = sorted(set(weights) | {d for d, c in coverage.items() if c > 0},
                     key=lambda d: (-weights.get(d, 0.0), -coverage.get(d, 0.0), d))
    evidence = tuple(DomainEvidence(d, weights.get(d, 0.0) / total, weights.get(d, 0.0), carried(d),
                                    tuple(support.get(d, ())), coverage.get(d, 0.0)) for d in domains)
    return DomainVote(basis if chosen or coverage else "none", evidence, top_n, temperature, min_share,
                      min_coverage, uncategorised / total)
