"""The app over a trace file of 50,000 real-shaped rows (tests/trace_scale_helpers.py: real lookups and an
evaluation run, replicated in DuckDB, ~8.8 kB a row, 10% of runs): every page renders without an error and each
step's process stays under a memory ceiling. Ceilings, not timing races: the time bound is loose (a page that
loaded every row would still pass it here; the memory ceiling is what catches that), and docs/benchmarks.md has
the measured figures at 1,000,000 rows (bench/trace_scale.py)."""

from __future__ import annotations

import pytest

from tests.trace_scale_helpers import PAGES, SQL, run_step

ROWS = 50_000
MEMORY_CEILING_MB = 1024  # the bound at 1M rows is 1.5 GB; at 50k (440 MB of details) the old pages took more
SECONDS_CEILING = 60.0

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_page_renders_a_50k_row_file_under_the_memory_ceiling(big_file, page):
    figures = run_step("render", big_file, page)
    assert "failed" not in figures and figures["errors"] == [], figures
    assert figures["peak_mb"] < MEMORY_CEILING_MB and figures["seconds"] < SECONDS_CEILING, figures


def test_the_traces_page_over_every_run_stays_under_the_memory_ceiling(big_file):
    figures = run_step("render", big_file, "traces", "all")
    assert "failed" not in figures and figures["errors"] == [], figures
    assert figures["peak_mb"] < MEMORY_CEILING_MB, figures


@pytest.mark.parametrize("statement", sorted(SQL))
def test_the_sql_box_reads_a_50k_row_file_in_place_under_the_memory_ceiling(big_file, statement):
    figures = run_step("sql", big_file, statement)
    assert "failed" not in figures and figures["peak_mb"] < MEMORY_CEILING_MB, figures


def test_a_full_parquet_export_of_a_50k_row_file_streams_under_the_memory_ceiling(big_file, tmp_path):
    figures = run_step("export", big_file, str(tmp_path / "all.parquet"))
    assert "failed" not in figures and figures["peak_mb"] < MEMORY_CEILING_MB, figures
    assert (tmp_path / "all.parquet").stat().st_size > 0


TRENDS_RISE_CEILING_MB = 200  # the 50k file's details alone are 440 MB: a trends call that loaded rows would pass it


def test_trends_over_a_50k_row_file_return_only_the_aggregate_under_a_memory_rise_ceiling(big_file):
    figures = run_step("trends", big_file, "2026-01-01", "2026-01-31", "day")
    assert "failed" not in figures, figures
    assert figures["buckets"] == 30 and figures["lookups"] == 45_000, figures  # 30 days; the 5,000 run rows left out
    assert figures["rss_rise_mb"] < TRENDS_RISE_CEILING_MB and figures["seconds"] < SECONDS_CEILING, figures


def test_changes_over_a_50k_row_file_stay_under_a_memory_rise_ceiling(big_file):
    figures = run_step("changes", big_file, "7d", "2026-01-31")
    assert "failed" not in figures and figures["tested"] > 0, figures
    assert figures["rss_rise_mb"] < TRENDS_RISE_CEILING_MB and figures["seconds"] < SECONDS_CEILING, figures
