"""A comparison's facets (eval.facets) as tables and report sections: shared by the reports (eval.reports), the
CLI's text output and the app's Compare page, so they show the same figures under the same headers."""

from __future__ import annotations

import pandas as pd

from retrieval.export import Section

from .compare import significance_words
from .facets import FAMILY, MIN_TESTED, FacetBreakdown, FacetTable

COLUMNS = ["value", "n", "A", "B", "delta", "p", "Holm p"]
FLAG = "B wins overall, loses here"


def table_frame(table: FacetTable) -> pd.DataFrame:
    """One facet on one metric: value, n, A, B, delta (B - A), p (the paired randomisation test) and Holm p."""
    rows = [{"value": r.value, "n": r.n, "A": r.mean_a, "B": r.mean_b, "delta": r.delta, "p": r.p,
             "Holm p": r.p_holm} for r in table.rows]
    return pd.DataFrame(rows, columns=COLUMNS)


def significance_column(table: FacetTable) -> list[str]:
    """Each value's Holm-corrected outcome in the comparison's words, naming the p they use ('B worse, significant
    (Holm p = 0.004)': the row's Holm p column, not its raw p); a value with too few questions for a test says so."""
    return [significance_words(r.p_holm, r.delta, label="Holm p") if r.p_holm is not None
            else f"not tested (n < {MIN_TESTED})" for r in table.rows]


def explained(breakdown: FacetBreakdown) -> tuple[str, ...]:
    """What the tables hold, the flagged values and the fields left out, as lines."""
    flags = breakdown.flags() or [f"no value where B wins overall but loses significantly (Holm p below "
                                  f"{breakdown.alpha})"]
    skipped = [f"not a facet: {name} ({why})" for name, why in breakdown.skipped.items()]
    return (f"facets: {', '.join(breakdown.facets) or 'none'}; delta = B − A over each value's paired questions; "
            f"p: the paired randomisation test; Holm p: {FAMILY}", *flags, *skipped)


def sections(breakdown: FacetBreakdown | None) -> list[Section]:
    """The facets section of a comparison report: what it holds, then one table per facet, every metric in it."""
    if breakdown is None:
        return []
    found = [Section("Facets", explained(breakdown))]
    for facet in breakdown.facets:
        tables = [t for t in breakdown.tables if t.facet == facet]
        frame = pd.concat([table_frame(t).assign(flag=[FLAG if r.flagged else "" for r in t.rows])
                           .assign(metric=t.metric) for t in tables], ignore_index=True)
        found.append(Section(f"By {facet}", table=frame.reindex(columns=["metric", *COLUMNS, "flag"]), level=3))
    return found
