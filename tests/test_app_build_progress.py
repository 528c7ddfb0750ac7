"""The app's index-build progress bar: real fractions per stage, the stage's name and an estimate (AppTest)."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from appui.widgets import build_bar
from retrieval.index import progress as bp
from tests.app_helpers import APP, QUERIES, ok
from tests.kb_fixture import write_kb


def test_index_build_bar_shows_each_stage_with_its_fraction_and_an_estimate(env, drawn):
    at = ok(AppTest.from_file(APP, default_timeout=60).run())
    indexing = [(value, text) for value, text in drawn if text.startswith("Indexing")]
    values = [value for value, _ in indexing]
    assert values == sorted(values) and values[-1] == pytest.approx(1.0)
    assert all(any(stage in text for _, text in indexing) for stage, _ in bp.STAGES)
    svd = [text for _, text in indexing if bp.SVD in text]
    assert f"{bp.SVD} 50%" in " ".join(svd) and all("stage 6 of 8" in t for t in svd)
    assert any("s left" in text for _, text in indexing)
    captions = [c.value for c in at.caption if c.value.startswith("Build stages: ")]
    assert len(captions) == 1 and bp.SVD in captions[0]


def test_a_second_session_uses_the_built_index_without_a_bar(env, drawn):
    ok(AppTest.from_file(APP, default_timeout=60).run())
    drawn.clear()
    ok(AppTest.from_file(APP, default_timeout=60).run())
    assert not [text for _, text in drawn if text.startswith("Indexing")]


def test_build_status_estimates_the_time_left_from_the_overall_fraction():
    half = bp.overall(bp.SVD, 0.0)
    status = build_bar.describe("kb", bp.SVD, 0.0, elapsed=10.0)
    assert status.overall == pytest.approx(half)
    assert f"about {10.0 / half - 10.0:.1f} s left" in status.text and "stage 6 of 8" in status.text
    assert "estimating" in build_bar.describe("kb", bp.HASHING, 0.5, elapsed=0.1).text
    assert build_bar.describe("kb", bp.CACHED, 1.0, elapsed=0.2).text.endswith("· 0.2 s")


def test_build_bar_records_each_finished_stage_seconds():
    ticks = iter([0.0, 1.0, 3.0, 3.5])
    drawn: list[tuple[float, str]] = []

    class Placeholder:
        def progress(self, value: float, text: str) -> None:
            drawn.append((value, text))

    bar = build_bar.BuildBar(Placeholder(), "kb", clock=lambda: next(ticks))
    bar(bp.READING, 0.0)
    bar(bp.READING, 1.0)
    bar(bp.L0, 0.0)
    assert bar.seconds == {bp.READING: 2.0}
    assert build_bar.stage_summary(bar.seconds) == f"{bp.READING} 2.0 s"
    assert [v for v, _ in drawn] == sorted(v for v, _ in drawn)


def test_a_labelled_run_shows_its_datasets_index_build(env, drawn):
    folder = env["root"] / "dataset"
    write_kb(folder / "kb")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    at = ok(AppTest.from_file(APP, default_timeout=60).run())
    at = ok(at.switch_page("appui/pages/compare.py").run())
    drawn.clear()
    at.text_input(key="eval_dataset").set_value(str(folder))
    at = ok(at.button(key="eval_start").click().run())
    assert any("Stored 1 run(s)" in s.value for s in at.success)
    building = [text for _, text in drawn if text.startswith("Indexing dataset: ")]
    assert any(bp.SVD in text for text in building) and any(bp.CACHING in text for text in building)
