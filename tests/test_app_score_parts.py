"""The Lookup page explains each block's score as its parts, compares two blocks' parts, names the sources a
filter moved, and says why fewer blocks than asked for came back: asserted on the rendered text."""

from __future__ import annotations

import re

from appui.panels import domain_view
from tests.app_helpers import lookup, ok, page_text, run_app

PART = re.compile(r"([A-Za-z0-9 ]+?) (-?\d+\.\d{3}) \((-?\d+\.\d{3}) × ([\d.]+)\)")


def _score_lines(at) -> list[str]:
    return [c.value for c in at.caption if c.value.startswith("score ")]


def test_score_parts_on_two_cards_add_up_to_their_scores(env):
    at = lookup(ok(run_app()), "rotate an API token")
    lines = _score_lines(at)
    assert len(lines) >= 2, lines
    headers = [m.value for m in at.markdown if re.match(r"\*\*\d+\. ", m.value)]
    for line, header in zip(lines[:2], headers[:2], strict=True):
        total = float(re.match(r"score (\d+\.\d{3}) = ", line).group(1))
        assert f"score `{total:.3f}`" in header  # the card's score is the sum the line explains
        terms = PART.findall(line.split(" = ", 1)[1])
        assert {name.strip() for name, *_ in terms} >= {"L1 lexical", "page"}, line
        for _name, contribution, value, weight in terms:
            assert abs(float(value) * float(weight) - float(contribution)) <= 0.002, line
        assert abs(sum(float(c) for _n, c, _v, _w in terms) - total) <= 0.001 * len(terms), line


def test_compare_two_blocks_says_where_the_gap_between_their_scores_comes_from(env):
    at = lookup(ok(run_app()), "rotate an API token")
    sentence = next(m.value for m in at.markdown if m.value.startswith("#1 scores "))
    assert re.match(r"#1 scores \d+\.\d{3} above #2; by part: ", sentence), sentence
    table = next(d.value for d in at.dataframe if "A − B" in d.value.columns)
    gap = table.loc[table["part"] == "score", "A − B"].iloc[0]
    assert abs(table.loc[table["part"] != "score", "A − B"].sum() - gap) <= 0.002 * len(table)
    first = at.selectbox(key="lookup_parts_a").value
    at.selectbox(key="lookup_parts_b").set_value(first)
    at = ok(at.run())
    assert any(m.value == "#1 ties #1" for m in at.markdown)


def test_compare_two_blocks_pickers_name_the_current_results_blocks(env):
    at = lookup(ok(run_app()), "rotate an API token")
    at.selectbox(key="lookup_parts_b").set_value(at.selectbox(key="lookup_parts_b").options[0])
    at = lookup(ok(at.run()), "silence alerts during maintenance")
    sources = [c.value.split("`")[1] for c in at.caption if c.value.startswith("`") and ".md`" in c.value]
    options = at.selectbox(key="lookup_parts_a").options
    assert len(options) == len(sources) and all(f"({s})" in o for s, o in zip(sources, options, strict=True))
    assert at.selectbox(key="lookup_parts_b").value == options[1]  # back to #2: the old pick named another page


def test_fewer_blocks_than_asked_for_come_with_the_reason(env):
    at = ok(run_app())
    at.number_input(key="cfg_top_k").set_value(20)
    at = lookup(ok(at.run()), "download invoices")
    reasons = [i.value for i in at.info if i.value.startswith("Fewer blocks than asked for: ")]
    assert len(reasons) == 1 and "of the 20 blocks asked for (a block is one page)" in reasons[0]


def test_filter_effect_note_names_the_sources_that_left_and_came_in():
    details = {"filter_effect": {"changed": True, "first_changed_rank": 2, "removed": 2, "added": 1,
                                 "removed_sources": ["ops/a.md", "ops/b.md"], "added_sources": ["billing/c.md"]}}
    assert domain_view.effect_note(details) == (
        "The filter changed the results from rank 2: 2 sources left them (other categories): `ops/a.md`, "
        "`ops/b.md`; 1 source came in: `billing/c.md`.")


def test_a_trace_without_score_parts_says_they_were_not_recorded(env):
    at = lookup(ok(run_app()), "download invoices")
    assert "score parts not recorded" not in page_text(at)
    from appui.widgets.score_parts import parts_line
    assert parts_line({"score": 0.5}) == "score 0.500: score parts not recorded (this lookup predates them)"
