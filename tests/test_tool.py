"""The agent-facing tool and its configuration."""

from __future__ import annotations

import json

import pytest

from retrieval import LookupConfig
from retrieval.agent.tool import LookupTool, tool_definition
from retrieval.config import parse_assignments


def test_tool_definition_is_json_schema_with_query_category_top_k():
    definition = json.loads(json.dumps(tool_definition(["billing"])))
    params = definition["parameters"]
    assert definition["name"] == "lookup_knowledge"
    assert set(params["properties"]) == {"query", "category", "top_k"}
    assert params["required"] == ["query"] and params["additionalProperties"] is False
    assert params["properties"]["top_k"]["type"] == "integer"


def test_lookup_tool_returns_the_result_dict_and_records(index, store):
    tool = LookupTool(index, LookupConfig(), store)
    payload = tool("PagerDuty", category="integrations", top_k=1)
    assert payload["primary"]["source"] == "integrations/pagerduty.md"
    assert json.loads(store.invocations().iloc[0]["arguments"]) == {
        "query": "PagerDuty", "category": "integrations", "top_k": 1}
    assert "integrations" in tool.definition()["parameters"]["properties"]["category"]["examples"]


@pytest.mark.parametrize("bad", [{"category": "  "}, {"top_k": 0}, {"top_k": "5"}])
def test_bad_tool_arguments_raise_clear_errors(index, bad):
    with pytest.raises(ValueError, match="category must be|top_k must be"):
        LookupTool(index)("invoice", **bad)


def test_config_rejects_out_of_range_values_naming_them():
    with pytest.raises(ValueError, match="l1_min_score must be a number from 0.0 to 1.0, got 1.5"):
        LookupConfig(l1_min_score=1.5)


def test_set_assignments_parse_to_field_types():
    config = LookupConfig().with_overrides(parse_assignments(["top_k=9", "l0-filter=off", "l0_weight=0.7"]))
    assert (config.top_k, config.l0_filter, config.l0_weight) == (9, False, 0.7)


def test_unknown_setting_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown setting.*known settings: top_k"):
        LookupConfig().with_overrides({"topk": "3"})


def test_malformed_assignment_shows_the_expected_form():
    with pytest.raises(ValueError, match="key=value"):
        parse_assignments(["top_k"])


def test_agent_payload_carries_each_block_once_with_a_trace_reference(index, store):
    payload = LookupTool(index, LookupConfig(), store)("how do I silence alerts")
    text = json.dumps(payload)
    blocks = payload["evidence_blocks"]
    assert len(blocks) >= 2
    for block in blocks:
        assert text.count(json.dumps(block["content"])) == 1
    assert payload["primary"] == {"block": 0, "source": blocks[0]["source"], "title": blocks[0]["title"]}
    assert [s["block"] for s in payload["supplement"]] == list(range(1, len(blocks)))
    assert "retrieval_details" not in payload
    trace = payload["trace"]
    assert trace["invocation_id"] == payload["invocation_id"] == store.invocations().iloc[0]["id"]
    assert trace["l1_status"] == "ok" and trace["evidence_count"] == len(blocks)


def test_a_lookup_on_an_index_of_other_dimensions_is_an_error_not_a_silent_run(index, store):
    """Issue 33: svd_dims lives in one place, the index. LookupConfig(svd_dims=N) says which index the settings
    expect; on another (the `index` fixture has 64) the lookup is refused, recorded as an error, rather than
    run at 64 under a label saying N. Unset (the default), any index is taken at its own dimensions."""
    from retrieval import lookup_knowledge

    with pytest.raises(ValueError, match="svd_dims 16 does not match the index's 64: open the index with"):
        lookup_knowledge("rotate an API token", index=index, config=LookupConfig(svd_dims=16), recorder=store)
    store.flush()
    assert store.query("SELECT status FROM tool_invocation")["status"].tolist() == ["error"]
    assert LookupConfig().svd_dims is None
    assert lookup_knowledge("rotate an API token", index=index).evidence_blocks
    assert lookup_knowledge("rotate an API token", index=index, config=LookupConfig(svd_dims=64)).evidence_blocks
    assert LookupConfig().with_overrides({"svd_dims": "none"}).svd_dims is None
    assert LookupConfig().with_overrides({"svd_dims": "64"}).svd_dims == 64
