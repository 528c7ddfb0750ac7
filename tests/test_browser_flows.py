"""The analyst's seven flows of issue 10 in a real browser (Debian's Chromium via Playwright), a screenshot
per step (`flow<N>-<step>.png`: into docs/screenshots only with UPDATE_SCREENSHOTS=1).

One server on the sample knowledge base and a fresh trace file; the flows run in order and build on each
other (the sweep of flow 2 is what flows 3 and 4 compare). Waits are on the script state, never on sleeps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import judgements
from eval.cli import main as eval_main
from retrieval import TraceStore, lookup_knowledge, open_index
from retrieval.lookup.invocation import ToolInvocation
from retrieval.paths import PROJECT_ROOT
from tests.browser_helpers import (
    CHROMIUM,
    click_first_row,
    open_page,
    screenshot,
    sync_api,
    visible,
    wait_for_app,
)
from tests.kb_fixture import write_kb

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}")]
SAMPLE_KB = PROJECT_ROOT / "data" / "kb"


def _pick(page, key: str, option: str) -> None:
    """Type into a selectbox's combobox to filter its options, then click the first match."""
    box = page.locator(f".st-key-{key} input")
    box.click()
    box.fill(option)
    page.get_by_role("option").filter(has_text=option).first.click()
    wait_for_app(page)


def _open_options(page, key: str, tries: int = 5):
    """A selectbox's list of options, opened: a rerun that starts just after the click (the one a pick
    before it set off) closes the list again, so the click is repeated once the run has finished (CI met it)."""
    options = page.get_by_role("option")
    for _ in range(tries):
        page.locator(f".st-key-{key}").click()
        try:
            sync_api.expect(options.first).to_be_visible(timeout=5_000)
            wait_for_app(page)
            if options.first.is_visible():
                return options
        except AssertionError:
            pass
        wait_for_app(page)
    raise AssertionError(f"the options of selectbox {key!r} never stayed open ({tries} clicks)")


def _value(page, key: str) -> str:
    """A selectbox's shown value (Streamlit keeps it in the combobox input)."""
    return page.locator(f".st-key-{key} input").input_value()


def _lookup(page, query: str) -> None:
    page.locator(".st-key-lookup_query input").fill(query)
    page.locator(".st-key-lookup_query input").press("Enter")
    visible(page, page.get_by_test_id("stMarkdownContainer").filter(has_text=f"“{query}”").first)


def _runs(traces: Path) -> list[str]:
    return TraceStore(traces).query("SELECT run_id FROM eval_run ORDER BY created_at DESC")["run_id"].tolist()


def test_flow1_switching_the_base_clears_the_result(server, flow_page, flow_shots):
    _lookup(flow_page, "rotate an API token")
    screenshot(flow_page, flow_shots, "flow1-1-lookup")
    other = write_kb(server["root"] / "other-kb")
    flow_page.locator(".st-key-kb_source").get_by_text("Folder path").click()
    wait_for_app(flow_page)
    flow_page.locator(".st-key-kb_path input").fill(str(other))
    flow_page.locator(".st-key-kb_path input").press("Enter")
    visible(flow_page, flow_page.get_by_text("cleared because the knowledge base changed"))
    sync_api.expect(flow_page.get_by_text("“rotate an API token”")).to_have_count(0)
    screenshot(flow_page, flow_shots, "flow1-2-switched")
    flow_page.locator(".st-key-kb_source").get_by_text("Sample knowledge base").click()
    wait_for_app(flow_page)


def test_flow2_a_sweep_selects_its_runs_in_the_pickers(server, flow_page, flow_shots):
    open_page(flow_page, "Compare settings")
    flow_page.get_by_role("tab", name="Labelled set").click()
    flow_page.locator(".st-key-eval_mode").get_by_text("Sweep").click()
    visible(flow_page, flow_page.locator(".st-key-eval_grid textarea"))
    screenshot(flow_page, flow_shots, "flow2-1-sweep")
    flow_page.locator(".st-key-eval_start button").click()
    visible(flow_page, flow_page.get_by_text("Stored 2 run(s)"))
    newest, previous = _runs(server["traces"])[:2]
    assert _value(flow_page, "eval_run_b").startswith(newest) and _value(flow_page, "eval_run_a").startswith(previous)
    screenshot(flow_page, flow_shots, "flow2-2-pickers")


def test_flow3_a_run_of_another_dataset_is_refused(server, flow_page, flow_shots):
    docs = write_kb(server["root"] / "docs")
    queries = server["root"] / "dev.jsonl"
    queries.write_text(json.dumps({"_id": "d1", "text": "rotate an API token", "relevant": ["security/tokens.md"]})
                       + "\n")
    flow_page.locator(".st-key-eval_source").get_by_text("Docs folder + query file").click()
    wait_for_app(flow_page)
    flow_page.locator(".st-key-eval_kb input").fill(str(docs))
    flow_page.locator(".st-key-eval_queries input").fill(str(queries))
    flow_page.locator(".st-key-eval_queries input").press("Enter")
    wait_for_app(flow_page)
    flow_page.locator(".st-key-eval_mode").get_by_text("Single run").click()
    wait_for_app(flow_page)
    flow_page.locator(".st-key-eval_start button").click()
    visible(flow_page, flow_page.get_by_text("Stored 1 run(s)"))
    other = _runs(server["traces"])[0]
    assert _value(flow_page, "eval_run_a").startswith(other)  # alone in its group
    screenshot(flow_page, flow_shots, "flow3-1-other-dataset")
    _pick(flow_page, "eval_group", "data · ")
    options = _open_options(flow_page, "eval_run_a")
    assert other not in " ".join(options.all_inner_texts())  # never offered beside the data/ runs
    screenshot(flow_page, flow_shots, "flow3-2-not-offered")
    flow_page.keyboard.press("Escape")
    wait_for_app(flow_page)
    run_b = _value(flow_page, "eval_run_b")
    flow_page.locator(".st-key-eval_run_other input").fill(other)  # picked by id instead: refused on the page
    flow_page.locator(".st-key-eval_run_other input").press("Enter")
    visible(flow_page, flow_page.get_by_test_id("stAlertContentError").filter(has_text="Refused: run "))
    sync_api.expect(flow_page.get_by_test_id("stAlertContentError").first).to_contain_text(
        f"but run {other} is on ")
    assert _value(flow_page, "eval_run_b") == run_b  # B is unchanged
    screenshot(flow_page, flow_shots, "flow3-3-refused")
    flow_page.locator(".st-key-eval_run_other input").fill("")
    flow_page.locator(".st-key-eval_run_other input").press("Enter")
    wait_for_app(flow_page)


def test_flow4_a_per_query_row_opens_its_trace_as_cards(server, flow_page, flow_shots):
    pairs = flow_page.locator(".st-key-eval_pairs [data-testid='stDataFrameResizable']")
    click_first_row(flow_page, pairs)
    visible(flow_page, flow_page.get_by_test_id("stHeading").filter(has_text="Run A:").first)
    screenshot(flow_page, flow_shots, "flow4-1-pair")
    flow_page.locator(".st-key-eval_open_trace_a button").click()
    visible(flow_page, flow_page.get_by_test_id("stHeading").filter(has_text="Traces").first)
    visible(flow_page, flow_page.get_by_text("Trace in full").first)
    sync_api.expect(flow_page.get_by_test_id("stMetric").filter(has_text="Final blocks").first).to_be_visible()
    sync_api.expect(flow_page.get_by_text("Open this run's query on the Compare page")).to_be_visible()
    screenshot(flow_page, flow_shots, "flow4-2-trace-cards")


def test_flow5_replay_20_interactive_lookups_under_b(server, flow_page, flow_shots):
    index = open_index(SAMPLE_KB)
    store = TraceStore(server["traces"])
    texts = [json.loads(line)["text"] for line in (PROJECT_ROOT / "data" / "queries.jsonl").read_text().splitlines()]
    for text in texts[:19]:
        lookup_knowledge(text, index=index, recorder=store)  # with flow 1's lookup: 20 interactive calls
    open_page(flow_page, "Compare settings")
    flow_page.get_by_text("Configuration B").first.click()
    flow_page.locator(".st-key-cmpb_l0_filter label").click()
    visible(flow_page, flow_page.get_by_text("B differs from A"))
    flow_page.get_by_role("tab", name="Replay").click()
    screenshot(flow_page, flow_shots, "flow5-1-config-b")
    flow_page.locator(".st-key-rp_start button").click()
    visible(flow_page, flow_page.get_by_text("Saved as run"))
    sync_api.expect(flow_page.get_by_test_id("stMetric").filter(has_text="calls").first).to_contain_text("20")
    replayed = store.query("SELECT count(*) AS n FROM tool_invocation WHERE run_id LIKE 'replay-%'")["n"][0]
    assert replayed == 20
    screenshot(flow_page, flow_shots, "flow5-2-replay-diff")
    flow_page.get_by_text("Configuration B").first.click()  # folded, so the picture reaches the run pickers
    flow_page.get_by_role("tab", name="Labelled set").click()  # saved as a run: the pickers hold it and its calls
    replay_run, recorded_run = _runs(server["traces"])[:2]
    assert replay_run.startswith("replay-") and recorded_run.startswith("recorded-")
    assert _value(flow_page, "eval_run_b").startswith(replay_run) and \
        _value(flow_page, "eval_run_a").startswith(recorded_run)
    visible(flow_page, flow_page.get_by_text("Metric deltas (B − A)").first)
    screenshot(flow_page, flow_shots, "flow5-3-replay-run")


def test_flow6_judge_export_qrels_and_evaluate_as_the_cli(server, flow_page, flow_shots):
    open_page(flow_page, "Lookup")
    flow_page.locator(".st-key-annotator_name input").fill("ana")  # every mark names its annotator
    flow_page.locator(".st-key-annotator_name input").press("Enter")
    wait_for_app(flow_page)
    for query, marks in (("rotate an API token", ("1_1", "2_0")), ("silence an alert", ("1_1", "2_0", "3_0"))):
        _lookup(flow_page, query)
        for mark in marks:
            flow_page.locator(f".st-key-lookup_judge_{mark} button:visible").first.click()
            wait_for_app(flow_page)
    screenshot(flow_page, flow_shots, "flow6-1-judged")
    assert len(judgements.latest(TraceStore(server["traces"]))) == 5
    open_page(flow_page, "Export")
    flow_page.locator(".st-key-ex_what").get_by_text("Judgements").click()
    flow_page.locator(".st-key-ex_judgement_format").get_by_text("qrels TSV").click()
    # the button is relabelled by the rerun the radio starts: wait for the qrels one, not the old one
    button = flow_page.locator(".st-key-ex_judgements_download button").filter(has_text="qrels.tsv")
    visible(flow_page, button)
    with flow_page.expect_download() as download:
        button.click()
    saved = server["root"] / "qrels.tsv"
    download.value.save_as(saved)
    assert len(saved.read_text().splitlines()) == 6
    screenshot(flow_page, flow_shots, "flow6-2-export")
    open_page(flow_page, "Compare settings")
    flow_page.get_by_role("tab", name="Labelled set").click()
    flow_page.locator(".st-key-eval_source").get_by_text("Docs folder + judgements").click()
    wait_for_app(flow_page)
    flow_page.locator(".st-key-eval_kb input").fill(str(SAMPLE_KB))
    flow_page.locator(".st-key-eval_kb input").press("Enter")
    wait_for_app(flow_page)
    flow_page.locator(".st-key-eval_start button").click()
    visible(flow_page, flow_page.get_by_text("Stored 1 run(s)"))
    app_metrics = json.loads(TraceStore(server["traces"]).query(
        "SELECT metrics FROM eval_run ORDER BY created_at DESC LIMIT 1")["metrics"][0])
    cli = server["root"] / "cli.duckdb"
    assert eval_main(["run", "--kb", str(SAMPLE_KB), "--judgements", str(server["traces"]), "--traces", str(cli),
                      "--no-progress"]) == 0
    assert json.loads(TraceStore(cli).query("SELECT metrics FROM eval_run")["metrics"][0]) == app_metrics
    screenshot(flow_page, flow_shots, "flow6-3-evaluated")


def test_flow7_page_through_more_than_1000_traces(server, flow_page, flow_shots):
    with TraceStore(server["traces"]) as store:
        store.record_many([ToolInvocation(
            "lookup_knowledge", f"seeded {i}", {}, "ok", float(i % 50), {}, {"retrieval_layer": "L1"},
            run_id="seeded", id=f"seed-{i:05d}") for i in range(1050)])
    open_page(flow_page, "Traces")
    _pick(flow_page, "tr_run", "seeded")
    visible(flow_page, flow_page.get_by_text("1050 trace(s)"))
    screenshot(flow_page, flow_shots, "flow7-1-first-page")
    _pick(flow_page, "tr_page_size", "1000")
    flow_page.locator(".st-key-tr_page input").fill("2")
    flow_page.locator(".st-key-tr_page input").press("Enter")
    visible(flow_page, flow_page.get_by_text("rows 1001–1050"))
    screenshot(flow_page, flow_shots, "flow7-2-last-page")
