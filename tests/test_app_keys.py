"""AppTest covers every widget by key: the widgets no other test drives are driven here, and a check that
every widget key in app.py and appui/ is named by some AppTest (tests/test_app*.py)."""

from __future__ import annotations

import glob
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from appui.data import traces as data
from eval import judgements
from retrieval import LookupConfig, TraceStore
from tests.app_helpers import APP, lookup, ok
from tests.kb_fixture import write_kb

ROOT = Path(__file__).resolve().parents[1]
WIDGETS = ("button", "selectbox", "radio", "text_input", "number_input", "toggle", "multiselect", "text_area",
           "download_button", "checkbox")
# display elements keyed for AppTest lookups and CSS, not widgets
DISPLAY = {"cmp_changes", "eval_card", "eval_filter_domains", "eval_headroom", "eval_metrics", "eval_runs",
           "ex_preview", "ex_judgements_preview", "sql_table"}



def _keys() -> set[str]:
    found = set()
    for path in [ROOT / "app.py", *sorted((ROOT / "appui").rglob("*.py"))]:
        text = path.read_text()
        for call in re.finditer(rf"\.({'|'.join(WIDGETS)})\((?:[^()]|\([^()]*\))*?key=f?\"([a-z_0-9{{}}.]+)\"", text,
                                re.DOTALL):
            found.add(call.group(2))
    return found - DISPLAY


def test_every_widget_key_is_driven_by_an_app_test():
    tests = "".join(Path(p).read_text() for p in [*glob.glob(str(ROOT / "tests" / "test_app*.py")),
                                                  str(ROOT / "tests" / "app_helpers.py")])
    keys = _keys()
    assert {"lookup_query", "eval_run_a", "rp_start", "tr_page"} <= keys  # the scan finds widgets
    # f-string keys ({prefix}{name}, {key}_judge_{rank}_{grade}) are checked by their fixed parts
    missing = sorted(k for k in keys if not all(part in tests for part in re.split(r"\{[^}]*\}", k) if part))
    assert not missing, f"widgets no AppTest drives: {missing}"


def test_trace_filters_time_layer_and_decision_narrow_the_table(env):
    at = lookup(ok(AppTest.from_file(APP, default_timeout=60).run()), "download invoices")
    at = lookup(at, "agent offline firewall port")
    at = ok(at.switch_page("appui/pages/traces.py").run())
    at = ok(at.selectbox(key="tr_time").set_value("Last hour").run())
    assert len(at.dataframe(key="tr_table").value) == 2
    at = ok(at.multiselect(key="tr_layer").set_value(["L0+L1"]).run())
    layers = set(at.dataframe(key="tr_table").value["retrieval_layer"])
    assert layers == {"L0+L1"}
    at = ok(at.multiselect(key="tr_filter").set_value(["applied"]).run())
    assert set(at.dataframe(key="tr_table").value["filter_decision"]) == {"applied"}


def test_an_opened_trace_closes(env):
    at = lookup(ok(AppTest.from_file(APP, default_timeout=60).run()), "download invoices")
    at.session_state["tr_open_id"] = TraceStore(env["traces"]).query("SELECT id FROM tool_invocation")["id"][0]
    at = ok(at.switch_page("appui/pages/traces.py").run())
    assert any("Trace in full" in m.value for m in at.markdown)
    at = ok(at.button(key="tr_close").click().run())
    assert "tr_open_id" not in at.session_state


def test_copy_a_into_b_and_replay_text_filter(env):
    at = lookup(ok(AppTest.from_file(APP, default_timeout=60).run()), "download invoices")
    lookup(at, "agent offline firewall port")
    at = ok(at.switch_page("appui/pages/compare.py").run())
    at = ok(at.number_input(key="cmpb_top_k").set_value(2).run())
    at = ok(at.button(key="cmp_copy").click().run())
    assert at.number_input(key="cmpb_top_k").value == LookupConfig().top_k
    at.text_input(key="rp_text").set_value("invoice")
    at = ok(at.button(key="rp_start").click().run())
    assert at.dataframe(key="rp_table").value["query"].tolist() == ["download invoices"]


def test_split_and_report_pickers(env):
    dataset = env["root"] / "dataset"
    write_kb(dataset / "kb")
    (dataset / "queries.jsonl").write_text('{"_id": "q1", "text": "download invoices", '
                                           '"relevant": ["billing/invoices.md"]}\n')
    at = ok(AppTest.from_file(APP, default_timeout=60).run().switch_page("appui/pages/compare.py").run())
    at.text_input(key="eval_dataset").set_value(str(dataset))
    at.text_input(key="eval_split").set_value("")
    at = ok(at.button(key="eval_start").click().run())
    at = ok(at.button(key="eval_start").click().run())
    runs = at.session_state["eval_last"]
    at = ok(at.switch_page("appui/pages/export.py").run())
    at = ok(at.radio(key="ex_what").set_value("Run report").run())
    at = ok(at.selectbox(key="ex_run").set_value(runs[0]).run())
    assert at.get("download_button")[0].label.startswith(f"Download {runs[0]}")
    at = ok(at.radio(key="ex_what").set_value("Comparison report").run())
    ids = at.selectbox(key="ex_run_a").options
    at = ok(at.selectbox(key="ex_run_a").set_value(ids[0]).run())
    at = ok(at.selectbox(key="ex_run_b").set_value(ids[1]).run())
    assert at.get("download_button")[0].label.startswith("Download ")
    assert "ex_report_download" in str(at.get("download_button")[0].proto.id)


def _download(at: AppTest, key: str):
    """The download button with this widget key (AppTest lists them by type, not by key)."""
    found = [b for b in at.get("download_button") if b.key == key]
    assert len(found) == 1, [b.key for b in at.get("download_button")]
    return found[0]


def test_run_filter_and_both_download_buttons_by_key(env):
    at = lookup(ok(AppTest.from_file(APP, default_timeout=60).run()), "download invoices")
    judgements.record(TraceStore(env["traces"]), "download invoices", "billing/invoices.md", 1, who="ana")
    at = ok(at.switch_page("appui/pages/traces.py").run())
    at = ok(at.selectbox(key="tr_run").set_value(data.NO_RUN).run())
    assert at.dataframe(key="tr_table").value["query"].tolist() == ["download invoices"]
    at = ok(at.switch_page("appui/pages/export.py").run())
    assert _download(at, "ex_download").label == "Download traces.csv"
    assert any("1 trace(s)" in m.value for m in at.markdown)  # the Traces page's filter, carried over
    at = ok(at.radio(key="ex_what").set_value("Judgements").run())
    assert _download(at, "ex_judgements_download").label == "Download queries.jsonl"
