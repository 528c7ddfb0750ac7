"""The Compare page's facets (AppTest): a facet picker over the questions' category and fields, a table per
metric with n, A, B, Δ, p and Holm p, and a caption naming the fields left out."""

from __future__ import annotations

from eval import compare, facets_report
from eval.defaults import DEFAULT_METRICS
from retrieval import TraceStore
from tests.app_helpers import ok, page_text

HEADERS = ["value", "n", "A", "B", "Δ (B − A)", "p", "Holm p", "significance"]
METRICS = list(DEFAULT_METRICS)  # the sweep's metrics


def _facet_tables(at) -> list:
    """The facet tables on the page, in the order of the comparison's metrics (AppTest keys only selectable
    dataframes, so they are found by their headers)."""
    return [d.value for d in at.dataframe if d.value.columns.tolist() == HEADERS]


def test_the_facet_picker_offers_the_category_and_the_questions_fields(faceted_app):
    assert faceted_app.selectbox(key="eval_facet").options == ["category", "style", "trap"]
    assert faceted_app.selectbox(key="eval_facet").value == "category"
    tables = _facet_tables(faceted_app)
    assert len(tables) == len(METRICS)
    assert dict(zip(tables[0]["value"], tables[0]["n"], strict=True))["billing"] == 3


def test_picking_a_field_shows_a_table_per_metric_by_its_values(faceted_app):
    at = ok(faceted_app.selectbox(key="eval_facet").set_value("style").run())
    tables = _facet_tables(at)
    assert len(tables) == len(METRICS)
    for table in tables:
        assert sorted(zip(table["value"], table["n"], strict=True)) == [("goal", 4), ("keyword", 4)]
        assert all(s.startswith(("B better", "B worse", "no difference")) for s in table["significance"])
    assert all(f"**{metric} by style**" in page_text(at) for metric in METRICS)


def test_the_page_names_the_fields_that_are_not_facets(faceted_app):
    assert "not a facet: note (a different value for every question: an id or free text)" in page_text(faceted_app)



def test_a_facet_rows_words_name_the_holm_p_they_use(constructed_pair):
    """Issue 49, item 9: 'B worse, not significant (p = 1)' beside a p column of 0.5052 read as a contradiction;
    the words now name the Holm p they use, the column beside the raw p."""
    comparison = compare.compare_runs(TraceStore(constructed_pair["traces"]), constructed_pair["a"],
                                      constructed_pair["b"])
    table = comparison.facets.table("category", "ndcg@10")
    frame = facets_report.table_frame(table).assign(significance=facets_report.significance_column(table))
    tested = frame[frame["significance"].str.startswith(("B better", "B worse"))]
    assert len(tested) >= 2 and (tested["p"] != tested["Holm p"]).any()
    for _, row in tested.iterrows():
        assert f"(Holm p = {row['Holm p']:.3g})" in row["significance"], row.to_dict()
        assert "(p = " not in row["significance"]


def test_a_value_too_small_to_test_shows_a_dash_for_its_p_not_none(faceted_app):
    """Issue 49, item 9: the p and Holm p of a value with too few questions read "None"."""
    rows = [row for table in _facet_tables(faceted_app) for _, row in table.iterrows()
            if row["significance"].startswith("not tested")]
    assert rows and all(row["p"] == "—" and row["Holm p"] == "—" for row in rows)
