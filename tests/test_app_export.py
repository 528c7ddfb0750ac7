"""The Export page (AppTest, on trace files made in SQL): it names the file's size, rows and oldest row (as the
Traces page does), exports what the Traces page filters with one default shared by both, builds a download
only when clicked or writes a large export to a file, says how many rows a report leaves out, and refuses to
pair runs of two datasets as the Compare page does."""

from __future__ import annotations

import io
import re

import duckdb
import pandas as pd

from appui.data import file_facts, trace_export
from appui.data import traces as data
from retrieval import TraceStore
from tests.app_helpers import ok, page_text, run_app
from tests.export_helpers import build_traces

EXPORT, TRACES = "appui/pages/export.py", "appui/pages/traces.py"


def _interactive(path) -> int:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("SELECT count(*) FROM tool_invocation WHERE run_id IS NULL").fetchone()[0]


def _count_line(at) -> int:
    line = next(m.value for m in at.markdown if "trace(s)**" in m.value)
    return int(re.search(r"\*\*([\d,]+) trace\(s\)\*\*", line).group(1).replace(",", ""))


def test_export_and_traces_pages_show_the_files_size_rows_and_oldest_row(env):
    build_traces(env["traces"], 1_500)
    facts = file_facts.file_facts(TraceStore(env["traces"]))
    assert facts.rows == 1_500 and f"{facts.oldest:%Y-%m-%d %H:%M}" == "2026-01-01 00:00"
    said = (f"Trace file `traces.duckdb` · {file_facts.size_text(facts.bytes)} · 1,500 rows · oldest 2026-01-01 "
            "00:00 UTC")
    for page in (EXPORT, TRACES):
        at = ok(run_app().switch_page(page).run())
        assert said in [c.value for c in at.caption], page
    assert file_facts.size_text(641_740_800) == "641.7 MB" and file_facts.size_text(812) == "812 bytes"


def test_export_and_traces_share_one_default_filter_interactive_lookups(env):
    build_traces(env["traces"], 2_000)  # every 10th row is a run's
    interactive = _interactive(env["traces"])
    assert data.TraceFilters().run == data.DEFAULT_RUN == data.NO_RUN and interactive == 1_800
    at = ok(run_app().switch_page(EXPORT).run())  # a new session, the Traces page never opened
    assert _count_line(at) == interactive
    assert any("Rows: interactive lookups (the Traces page’s default" in c.value for c in at.caption)
    at = ok(at.switch_page(TRACES).run())
    assert at.selectbox(key="tr_run").value == data.DEFAULT_RUN
    assert any(f"**{interactive} trace(s)** match" in m.value for m in at.markdown)
    at = ok(at.selectbox(key="tr_run").set_value(data.ANY).run())
    at = ok(at.switch_page(EXPORT).run())  # the Traces page's choice travels
    assert _count_line(at) == 2_000 and any("(the Traces page’s filters" in c.value for c in at.caption)


def test_a_download_is_built_when_clicked_and_holds_every_matching_row(env):
    build_traces(env["traces"], 2_000)
    at = ok(run_app().switch_page(EXPORT).run())
    for fmt, (extension, _) in data.FORMATS.items():
        at = ok(at.selectbox(key="ex_format").set_value(fmt).run())
        assert at.get("download_button")[0].label == f"Download traces.{extension}"
        assert "built when you click" in page_text(at) or "first 100 in full" in page_text(at)
    store, filters = TraceStore(env["traces"]), data.TraceFilters()
    frame = pd.read_parquet(io.BytesIO(trace_export.download_bytes(store, filters, "Parquet")))
    assert len(frame) == 1_800 and frame["run_id"].isna().all() and frame["id"].is_unique
    assert frame["created_at"].is_monotonic_decreasing  # newest first, as the Traces page lists them


def test_a_report_says_how_many_rows_it_leaves_out(env):
    build_traces(env["traces"], 2_000)
    at = ok(run_app().switch_page(EXPORT).run())
    at = ok(at.selectbox(key="ex_format").set_value("Markdown").run())
    assert any("the first 100 in full; … and 1,700 more rows not shown" in m.value for m in at.markdown)
    report = trace_export.report_bytes(TraceStore(env["traces"]), data.TraceFilters(), "Markdown").decode()
    assert "… and 1,700 more rows not shown" in report and report.count("\n## Trace ") == 100
    assert "1,800 call(s), from 2026-01-01 00:00:02 to 2026-01-01 01:06:38 UTC" in report


def test_an_export_past_the_download_limit_is_written_to_a_file(env, monkeypatch, tmp_path):
    build_traces(env["traces"], 2_000)
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_DOWNLOAD_MB", "0.05")  # 50 kB: the page names the limit
    at = ok(run_app().switch_page(EXPORT).run())
    at = ok(at.selectbox(key="ex_format").set_value("CSV").run())
    assert any("over the 50.0 kB a download may hold" in m.value for m in at.markdown)
    assert not at.get("download_button")
    at.text_input(key="ex_folder").set_value(str(tmp_path / "exports"))
    at = ok(at.button(key="ex_write").click().run())
    written = list((tmp_path / "exports").glob("traces-*.csv"))
    assert len(written) == 1 and len(pd.read_csv(written[0])) == 1_800
    assert f"Wrote 1,800 rows to `{written[0]}`" in at.success[0].value


def test_export_page_refuses_to_pair_runs_of_different_datasets(app, stored):
    at = ok(app.switch_page(EXPORT).run())
    at = ok(at.radio(key="ex_what").set_value("Comparison report").run())  # by default a pair of one dataset
    a, b = at.selectbox(key="ex_run_a").value, at.selectbox(key="ex_run_b").value
    assert [b.label for b in at.get("download_button")] == [f"Download {a}-vs-{b}.csv"]
    at = ok(at.selectbox(key="ex_run_a").set_value(stored["sweep"][0]).run())
    at = at.selectbox(key="ex_run_b").set_value(stored["other"]).run()
    assert not at.exception and not at.get("download_button")
    refusal = [e.value for e in at.error]
    assert len(refusal) == 1 and refusal[0].startswith(f"Refused: run {stored['sweep'][0]} is on ")
    assert refusal[0].endswith("; compare runs of one dataset and knowledge base.")
