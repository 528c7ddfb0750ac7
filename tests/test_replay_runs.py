"""A replay saved as an evaluation run (eval/replays.py): paired with the run it replayed, or with its recorded
calls stored as a run; scored against the run's labels or the trace file's judgements."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from appui.data import replay
from appui.data import runs as runs_data
from eval import compare, judgements, replays, runs, storage
from eval.cli import main
from eval.unanswerable import with_unanswerable
from retrieval import LookupConfig, TraceStore, lookup_knowledge
from retrieval.models import load_encoder
from tests.app_helpers import QUERIES
from tests.replay_helpers import by_hand, recorded_rankings

CONFIG = LookupConfig(svd_dims=16)
B = replace(CONFIG, l0_filter=False)
C64, B64 = replace(CONFIG, svd_dims=64), replace(B, svd_dims=64)  # on the `index` fixture (64 dimensions)


def _replay(store: TraceStore, index, calls: pd.DataFrame, source_run: str | None,
            config: LookupConfig = B) -> tuple[str, str]:
    run_id = replay.new_run_id()
    replay.replay(calls, index=index, config=config, store=store, run_id=run_id)
    return replays.save_replay_run(store, run_id, calls, index=index, config=config.to_dict(), source_run=source_run)


def test_a_run_replay_is_a_run_of_the_same_dataset_paired_with_the_original(tiny_kb_dataset, store):
    original = runs.run_evaluation(tiny_kb_dataset, CONFIG, store=store, baseline=False, oracle=False)
    index = runs.open_dataset_index(tiny_kb_dataset, CONFIG.svd_dims)
    calls = replay.recorded_calls(store, run_id=original.run_id, limit=100)
    a, b = _replay(store, index, calls, original.run_id)
    assert a == original.run_id and b.startswith(replay.PREFIX)
    stored = runs.load_run(store, b)
    assert stored.dataset["name"] == original.dataset["name"] and stored.dataset["replay_of"] == a
    # named against the real defaults (svd_dims 256, l0_filter on, top_k 5), not against the compared run
    assert stored.overrides == {"svd_dims": 16, "l0_filter": False, "top_k": 100} and stored.top_k == original.top_k
    comparison = compare.compare_runs(store, a, b)
    assert len(comparison.per_query) == len(QUERIES) and comparison.unpaired == {"only_in_a": 0, "only_in_b": 0}
    assert (comparison.per_query["filter_decision_b"] == "disabled").all()
    table = runs_data.run_table(store, runs.list_runs(store)).set_index("run_id")["group"]
    assert table[a] == table[b]


def test_a_run_replay_is_scored_against_the_runs_labels(tiny_kb_dataset, store):
    original = runs.run_evaluation(tiny_kb_dataset, CONFIG, store=store, baseline=False, oracle=False)
    index = runs.open_dataset_index(tiny_kb_dataset, CONFIG.svd_dims)
    calls = replay.recorded_calls(store, run_id=original.run_id, limit=100)
    run_id = replay.new_run_id()
    replay.replay(calls, index=index, config=CONFIG, store=store, run_id=run_id)  # same settings: same figures
    replays.save_replay_run(store, run_id, calls, index=index, config=CONFIG.to_dict(), source_run=original.run_id)
    assert runs.load_run(store, run_id).metrics == original.metrics


def test_a_replay_of_a_run_with_unanswerable_questions_grades_them_and_keeps_the_metrics(tiny_kb_dataset, store,
                                                                                          tmp_path):
    off_topic = tmp_path / "off.jsonl"
    off_topic.write_text(json.dumps({"_id": "u1", "text": "best sourdough starter ratio"}) + "\n")
    dataset = with_unanswerable(tiny_kb_dataset, off_topic)
    original = runs.run_evaluation(dataset, CONFIG, store=store, baseline=False, oracle=False)
    index = runs.open_dataset_index(dataset, CONFIG.svd_dims)
    calls = replay.recorded_calls(store, run_id=original.run_id, limit=100)
    run_id = replay.new_run_id()
    replay.replay(calls, index=index, config=CONFIG, store=store, run_id=run_id)
    replays.save_replay_run(store, run_id, calls, index=index, config=CONFIG.to_dict(), source_run=original.run_id)
    replayed = runs.load_run(store, run_id)
    assert replayed.metrics == original.metrics  # u1 has no rank metric here either
    assert replayed.unanswerable["query_id"].tolist() == ["u1"]
    figures = replayed.diagnostics["answerability"]
    assert figures["unanswerable"] == 1 and figures["by_set"]["off"]["questions"] == 1
    assert figures == original.diagnostics["answerability"]


def test_an_interactive_replay_is_paired_with_its_recorded_calls_as_a_run(store, index):
    for query in ("rotate an API token", "download invoices", "silence an alert"):
        lookup_knowledge(query, index=index, config=C64, recorder=store)
    judgements.record(store, "download invoices", "billing/invoices.md", 1, who="ana")
    calls = replay.recorded_calls(store, limit=20)
    a, b = _replay(store, index, calls, None, B64)
    assert a == replays.RECORDED_PREFIX + b.removeprefix(replay.PREFIX)
    recorded = storage.load_per_query(store, a)
    assert set(recorded["invocation_id"]) == set(calls["id"])  # the recorded rows themselves, no new lookups
    assert store.query("SELECT count(*) AS n FROM tool_invocation WHERE run_id = ?", [a])["n"][0] == 0
    assert runs.list_runs(store).set_index("run_id").loc[a, "lookups"] == 3  # the recorded calls, not 0
    assert store.query("SELECT count(*) AS n FROM tool_invocation WHERE run_id = ?", [b])["n"][0] == 3
    scored = runs.load_run(store, b)
    assert scored.dataset["labelled_queries"] == 1 and scored.dataset["name"] == replays.INTERACTIVE
    per_query = scored.per_query.set_index("query")
    assert per_query.loc["download invoices", "mrr@10"] > 0 and per_query.loc["silence an alert", "mrr@10"] == 0
    comparison = compare.compare_runs(store, a, b)
    assert len(comparison.per_query) == 3 and comparison.config_diff == {"l0_filter": [True, False]}
    table = runs_data.run_table(store, runs.list_runs(store)).set_index("run_id")["group"]
    assert table[a] == table[b] and "base not recorded" not in table[a]


def test_saving_a_replay_that_recorded_nothing_is_refused(store, index):
    with pytest.raises(ValueError, match="recorded no lookup; replay with saving on"):
        replays.save_replay_run(store, "replay-none", pd.DataFrame(), index=index, config=C64.to_dict())


def test_a_replay_that_fails_to_save_leaves_nothing_behind(store, index):
    """Issue 34, item 9: a failed save left the replay's lookups under a `replay-…` run id with no run behind it,
    which then showed in the run pickers and exports. Here the calls lack their recorded details, so scoring the
    recorded side fails: the replayed lookups and any half-written rows are deleted, and the error says so."""
    for query in ("rotate an API token", "download invoices"):
        lookup_knowledge(query, index=index, config=C64, recorder=store)
    calls = replay.recorded_calls(store, limit=20)
    run_id = replay.new_run_id()
    replay.replay(calls, index=index, config=B64, store=store, run_id=run_id)
    assert store.query("SELECT count(*) AS n FROM tool_invocation WHERE run_id = ?", [run_id])["n"][0] == 2
    broken = calls.drop(columns=["retrieval_details"])
    with pytest.raises(replays.ReplayNotSaved, match="its 2 recorded lookup"):
        replays.save_or_discard(store, run_id, broken, index=index, config=B64.to_dict())
    for table in ("tool_invocation", "eval_run", "eval_query"):
        left = store.query(f"SELECT count(*) AS n FROM {table} WHERE run_id LIKE '%' || ?",
                           [run_id.split("-", 1)[-1]])["n"][0]
        assert left == 0, table
    assert run_id not in set(runs.list_runs(store)["run_id"]) and len(calls) == 2
    assert store.query("SELECT count(*) AS n FROM tool_invocation WHERE run_id IS NULL")["n"][0] == 2  # originals


def test_replayed_calls_are_paired_on_the_original_query_id():
    assert replays.paired_query_id("call-1", "q7") == "q7"
    assert replays.paired_query_id("call-1", None) == "call-1"
    assert replays.paired_query_id("call-1", float("nan")) == "call-1"


def test_a_replay_of_calls_with_mixed_settings_says_so_and_shows_the_difference(store, index):
    """Recorded calls that ran with different settings are not summed up by the first one's config."""
    lookup_knowledge("rotate an API token", index=index, config=C64, recorder=store)
    lookup_knowledge("download invoices", index=index, config=B64, recorder=store)
    lookup_knowledge("silence an alert", index=index, config=B64, recorder=store)
    calls = replay.recorded_calls(store, limit=20)
    a, b = _replay(store, index, calls, None, B64)
    recorded, replayed = runs.load_run(store, a), runs.load_run(store, b)
    assert recorded.config["l0_filter"] == "mixed: false ×2, true ×1"
    assert recorded.overrides["l0_filter"] == "mixed: false ×2, true ×1" and replayed.overrides["l0_filter"] is False
    assert compare.compare_runs(store, a, b).config_diff["l0_filter"] == ["mixed: false ×2, true ×1", False]


def test_calls_recorded_with_different_top_k_replay_each_at_its_own_and_save(store, index):
    """Issue 34, item 9: a replay of calls recorded with top_k 5 and 2 crashed (`int('mixed: 5 ×1, 2 ×1')`)."""
    lookup_knowledge("rotate an API token", index=index, config=C64, recorder=store)
    lookup_knowledge("download invoices", index=index, config=replace(C64, top_k=2), recorder=store)
    calls = replay.recorded_calls(store, limit=20)
    a, b = _replay(store, index, calls, None, B64)
    recorded, replayed = runs.load_run(store, a), runs.load_run(store, b)
    assert recorded.config["top_k"].startswith("mixed: ") and recorded.top_k == 5
    assert replayed.per_query["evidence_count"].max() <= 5
    by_query = dict(zip(replayed.per_query["query"], replayed.per_query["evidence_count"], strict=True))
    assert by_query["download invoices"] <= 2  # replayed at its own recorded top_k


def test_a_saved_replay_judged_later_is_scored_against_the_judgements_as_they_are_now(store, index, capsys):
    """Judgements made after the save score both runs wherever they are read; changed or cleared marks drop
    out again."""
    for query in ("rotate an API token", "download invoices", "silence an alert"):
        lookup_knowledge(query, index=index, config=C64, recorder=store)
    calls = replay.recorded_calls(store, limit=20)
    a, b = _replay(store, index, calls, None, B64)
    assert runs.load_run(store, b).metrics["mrr@10"] == 0 and runs.load_run(store, b).dataset["labelled_queries"] == 0
    rankings = {a: recorded_rankings(store, ids=list(calls["id"])), b: recorded_rankings(store, run_id=b)}
    relevant = {"download invoices": "billing/invoices.md", "rotate an API token": "security/tokens.md"}
    for query, page in relevant.items():
        judgements.record(store, query, page, 1, who="ana")
    listed = runs.list_runs(store).set_index("run_id")
    for run_id in (a, b):
        expected = by_hand(rankings[run_id], relevant)
        assert expected["mrr@10"] > 0
        run = runs.load_run(store, run_id)
        assert {m: run.metrics[m] for m in expected} == expected
        assert {m: listed.loc[run_id, m] for m in expected} == expected  # `python -m eval runs` and the app's list
        assert run.dataset["labelled_queries"] == 2
        per_query = run.per_query.set_index("query")
        assert per_query.loc["download invoices", "relevant"] == ["billing/invoices.md"]
        assert per_query.loc["download invoices", "categories"] == ["billing"]  # the judged page's category
        assert per_query.loc["silence an alert", "n_relevant"] == 0
    assert main(["runs", "--json", "--traces", str(store.path)]) == 0  # `python -m eval runs` prints the same
    printed = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert printed[b]["mrr@10"] == by_hand(rankings[b], relevant)["mrr@10"]
    comparison = compare.compare_runs(store, a, b)
    assert comparison.metrics["mrr@10"]["mean_a"] == pytest.approx(by_hand(rankings[a], relevant)["mrr@10"], abs=1e-4)
    assert comparison.metrics["mrr@10"]["mean_b"] == pytest.approx(by_hand(rankings[b], relevant)["mrr@10"], abs=1e-4)

    judgements.record(store, "download invoices", "billing/invoices.md", 0, who="ana")  # changed: not relevant
    del relevant["download invoices"]
    assert {m: runs.load_run(store, b).metrics[m] for m in ("mrr@10", "hit@10")} == {
        m: by_hand(rankings[b], relevant)[m] for m in ("mrr@10", "hit@10")}
    with store.connect() as con:  # cleared: the marks of a query are gone, however they were removed
        con.execute("DELETE FROM judgement WHERE query = 'rotate an API token'")
    cleared = runs.load_run(store, b)
    assert cleared.metrics["mrr@10"] == 0 and cleared.dataset["labelled_queries"] == 1  # the grade-0 mark is left
    assert runs.list_runs(store).set_index("run_id").loc[a, "mrr@10"] == 0


def test_a_replay_of_a_judged_replay_is_judged_too(store, index):
    """Replaying a saved replay's lookups (a run's lookups) pairs with it, scored against the same judgements."""
    for query in ("rotate an API token", "download invoices"):
        lookup_knowledge(query, index=index, config=C64, recorder=store)
    _, first = _replay(store, index, replay.recorded_calls(store, limit=20), None, B64)
    again, second = _replay(store, index, replay.recorded_calls(store, run_id=first, limit=20), first, B64)
    assert again == first and runs.load_run(store, second).metrics["mrr@10"] == 0
    judgements.record(store, "download invoices", "billing/invoices.md", 1, who="ana")
    relevant = {"download invoices": "billing/invoices.md"}
    for run_id in (first, second):
        assert runs.load_run(store, run_id).metrics["mrr@10"] == by_hand(recorded_rankings(store, run_id=run_id),
                                                                          relevant)["mrr@10"] > 0
    assert runs.load_run(store, second).per_query.set_index("query").loc["download invoices", "categories"] == [
        "billing"]


def test_a_run_replayed_under_a_dense_model_is_a_run_that_names_it(tiny_kb_dataset, store):
    original = runs.run_evaluation(tiny_kb_dataset, CONFIG, store=store, baseline=False, oracle=False)
    index = runs.open_dataset_index(tiny_kb_dataset, CONFIG.svd_dims)
    calls = replay.recorded_calls(store, run_id=original.run_id, limit=100)
    dense = replace(CONFIG, l1_dense_model="hash:32", l1_dense_weight=2.0)
    a, b = _replay(store, index, calls, original.run_id, dense)
    stored = runs.load_run(store, b)
    assert stored.overrides == {"svd_dims": 16, "top_k": 100, "l1_dense_model": "hash:32", "l1_dense_weight": 2.0}
    assert stored.models == {"dense": load_encoder("hash:32").info.to_dict(), "rerank": None}
    assert runs.load_run(store, a).models == {"dense": None, "rerank": None}
    comparison = compare.compare_runs(store, a, b)
    assert comparison.config_diff == {"l1_dense_model": [None, "hash:32"], "l1_dense_weight": [1.0, 2.0]}
    details = store.query("SELECT retrieval_details->'l1' AS l1 FROM tool_invocation WHERE run_id = ?", [b])["l1"]
    assert {(json.loads(d).get("dense") or {}).get("status") for d in details} - {None} == {"ok"}


def test_an_interactive_replay_records_the_models_its_recorded_calls_named(store, index):
    dense = replace(C64, l1_dense_model="hash:32")
    for query in ("rotate an API token", "download invoices"):
        lookup_knowledge(query, index=index, config=dense, recorder=store)
    calls = replay.recorded_calls(store, limit=20)
    a, b = _replay(store, index, calls, None, B64)
    assert runs.load_run(store, a).models == {"dense": load_encoder("hash:32").info.to_dict(), "rerank": None}
    assert runs.load_run(store, b).models == {"dense": None, "rerank": None}  # B names no model
    assert compare.compare_runs(store, a, b).config_diff == {"l0_filter": [True, False],
                                                             "l1_dense_model": ["hash:32", None]}
