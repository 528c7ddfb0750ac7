"""Why L0's hints carried the domain they did: the vote's evidence, the outcome in plain words, the widening.

Reads `retrieval_details["l0"]["domain_evidence"]` and `retrieval_details["filter"]`; traces recorded before
the domain vote lack these keys, so every reader here treats a missing key as "not recorded".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

NUMBERS = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five"}
L1_NOT_RUN = ("failed", "timeout", "disabled", "unavailable")
COLUMNS = ["domain", "vote share", "best score", "L0 coverage", "accepted", "supporting pages"]


def _pct(value: Any) -> str:
    """A 0..1 share as a whole percentage; '—' when not recorded."""
    return f"{float(value):.0%}" if isinstance(value, int | float) else "—"


def _evidence(details: Mapping[str, Any]) -> Mapping[str, Any]:
    """The recorded domain vote, or {} for traces that predate it."""
    value = (details.get("l0") or {}).get("domain_evidence")
    return value if isinstance(value, Mapping) else {}


def _domains(evidence: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [d for d in evidence.get("domains") or [] if isinstance(d, Mapping)]


def _carried(domain: Mapping[str, Any], evidence: Mapping[str, Any]) -> str:
    """'billing, 94% of the vote, best page score 0.27', plus the L0 coverage when that is what carried it: a
    share says nothing of how weak the pages behind it were."""
    text = f"{domain.get('domain')}, {_pct(domain.get('share'))} of the vote"
    best = _best_score(domain)
    if best is not None:
        text += f", best page score {best:.2f}"
    coverage, floor = domain.get("l0_coverage"), evidence.get("min_coverage")
    if isinstance(coverage, int | float) and isinstance(floor, int | float) and coverage >= floor:
        text += f"; an L0 match covers {_pct(coverage)} of the query"
    return text


def _no_domain(evidence: Mapping[str, Any]) -> str:
    """Why nothing was carried: uncategorised pages, too small shares, or nothing voted at all."""
    if not evidence:
        return "No domain carried → no filter"
    if evidence.get("basis") == "none":
        return "Nothing voted (no ranked pages, no L0 matches) → no domain carried"
    uncategorised, floor = evidence.get("uncategorised_share") or 0.0, evidence.get("min_share") or 0.0
    if uncategorised > 0 and uncategorised >= floor:
        return f"Pages without a category hold {_pct(uncategorised)} of the vote → no domain carried"
    return f"No domain reached {_pct(floor)} of the vote → no domain carried"


def outcome_line(details: Mapping[str, Any]) -> str:
    """The filter decision in plain words, from the recorded vote when there is one."""
    decision = details.get("filter") or {}
    kind, evidence = decision.get("decision"), _evidence(details)
    accepted = [d for d in _domains(evidence) if d.get("accepted")]
    names = list(decision.get("l0_domains") or []) or [str(d.get("domain")) for d in accepted]
    if kind == "caller":
        return f"Caller's category wins → filter `{json.dumps(decision.get('applied'))}`"
    if kind == "disabled":
        return "L0 filter disabled → no filter"
    if kind == "applied":
        what = _carried(accepted[0], evidence) if accepted else ", ".join(names)
        widened = " (then widened to every category)" if decision.get("widened") else ""
        return f"One domain carried ({what}) → filter applied{widened}"
    if kind == "skipped_ambiguous":
        count = NUMBERS.get(len(names), str(len(names)))
        return f"{count} domains carried ({', '.join(names)}) → ambiguous, no filter"
    if kind == "skipped_no_domain":
        return _no_domain(evidence)
    return f"Filter decision `{kind}`"


def evidence_table(details: Mapping[str, Any]) -> pd.DataFrame:
    """One row per domain that received votes or L0 coverage: share, coverage, accepted, supporting titles."""
    rows = [[d.get("domain"), _pct(d.get("share")), _score_text(_best_score(d)), _pct(d.get("l0_coverage")),
             "yes" if d.get("accepted") else "no", _titles(d.get("supporting") or [])]
            for d in _domains(_evidence(details))]
    return pd.DataFrame(rows, columns=COLUMNS)


def _best_score(domain: Mapping[str, Any]) -> float | None:
    """The best score of the pages that voted for a domain (None: no scored page voted)."""
    scores = [s.get("score") for s in domain.get("supporting") or [] if isinstance(s, Mapping)]
    numbers = [float(v) for v in scores if isinstance(v, int | float)]
    return max(numbers) if numbers else None


def _score_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _titles(supporting: Sequence[Any]) -> str:
    """Supporting pages by title (source when untitled), in vote order."""
    return ", ".join(str(s.get("title") or s.get("source")) for s in supporting if isinstance(s, Mapping)) or "—"


def rule_caption(details: Mapping[str, Any]) -> str:
    """The vote's rule sentence and thresholds; empty for traces recorded before the vote."""
    evidence = _evidence(details)
    if not evidence:
        return ""
    if evidence.get("basis") == "none":  # no vote took place (traces before issue 49 said "the none vote")
        return "No vote: no page was ranked and L0 matched nothing, so no domain could be carried."
    basis = str(evidence.get("basis", "—")).replace("_", " ")
    thresholds = (f"basis {basis} · top {evidence.get('top_n', '—')} · temperature {evidence.get('temperature', '—')}"
                  f" · min share {_pct(evidence.get('min_share'))} · min coverage {_pct(evidence.get('min_coverage'))}"
                  f" · uncategorised {_pct(evidence.get('uncategorised_share'))}")
    return f"Rule: {evidence.get('rule', '—')}.  \n{thresholds}"


def widen_note(decision: Mapping[str, Any]) -> str | None:
    """The widening guard's story when it fired: the filter sent, both best scores and the ratio."""
    if not decision.get("widened"):
        return None
    best = decision.get("best_scores") or {}
    applied = decision.get("applied") or {}
    target = ", ".join(str(v) for v in applied.values()) or "the L0 domain"
    rule = str(decision.get("widen_rule") or "")
    ratio = decision.get("widen_ratio")
    if ratio is None:  # traces written before `widen_ratio` was recorded: read it from the rule sentence
        ratio = rule.split("below ", 1)[1].split(" ", 1)[0] if "below " in rule else "the widen ratio"
    elif isinstance(ratio, (int, float)):
        ratio = f"{ratio:g}"
    return (f"The filter to {target} was sent first, but its best score ({_score(best.get('filtered'))}) was "
            f"below {ratio} × the unfiltered best ({_score(best.get('unfiltered'))}), so the lookup widened "
            f"to every category.")


def effect_note(details: Mapping[str, Any]) -> str | None:
    """What the applied filter changed against the unfiltered ranking (none ran, or older traces: None)."""
    effect = details.get("filter_effect")
    if not isinstance(effect, Mapping):
        return None
    if not effect.get("changed"):
        return "The filter changed nothing returned: the unfiltered ranking's top results were already in it."
    left, came = effect.get("removed_sources"), effect.get("added_sources")
    if isinstance(left, list) and isinstance(came, list):  # traces before the names were recorded have counts only
        return (f"The filter changed the results from rank {effect.get('first_changed_rank')}: "
                f"{_named(left, 'left them (other categories)')}; {_named(came, 'came in')}.")
    return (f"The filter changed the results from rank {effect.get('first_changed_rank')}: "
            f"{effect.get('removed', 0)} source(s) from other categories left them and {effect.get('added', 0)} "
            f"came in.")


def _named(sources: list[Any], verb: str) -> str:
    """'2 sources left them: `a`, `b`' (or 'none left them')."""
    if not sources:
        return f"none {verb}"
    listed = ", ".join(f"`{s}`" for s in sources)
    return f"{len(sources)} source{'s' if len(sources) != 1 else ''} {verb}: {listed}"


def _score(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else "none"


def filter_sent(decision: Mapping[str, Any], l1: Mapping[str, Any]) -> str:
    """What the filter meant for L1, given whether L1 ran: sent, widened, or no L1 at all."""
    applied, status = decision.get("applied"), str(l1.get("status"))
    if status in L1_NOT_RUN:
        note = f"L1 {status}: no search ran"
        return f"Filter `{json.dumps(applied)}` not used: {note}" if applied else f"No filter: {note}"
    if not applied:
        return "Exact filter sent to L1: `null` (no filter: L1 searched every category)"
    widened = " (then widened: L1 answered from every category)" if decision.get("widened") else ""
    return f"Exact filter sent to L1: `{json.dumps(applied)}`{widened}"


def why_domain(details: Mapping[str, Any], *, key: str | None = None) -> None:
    """The full "Why this domain" panel: outcome, per-domain evidence table, rule, widening warning."""
    st.markdown(f"**Why this domain:** {outcome_line(details)}")
    table = evidence_table(details)
    if not table.empty:  # the supporting pages wrap in a wide column rather than being cut off
        st.dataframe(table, hide_index=True, key=key, row_height=60, column_config={
            "supporting pages": st.column_config.TextColumn(width="large"),
            "best score": st.column_config.TextColumn(help="the best score of the pages that voted for it")})
    caption = rule_caption(details)
    matched = (details.get("l0") or {}).get("match_domains")
    st.caption(caption or "No domain evidence in this trace (recorded before the domain vote).")
    if matched is not None:
        st.caption(f"Domains of every L0 match: {', '.join(f'`{d}`' for d in matched) or '—'}")
    note = widen_note(details.get("filter") or {})
    if note:
        st.warning(note)
    effect = effect_note(details)
    if effect:
        st.caption(effect)


def why_domain_compact(details: Mapping[str, Any]) -> None:
    """The same panel in a few lines, for side-by-side runs and trace rows (no widget, so no key clash)."""
    st.markdown(f"Why this domain: {outcome_line(details)}")
    votes = [f"`{d.get('domain')}` {_pct(d.get('share'))} vote · {_pct(d.get('l0_coverage'))} cover · "
             f"{'✓' if d.get('accepted') else '✗'}" for d in _domains(_evidence(details))]
    if votes:
        st.caption(" | ".join(votes))
    note = widen_note(details.get("filter") or {})
    if note:
        st.warning(note)
