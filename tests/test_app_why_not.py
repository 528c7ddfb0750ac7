"""Issue 33, item 3: a "Why not…?" box under every result (the Lookup page, and a trace opened on the Traces
page, replayed under its recorded settings), and every block's score parts drawn as a stacked bar."""

from __future__ import annotations

import pytest

from appui.widgets import parts_chart
from retrieval import LookupConfig, explain_missing, open_index
from tests.app_helpers import lookup, ok, run_app, select


def _answer(at) -> str:
    return "\n".join(m.value for m in at.markdown if "-badge[" in m.value and m.value.startswith("`"))


def test_why_not_on_the_lookup_page_shows_the_stage_and_the_parts_beside_the_last_block(env):
    at = lookup(ok(run_app()), "download invoices")
    shown = [c.value for c in at.caption if c.value.startswith("`") and ".md" in c.value]
    assert "alerting/silences.md" not in " ".join(shown)
    at = ok(at.selectbox(key="lookup_why_not").set_value("alerting/silences.md").run())
    expected = explain_missing("download invoices", ["alerting/silences.md"], index=open_index(env["kb"]),
                               config=LookupConfig()).explanations[0]
    answer = _answer(at)
    assert "`alerting/silences.md`" in answer and f"-badge[{expected.stage}]" in answer and expected.reason in answer
    assert expected.stage != "returned"


def test_why_not_for_a_returned_page_says_its_rank(env):
    at = lookup(ok(run_app()), "download invoices")
    at = ok(at.selectbox(key="lookup_why_not").set_value("billing/invoices.md").run())
    assert ":green-badge[returned] returned at rank 1" in _answer(at)


def test_why_not_on_a_trace_replays_it_under_its_recorded_settings(env):
    at = lookup(run_app(), "rotate an API token")
    at = ok(at.switch_page("appui/pages/traces.py").run())
    at = ok(select(at, "tr_table", 0))
    at = ok(at.selectbox(key="tr_row_why_not").set_value("billing/plans.md").run())
    answer = _answer(at)
    assert "`billing/plans.md`" in answer and "could_not_reproduce" not in answer


def test_a_blocks_parts_become_bar_segments_negatives_left_of_zero():
    block = {"score_parts": [{"part": "L1 lexical", "value": 0.5, "weight": 0.5, "contribution": 0.25},
                             {"part": "L1 static", "value": -0.1, "weight": 1.0, "contribution": -0.1},
                             {"part": "page", "value": 0.4, "weight": 0.5, "contribution": 0.2}]}
    frame = parts_chart.bar_frame([("#1", block)])
    rows = {r["part"]: (r["start"], r["end"]) for r in frame.to_dict("records")}
    assert rows["L1 lexical"] == (0.0, 0.25) and rows["page"] == pytest.approx((0.25, 0.45))
    assert rows["L1 static"] == (0.0, -0.1)
    assert parts_chart.parts_chart([("#1", {"score_parts": []})]) is None


def test_every_card_of_a_result_draws_its_parts_as_a_bar(env):
    at = lookup(ok(run_app()), "download invoices")
    cards = [m for m in at.markdown if m.value[:2] == "**" and m.value[2:3].isdigit()]
    assert cards and len(at.get("vega_lite_chart")) == len(cards)
    at = ok(at.selectbox(key="lookup_why_not").set_value("alerting/silences.md").run())
    assert len(at.get("vega_lite_chart")) == len(cards) + 1  # the missing page beside the last returned block


def _legend(block: dict) -> dict[str, str]:
    """The parts chart's legend: each label and its colour."""
    scale = parts_chart.parts_chart([("#1", block)]).to_dict()["encoding"]["color"]["scale"]
    return dict(zip(scale["domain"], scale["range"], strict=True))


def _part(name: str, contribution: float) -> dict:
    return {"part": name, "value": contribution, "weight": 1.0, "contribution": contribution}


def test_each_part_in_the_legend_has_its_own_colour():
    """Issue 49, item 10: "L1 lexical" and "L1" were drawn in one colour."""
    assert len(set(parts_chart.COLOURS)) == len(parts_chart.ORDER)
    split = _legend({"score_parts": [_part("L1 lexical", 0.4), _part("L1 LSA", 0.1), _part("page", 0.3)]})
    whole = _legend({"score_parts": [_part("L1", 0.5), _part("page", 0.3)]})
    assert split["L1 lexical"] != next(colour for label, colour in whole.items() if label.startswith("L1"))


def test_the_legend_names_only_the_parts_drawn_and_the_floor_plainly():
    """Issue 49, item 10: the legend listed an unexplained "L1 floor" on every card, floored or not."""
    plain = _legend({"score_parts": [_part("L1 lexical", 0.4), _part("page", 0.3), _part("L0", 0.1)]})
    assert list(plain) == ["L1 lexical", "page", "L0"]
    floored = _legend({"score_parts": [_part("L1 lexical", 0.1), _part("L1 static", -0.3), _part("L1 floor", 0.2)]})
    assert "L1 floor" not in floored
    assert any(label.startswith("L1 cut back to 0") and "never goes below 0" in label for label in floored)
