"""A block's score as the sum of its parts (L1 lexical, LSA and static, page, L0) with their weights, and two
blocks' parts side by side: the app's core question is why one block ranks above another."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

NOT_RECORDED = "score parts not recorded (this lookup predates them)"


def parts_of(block: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The block's `score_parts` that are well formed (a stored trace may hold anything)."""
    parts = block.get("score_parts")
    if not isinstance(parts, list):
        return []
    return [p for p in parts if isinstance(p, Mapping) and all(isinstance(p.get(k), int | float)
                                                                 for k in ("value", "weight", "contribution"))]


def parts_line(block: Mapping[str, Any]) -> str:
    """'score 1.119 = L1 lexical 0.373 (0.414 × 0.9) + … + page 0.500 (1.000 × 0.5)', in one line."""
    parts = parts_of(block)
    score = block.get("score")
    total = f"{score:.3f}" if isinstance(score, int | float) else "—"
    if not parts:
        return f"score {total}: {NOT_RECORDED}"
    terms = [f"{p.get('part')} {p['contribution']:.3f} ({p['value']:.3f} × {p['weight']:g})" for p in parts]
    return f"score {total} = " + " + ".join(terms)


def comparison_table(first: Mapping[str, Any], second: Mapping[str, Any]) -> pd.DataFrame:
    """One row per part (and a total): each block's value, weight and contribution, and the difference in
    contribution (first minus second), so the rows say where the gap between the two scores comes from."""
    by_part: dict[str, dict[str, Any]] = {}
    for side, block in (("A", first), ("B", second)):
        for part in parts_of(block):
            row = by_part.setdefault(str(part.get("part")), {"part": str(part.get("part"))})
            row[f"{side} value"] = round(part["value"], 3)
            row[f"{side} weight"] = part["weight"]
            row[f"{side} contribution"] = round(part["contribution"], 3)
    rows = list(by_part.values())
    for row in rows:
        row["A − B"] = round(row.get("A contribution", 0.0) - row.get("B contribution", 0.0), 3)
    score_a, score_b = _score(first), _score(second)
    rows.append({"part": "score", "A contribution": round(score_a, 3), "B contribution": round(score_b, 3),
                 "A − B": round(score_a - score_b, 3)})
    columns = ["part", "A value", "A weight", "A contribution", "B value", "B weight", "B contribution", "A − B"]
    table = pd.DataFrame(rows).reindex(columns=columns)
    for column in columns[1:-1]:  # a part one block lacks reads "—", not None
        table[column] = [f"{v:g}" if isinstance(v, int | float) and v == v else "—" for v in table[column]]
    return table


def gap_sentence(first: Mapping[str, Any], second: Mapping[str, Any], labels: tuple[str, str]) -> str:
    """'#1 scores 0.206 above #2; most of the gap is page (+0.105), then L1 lexical (+0.073)'."""
    table = comparison_table(first, second)
    gap = _score(first) - _score(second)
    parts = table[table["part"] != "score"].sort_values("A − B", key=lambda s: -s.abs())
    named = [f"{row['part']} ({row['A − B']:+.3f})" for _, row in parts.iterrows() if abs(row["A − B"]) >= 0.0005]
    where = "above" if gap > 0 else "below" if gap < 0 else "level with"
    head = f"{labels[0]} scores {abs(gap):.3f} {where} {labels[1]}" if gap else f"{labels[0]} ties {labels[1]}"
    return head + (f"; by part: {', '.join(named)}" if named else "")


def compare_two_blocks(blocks: Sequence[Mapping[str, Any]], *, key: str) -> None:
    """Pick two blocks and see their parts side by side (nothing to pick with fewer than two)."""
    if len(blocks) < 2:
        return
    with st.expander("Compare two blocks' scores"):
        labels = [f"#{rank} {block.get('title') or block.get('source')} ({block.get('source')})"
                  for rank, block in enumerate(blocks, 1)]
        shown_for = f"{key}_parts_for"  # a new result starts the pickers at #1 and #2 with its own blocks' names
        if st.session_state.get(shown_for) != labels:
            for side in ("a", "b"):
                st.session_state.pop(f"{key}_parts_{side}", None)
            st.session_state[shown_for] = labels
        left, right = st.columns(2)
        first = labels.index(left.selectbox("Block A", labels, index=0, key=f"{key}_parts_a"))
        second = labels.index(right.selectbox("Block B", labels, index=1, key=f"{key}_parts_b"))
        if not (parts_of(blocks[first]) and parts_of(blocks[second])):
            st.info(f"Cannot compare: {NOT_RECORDED}.")
            return
        st.markdown(gap_sentence(blocks[first], blocks[second], (f"#{first + 1}", f"#{second + 1}")))
        st.dataframe(comparison_table(blocks[first], blocks[second]), hide_index=True, key=f"{key}_parts_table")


def _score(block: Mapping[str, Any]) -> float:
    score = block.get("score")
    return float(score) if isinstance(score, int | float) else 0.0
