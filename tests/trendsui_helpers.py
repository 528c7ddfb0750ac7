"""Trace files for the Trends page's tests: production lookups over four weeks with a planted change in the last
week (abstentions up from about 5% to about a third, and a new topic of unanswerable questions about Microsoft
Teams, which the sample knowledge base has no page on), or the same weeks without it.

Rows go through the real trace writer (`TraceStore.record_many`), so every column the writer derives from a
lookup's result (the relevance level, confidence and abstention among them) is filled as a real lookup fills
it. Times are counted back from `now` (default: the current hour), so the page's default span and window
(counted back from the current time) hold them. Seeded: the same arguments build the same rows.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from retrieval import TraceStore
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces import pack

ANSWERED = ("install skylark server on linux", "docker compose setup", "maintenance windows and silences",
            "dashboard variables", "public status pages", "rotate an API token", "download invoices",
            "slack integration", "two-factor authentication", "backup and restore")
# the planted topic: the sample knowledge base has no page on Microsoft Teams
TEAMS = ("how do I send alerts to Microsoft Teams", "connect skylark to a Microsoft Teams channel",
         "Microsoft Teams notification channel setup", "post alert notifications in Microsoft Teams",
         "Microsoft Teams webhook for alerts", "route on-call alerts to Microsoft Teams")
TEAMS_WORD = "Microsoft Teams"
NOISE = ("what is the capital of France", "weather tomorrow in Berlin", "recipe for banana bread",
         "who won the football match", "translate hello into Spanish")


@dataclass(frozen=True)
class Planted:
    """What a built file holds: its path, the moment its times are counted back from, and its row counts."""

    path: Path
    now: datetime
    rows: int
    teams_questions: int


def hour(now: datetime | None = None) -> datetime:
    """`now` (default: the current time) as naive UTC, cut to the hour."""
    moment = now or datetime.now(timezone.utc)
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment.replace(minute=0, second=0, microsecond=0)


def _call(query: str, at: datetime, rng: random.Random, *, level: str, index: int, latency: float,
          l1_status: str = "ok") -> ToolInvocation:
    """One production lookup as the writer records it: relevance, layer, filter, L1 status and counts."""
    abstain = level in ("low", "none")
    confidence = {"high": 0.85, "medium": 0.4, "low": 0.12, "none": 0.0}[level] + rng.uniform(-0.05, 0.05)
    evidence = 0 if level == "none" else 3
    layer = "none" if level == "none" else ("L0" if l1_status != "ok" else "L0+L1")
    category = rng.choice(("Alerting", "Billing", "Security"))
    details = {"retrieval_layer": layer, "candidate_count": evidence, "evidence_count": evidence,
               "l0": {"match_count": evidence}, "l1": {"status": l1_status, "candidate_count": evidence},
               "filter": {"decision": "applied", "applied": {"category": category}},
               "relevance": {"level": level, "semantic_support": not abstain, "basis": "planted",
                             "confidence": round(max(confidence, 0.0), 4), "abstain": abstain}}
    return ToolInvocation("lookup_knowledge", query, {"query": query}, "ok", latency, {}, details,
                          knowledge_base={"kb_path": "/kb/sample"}, id=f"planted-{index:05d}",
                          created_at=at.replace(tzinfo=timezone.utc))


def build(path: Path, *, now: datetime | None = None, planted: bool = True, unanswered: float = 0.05,
          seed: int = 53) -> Planted:
    """Four weeks of production lookups (30 a day) ending at `now`, `unanswered` of them off-topic questions the
    base cannot answer; with `planted`, the last week adds 119 abstained questions about Microsoft Teams and 21
    off-topic ones, and L1 fails more often."""
    rng, end = random.Random(seed), hour(now)
    calls: list[ToolInvocation] = []
    for day in range(28, 0, -1):
        last_week = day <= 7
        for n in range(30):
            at = end - timedelta(days=day) + timedelta(minutes=n * 47 + rng.randrange(40))
            missed = rng.random() < unanswered
            query = rng.choice(NOISE) if missed else rng.choice(ANSWERED)
            level = rng.choice(("low", "none")) if missed else rng.choice(("high", "high", "medium"))
            failed = rng.random() < (0.15 if planted and last_week else 0.02)
            calls.append(_call(query, at, rng, level=level, index=len(calls), latency=rng.gauss(20, 3),
                               l1_status="failed" if failed and level != "none" else "ok"))
        if planted and last_week:
            for n in range(20):  # 7 x 20 = 140 more abstentions, 120 of them the new topic
                at = end - timedelta(days=day) + timedelta(minutes=n * 70 + rng.randrange(60))
                query = rng.choice(NOISE) if n >= 17 else f"{rng.choice(TEAMS)}{rng.choice(('', '?', ' please'))}"
                calls.append(_call(query, at, rng, level=rng.choice(("low", "none")), index=len(calls),
                                   latency=rng.gauss(24, 3)))
    calls.sort(key=lambda c: c.created_at)  # the writer stores rows in the order they come, oldest first
    with TraceStore(path) as store:  # closed: every row is in tool_invocation when a page opens the file
        store.record_many(calls)
    if not pack(path, timeout=60):  # the rows leave DuckDB's log for the file itself, which the tests copy
        raise RuntimeError(f"could not pack {path}")
    teams = sum(TEAMS_WORD in c.query for c in calls)
    return Planted(Path(path), end, len(calls), teams)
