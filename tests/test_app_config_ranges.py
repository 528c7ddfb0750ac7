"""Issue 33, item 6: the app's configuration inputs take each field's own range (top_k and l1_timeout_ms
cannot be 0 any more), and the domain vote's parameters sit in an "Advanced" expander."""

from __future__ import annotations

from retrieval.config import field_range
from tests.app_helpers import ok, run_app


def test_the_sidebar_inputs_take_each_fields_range(env):
    at = ok(run_app())
    for name in ("top_k", "l1_timeout_ms", "l1_pool", "l1_min_score", "l0_domain_top_n"):
        widget = at.number_input(key=f"cfg_{name}")
        assert (widget.min, widget.max) == field_range(name), name


def test_the_domain_votes_parameters_are_under_advanced(env):
    at = ok(run_app())
    advanced = [e for e in at.sidebar.expander if "Advanced: the domain vote" in e.label]
    assert len(advanced) == 1
    inside = {w.key for w in advanced[0].number_input}
    assert inside == {"cfg_l0_max_matches", "cfg_l0_min_score_ratio", "cfg_l0_domain_top_n",
                      "cfg_l0_domain_temperature", "cfg_l0_domain_min_share", "cfg_l0_domain_min_coverage"}
