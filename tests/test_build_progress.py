"""The index build's progress: named stages, fractions from 0.0 to 1.0 per stage, and no effect on what is built."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse
from sklearn.decomposition import TruncatedSVD

from retrieval import load_knowledge_base, open_index
from retrieval.index import progress as bp
from retrieval.index.build import cache_key, file_signature, indexable
from retrieval.l1.arrays import build_arrays
from retrieval.l1.config import IndexConfig
from retrieval.l1.embedder import wordllama_name
from retrieval.l1.lsa_fit import STEPS, fit_components
from tests.kb_fixture import write_kb


def _by_stage(events: list[tuple[str, float]]) -> dict[str, list[float]]:
    stages: dict[str, list[float]] = {}
    for stage, fraction in events:
        stages.setdefault(stage, []).append(fraction)
    return stages


def test_every_stage_reports_non_decreasing_fractions_ending_at_one(tmp_path: Path):
    events: list[tuple[str, float]] = []
    open_index(write_kb(tmp_path / "kb"), svd_dims=16, cache_dir=tmp_path / "cache", progress=lambda s,
               f: events.append((s, f)))
    stages = _by_stage(events)
    assert list(stages) == [bp.HASHING, bp.READING, bp.L0, bp.VECTORISING, bp.WEIGHTING, bp.SVD, bp.PROJECTING,
                            bp.CACHING]
    for stage, fractions in stages.items():
        assert fractions[0] == 0.0 and fractions[-1] == 1.0, stage
        assert np.all(np.diff(fractions) >= 0), (stage, fractions)


def test_chunks_vectorised_and_svd_iterations_are_reported_as_fractions(tmp_path: Path):
    events: list[tuple[str, float]] = []
    open_index(write_kb(tmp_path / "kb"), svd_dims=16, use_cache=False, progress=lambda s, f: events.append((s, f)))
    stages = _by_stage(events)
    assert len(set(stages[bp.VECTORISING])) > 10  # about one report per 1% of the chunks
    assert stages[bp.SVD] == [0.0, *(step / STEPS for step in range(1, STEPS + 1))]


def test_a_base_too_small_for_lsa_still_ends_every_stage_it_enters(tmp_path: Path):
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "one.md").write_text("---\ntitle: One\n---\nA single page about tokens.\n")
    events: list[tuple[str, float]] = []
    index = open_index(tmp_path / "kb", use_cache=False, progress=lambda s, f: events.append((s, f)))
    assert index.l1 is not None and index.l1.dimensions == 0
    stages = _by_stage(events)
    assert stages[bp.SVD] == [0.0, 1.0] and bp.PROJECTING not in stages
    assert all(fractions[-1] == 1.0 for fractions in stages.values())


def test_a_cache_hit_reports_hashing_then_loaded(tmp_path: Path):
    kb = write_kb(tmp_path / "kb")
    open_index(kb, svd_dims=16, cache_dir=tmp_path / "cache")
    events: list[tuple[str, float]] = []
    open_index(kb, svd_dims=16, cache_dir=tmp_path / "cache", progress=lambda s, f: events.append((s, f)))
    assert events == [(bp.HASHING, 0.0), (bp.HASHING, 1.0), (bp.CACHED, 1.0)]


def test_progress_changes_neither_the_arrays_nor_the_cache_key(tmp_path: Path):
    kb_dir = write_kb(tmp_path / "kb")
    chunks = [c for c in load_knowledge_base(kb_dir).chunks if indexable(c)]
    config = IndexConfig(svd_dims=16)
    quiet, reported = build_arrays(chunks, config), build_arrays(chunks, config, lambda s, f: None)
    for f in dataclasses.fields(quiet):
        assert np.array_equal(getattr(quiet, f.name), getattr(reported, f.name)), f.name
    first = open_index(kb_dir, svd_dims=16, cache_dir=tmp_path / "cache", progress=lambda s, f: None)
    second = open_index(kb_dir, svd_dims=16, cache_dir=tmp_path / "cache")  # no callback: the same cache entry
    assert not first.from_cache and second.from_cache
    key = cache_key(f"{file_signature(kb_dir)}|()|{wordllama_name()}", config, False)
    assert (tmp_path / "cache" / key).is_dir()


@pytest.mark.parametrize("shape", [(120, 400), (400, 90)], ids=["wide", "tall"])
def test_stepwise_svd_equals_truncated_svd_bit_for_bit(shape: tuple[int, int]):
    matrix = sparse.random(*shape, density=0.05, format="csr", dtype=np.float32, random_state=3)
    expected = TruncatedSVD(n_components=20, random_state=0).fit(matrix).components_
    steps: list[float] = []
    assert np.array_equal(fit_components(matrix, 20, 0, steps.append), expected)
    assert len(steps) == STEPS and steps[-1] == 1.0


def test_stepwise_svd_refuses_more_components_than_columns():
    with pytest.raises(ValueError, match="n_components must be from 1 to 5"):
        fit_components(sparse.identity(5, format="csr", dtype=np.float32), 6, 0)


def test_overall_fraction_follows_the_stage_weights():
    assert bp.overall(bp.HASHING, 0.0) == 0.0
    assert bp.overall(bp.CACHING, 1.0) == pytest.approx(1.0)
    assert bp.overall(bp.CACHED, 1.0) == 1.0
    assert bp.overall(bp.VECTORISING, 0.5) < bp.overall(bp.VECTORISING, 1.0) <= bp.overall(bp.WEIGHTING, 0.0)
    assert bp.overall("something else", 0.7) == 0.0
