"""Issue 53 item 2: what changed. A planted doubling of abstentions is found, named in words, significant after
Holm, with its driving queries; a planted latency shift is found by the quantile test; a file without a planted
change reports nothing significant; the reports (text, Markdown, HTML, JSON) hold every figure, extra sections,
and escape what the trace file holds."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import timedelta

import duckdb
import pytest
from scipy.stats import chi2_contingency, ttest_ind_from_stats

from retrieval.cli import main
from retrieval.traces.changes import QUANTILE_TEST, ReportSection, changes, holm, two_proportion_p, welch_p
from retrieval.traces.figures import NAMES
from tests.trends_helpers import PLANTED_QUESTIONS, UNTIL, Plant, plant

LEVEL = 0.05


def _figure(result, name):
    return next(f for f in result.figures if f.name == name)


def test_abstentions_doubled_in_the_last_week_are_found_named_in_words_and_significant(abstentions_doubled):
    result = changes(abstentions_doubled, window="7d", until=UNTIL)
    abstain = _figure(result, "abstain_share")
    assert abstain.significant and abstain.p_adjusted < LEVEL and abstain.p <= abstain.p_adjusted
    assert 0.04 < abstain.before < 0.06 and 0.09 < abstain.after < 0.11
    assert re.fullmatch(r"abstentions rose from \d\.\d% to \d+\.\d%, significant \(p[=<][0-9.e-]+, Holm\)",
                        abstain.words), abstain.words
    assert abstain.test.startswith("two-proportion z-test")


def test_a_significant_abstention_change_names_its_driving_queries(abstentions_doubled):
    abstain = _figure(changes(abstentions_doubled, window="7d", until=UNTIL), "abstain_share")
    top = [query for query, _, _ in abstain.drivers[:3]]
    assert sorted(top) == sorted(q.lower() for q in PLANTED_QUESTIONS)
    assert all(before == 0 and after > 100 for _, before, after in abstain.drivers[:3]), abstain.drivers


def test_a_latency_shift_is_found_by_the_quantile_test(latency_shifted):
    result = changes(latency_shifted, window="7d", until=UNTIL)
    p50 = _figure(result, "p50_ms")
    assert p50.significant and p50.test == QUANTILE_TEST and p50.after - p50.before > 2
    assert p50.words.startswith("p50 latency rose from")
    untouched = [f.name for f in result.significant() if not f.name.endswith("_ms")]
    assert untouched == []  # only latency was planted


def test_on_a_file_with_no_planted_change_nothing_is_significant(steady):
    result = changes(steady, window="7d", until=UNTIL, level=LEVEL)
    assert result.significant() == () and result.tested() >= 10
    assert all("no change" in f.words or "not tested" in f.words for f in result.figures)


def test_evaluation_rows_do_not_count_in_changes(steady):
    """The planted file's 2,000 evaluation rows all abstain at 5 s in the last week: counted, they would show."""
    assert _figure(changes(steady, window="7d", until=UNTIL), "p95_ms").after < 100


def test_the_text_markdown_and_json_reports_hold_every_figure(abstentions_doubled):
    result = changes(abstentions_doubled, window=timedelta(days=7), until=UNTIL)
    data = json.loads(result.to_json())
    assert list(data["figures"]) == list(NAMES) and data["correction"] == "holm"
    assert data["figures"]["abstain_share"]["drivers"][0]["count_before"] == 0
    assert data["after"]["until"] == UNTIL.isoformat() and data["window"] == "7d"
    markdown = result.to_markdown()
    assert all(f"| {name} |" in markdown for name in NAMES) and "## Significant changes" in markdown
    assert "abstentions rose from" in result.to_text()


def test_with_sections_adds_a_section_to_every_output(abstentions_doubled):
    section = ReportSection("Content gaps", "- topic **vault keys**", "<ul><li>topic vault keys</li></ul>",
                            {"topics": 1})
    result = changes(abstentions_doubled, window="7d", until=UNTIL).with_sections([section])
    assert "## Content gaps" in result.to_markdown() and "- topic **vault keys**" in result.to_markdown()
    assert "<h2>Content gaps</h2>\n<ul><li>topic vault keys</li></ul>" in result.to_html()
    assert result.to_dict()["sections"] == [{"title": "Content gaps", "data": {"topics": 1}}]


def test_the_html_report_is_escaped(tmp_path):
    """A driving query holding `<script>` is shown as text in the standalone page, never as markup."""
    path = tmp_path / "hostile.duckdb"
    hostile = '<script>alert("x")</script> & friends'
    plant(path, Plant(abstain_before=0.05, abstain_after=0.12), per_day=500, questions=(hostile,))
    page = changes(path, window="7d", until=UNTIL).to_html()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script>" not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; friends" in page
    markdown = changes(path, window="7d", until=UNTIL).to_markdown()  # a code span: shown as text
    assert f"`{hostile}`" in markdown and markdown.count("<script>") == markdown.count("`<script>") > 0


def test_no_production_rows_in_the_changes_window_says_so_and_exits_0(abstentions_doubled, capsys):
    code = main(["traces", "changes", "--traces", str(abstentions_doubled), "--window", "7d", "--until",
                 "2020-01-01", "--fail-on", "abstain_share>0", "--fail-on-significant"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.startswith("no production lookups") and captured.err == ""


def test_the_cli_writes_each_format_to_a_file(abstentions_doubled, tmp_path, capsys):
    for fmt, start in (("markdown", "# What changed"), ("html", "<!DOCTYPE html>"), ("json", "{"),
                       ("text", "What changed")):
        out = tmp_path / f"report.{fmt}"
        assert main(["traces", "changes", "--traces", str(abstentions_doubled), "--until", "2026-03-01",
                     "--format", fmt, "--output", str(out)]) == 0
        assert out.read_text(encoding="utf-8").startswith(start)
        assert capsys.readouterr().out.strip() == f"wrote {out}"


def test_a_bad_changes_window_exits_2_with_one_line(abstentions_doubled, capsys):
    code = main(["traces", "changes", "--traces", str(abstentions_doubled), "--window", "7 days"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --window takes a span") and len(err.strip().splitlines()) == 1


def test_the_tests_agree_with_scipy():
    """The pooled two-proportion z-test is the 2x2 chi-square test without continuity correction; Welch's p is
    scipy's; Holm's adjustment is the textbook's."""
    table = [[40, 960], [75, 925]]
    expected = chi2_contingency(table, correction=False)[1]
    assert two_proportion_p(40, 1000, 75, 1000) == pytest.approx(expected, rel=1e-9)
    assert welch_p(0.5, 0.04, 30, 0.6, 0.09, 25) == pytest.approx(
        ttest_ind_from_stats(0.5, 0.2, 30, 0.6, 0.3, 25, equal_var=False).pvalue, rel=1e-9)
    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx((0.04, 0.09, 0.09, 0.2))


def test_a_v15_file_read_by_changes_is_upgraded_and_its_back_filled_rows_count(tmp_path):
    """Old rows (their columns dropped, as a v15 file holds them) read their back-filled grade in the figures."""
    path = tmp_path / "old.duckdb"
    plant(path, per_day=200, with_runs=False)
    with duckdb.connect(str(path)) as con:
        real = con.execute("SELECT count(*) FILTER (WHERE abstained) FROM tool_invocation "
                           "WHERE id NOT LIKE 'syn-%'").fetchone()[0]
        con.execute("DELETE FROM tool_invocation WHERE id LIKE 'syn-%'")  # only the real rows, with details
        for column in ("relevance_level", "confidence", "abstained", "category"):
            con.execute(f"ALTER TABLE tool_invocation DROP COLUMN {column}")
        con.execute("DELETE FROM schema_version WHERE version >= 16")
    done = subprocess.run([sys.executable, "-m", "retrieval", "traces", "changes", "--traces", str(path), "--window",
                           "14d", "--until", "2026-03-01", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # a new process: it opens the v15 file and migrates it
    assert real > 0 and data["figures"]["abstain_share"]["after"] == pytest.approx(real / data["after"]["lookups"])
