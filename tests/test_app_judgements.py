"""Judgements in the app: mark blocks on a result, export them, and evaluate against them as the CLI does."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from eval import judgements
from eval.cli import main
from retrieval import TraceStore
from tests.app_helpers import APP, lookup, named, ok, select


def _judge_five(at: AppTest) -> AppTest:
    at = named(at)
    for query, keys in (("rotate an API token", ("lookup_judge_1_1", "lookup_judge_2_0")),
                        ("silence an alert", ("lookup_judge_1_1", "lookup_judge_2_0")),
                        ("agent offline firewall port", ("lookup_judge_2_0",))):
        at = lookup(at, query)
        for key in keys:
            at = ok(at.button(key=key).click().run())
    return at


def test_marking_blocks_stores_judgements_and_shows_them_on_the_card(env):
    at = _judge_five(ok(AppTest.from_file(APP, default_timeout=60).run()))
    frame = judgements.latest(TraceStore(env["traces"]))
    assert len(frame) == 5 and sorted(frame["grade"]) == [0, 0, 0, 1, 1]
    assert set(frame["query"]) == {"rotate an API token", "silence an alert", "agent offline firewall port"}
    assert any(":gray-badge[judged not relevant]" in m.value for m in at.markdown)
    at = lookup(at, "silence an alert")  # marks are shown again on a new lookup of the same query
    assert any(m.value.startswith("**1. ") and ":violet-badge[judged relevant]" in m.value for m in at.markdown)


def test_a_trace_can_be_judged_on_the_traces_page(env):
    at = lookup(named(ok(AppTest.from_file(APP, default_timeout=60).run())), "download invoices")
    at = ok(select(ok(at.switch_page("appui/pages/traces.py").run()), "tr_table", 0))
    at = ok(at.button(key="tr_row_judge_1_1").click().run())
    frame = judgements.latest(TraceStore(env["traces"]))
    assert frame[["query", "grade"]].values.tolist() == [["download invoices", 1]]


def test_judgements_export_as_qrels_and_the_app_evaluates_them_as_the_cli_does(env):
    at = _judge_five(ok(AppTest.from_file(APP, default_timeout=60).run()))
    at = ok(at.switch_page("appui/pages/export.py").run())
    at = ok(at.radio(key="ex_what").set_value("Judgements").run())
    at = ok(at.radio(key="ex_judgement_format").set_value("qrels TSV").run())
    assert at.get("download_button")[0].label == "Download qrels.tsv"
    hint = " ".join(m.value for m in at.markdown)  # the CLI hint names this base and this trace file, no DIR
    assert f"--kb {env['kb'].resolve()} --judgements {env['traces']}" in hint and "DIR" not in hint
    qrels = judgements.to_qrels_tsv(judgements.latest(TraceStore(env["traces"]))).splitlines()
    assert len(qrels) == 6  # header + 5 marks
    at = ok(at.switch_page("appui/pages/compare.py").run())
    at = ok(at.radio(key="eval_source").set_value("Docs folder + judgements").run())
    at.text_input(key="eval_kb").set_value(str(env["kb"]))
    at = ok(at.button(key="eval_start").click().run())
    app_run = at.session_state["eval_last"][0]
    app_metrics = json.loads(TraceStore(env["traces"]).query(
        "SELECT metrics FROM eval_run WHERE run_id = ?", [app_run])["metrics"][0])
    cli_traces = env["root"] / "cli.duckdb"
    assert main(["run", "--kb", str(env["kb"]), "--judgements", str(env["traces"]), "--traces", str(cli_traces),
                 "--no-progress"]) == 0
    cli_metrics = json.loads(TraceStore(cli_traces).query("SELECT metrics FROM eval_run")["metrics"][0])
    assert app_metrics == cli_metrics and app_metrics["ndcg@10"] > 0


def _pressed(at: AppTest, rank: int) -> list[str]:
    """The labels of card `rank`'s judgement buttons drawn pressed (primary: filled with the theme colour)."""
    return [b.label for b in at.button
            if b.key and b.key.startswith(f"lookup_judge_{rank}_") and b.proto.type == "primary"]


def _card_sources(at: AppTest) -> list[str]:
    """The sources the cards show, in rank order (each card's caption starts with its source)."""
    return [c.value.split("`")[1] for c in at.caption if c.value.startswith("`")]


def _card_title(at: AppTest, rank: int) -> str:
    return next(m.value for m in at.markdown if m.value.startswith(f"**{rank}. "))


def test_a_mark_shows_pressed_and_clearing_it_removes_it_from_the_trace_file(env):
    at = lookup(named(ok(AppTest.from_file(APP, default_timeout=60).run())), "rotate an API token")
    keys = [b.key for b in at.button]
    assert _pressed(at, 1) == [] and "lookup_judge_1_clear" not in keys  # nothing judged: nothing to clear
    at = ok(at.button(key="lookup_judge_1_1").click().run())
    assert _pressed(at, 1) == ["Relevant"] and ":violet-badge[judged relevant]" in _card_title(at, 1)
    assert _pressed(at, 2) == []
    at = ok(at.button(key="lookup_judge_1_0").click().run())
    assert _pressed(at, 1) == ["Not relevant"] and ":gray-badge[judged not relevant]" in _card_title(at, 1)
    at = ok(at.button(key="lookup_judge_2_1").click().run())
    at = ok(at.button(key="lookup_judge_1_clear").click().run())
    assert _pressed(at, 1) == [] and "judged" not in _card_title(at, 1)
    assert "lookup_judge_1_clear" not in [b.key for b in at.button]
    assert _pressed(at, 2) == ["Relevant"]  # only the cleared block's mark went
    store, (first, second) = TraceStore(env["traces"]), _card_sources(at)[:2]
    assert judgements.latest(store)["source"].tolist() == [second]
    assert store.query("SELECT count(*) AS n FROM judgement WHERE source = ?", [first])["n"][0] == 0
    at = lookup(at, "rotate an API token")  # a new lookup of the query shows it unjudged too
    assert _pressed(at, 1) == [] and "judged" not in _card_title(at, 1)
