"""A dead collector costs the lookups nothing measurable: on the sample base, lookups exporting to an endpoint
nobody listens on all answer, their p50 is within 10% of the same lookups without export (both recorded in a
trace file, interleaved), and the loss is said in exactly one warning."""

from __future__ import annotations

import json
import statistics
import time
import warnings

import pytest

from retrieval import TraceStore, lookup_knowledge
from retrieval.lookup import Recorders
from retrieval.paths import SAMPLE_QUERIES

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from retrieval.otel import OTelExportWarning, settings_from_env, start_tracing
from tests.otel_helpers import dead_endpoint

ROUNDS = 5
MAX_RATIO = 1.10


def test_dead_endpoint_costs_the_lookups_nothing_and_warns_once(sample_index, tmp_path):
    queries = [json.loads(line)["text"] for line in SAMPLE_QUERIES.read_text().splitlines() if line.strip()]
    store = TraceStore(tmp_path / "t.duckdb")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # export every 50 ms, so the exporter fails and retries all through the measured lookups
        tracing = start_tracing(settings_from_env({}, dead_endpoint()), schedule_delay_ms=50)
        arms = {"no export": store, "export to a dead endpoint": Recorders((store, tracing.recorder))}
        times: dict[str, list[float]] = {name: [] for name in arms}
        for query in queries[:10]:  # warm-up
            for recorder in arms.values():
                lookup_knowledge(query, index=sample_index, recorder=recorder)
        for round_ in range(ROUNDS):
            for position, query in enumerate(queries):
                order = list(arms.items()) if (position + round_) % 2 == 0 else list(arms.items())[::-1]
                for name, recorder in order:
                    started = time.perf_counter()
                    lookup_knowledge(query, index=sample_index, recorder=recorder)
                    times[name].append(time.perf_counter() - started)
        assert tracing.recorder.flush(5.0)  # every call made became spans, handed to the batch processor
        assert tracing.recorder.skipped > 0  # once the collector was seen down, no spans were made for it
        tracing.shutdown(2.0)
        store.close()
    p50 = {name: statistics.median(values) for name, values in times.items()}
    ratio = p50["export to a dead endpoint"] / p50["no export"]
    print(f"p50 ms: {', '.join(f'{k} {v * 1000:.3f}' for k, v in p50.items())}; ratio {ratio:.3f}")
    assert ratio <= MAX_RATIO, f"p50 with a dead endpoint {ratio:.3f}x without ({p50})"
    export_warnings = [w for w in caught if issubclass(w.category, OTelExportWarning)]
    assert len(export_warnings) == 1, [str(w.message) for w in caught]
    assert "failed" in str(export_warnings[0].message)
    statuses = TraceStore(tmp_path / "t.duckdb").query("SELECT status, count(*) AS n FROM tool_invocation GROUP BY 1")
    assert statuses.to_dict("records") == [{"status": "ok", "n": 2 * (10 + ROUNDS * len(queries))}]  # all answered

