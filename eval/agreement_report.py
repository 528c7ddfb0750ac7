"""The annotators' sections of a run's or a comparison's report (eval.reports): when the questions carry marks by
two annotators or more, how far they agree on them ("Annotator agreement", eval.agreement.compute) and, for a
comparison, which verdicts change with the annotator ("Verdicts by annotator", eval.agreement.flips)."""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd

from retrieval import TraceStore
from retrieval.export import Section

from . import agreement
from .compare import PERMUTATIONS, Comparison


def sections(questions: Collection[str], store: TraceStore | None, comparison: Comparison | None = None, *,
             permutations: int = PERMUTATIONS) -> list[Section]:
    """The annotator sections for the questions `questions` (texts) of a report, none when fewer than two
    annotators marked them (or there is no trace store to read the marks from)."""
    if store is None or len(agreement.annotators_on(store, questions)) < 2:
        return []
    found = agreement.compute(store, queries=questions)
    found_sections = [agreement_section(found)]
    if comparison is not None:
        found_sections.append(flips_section(agreement.flips(store, comparison, permutations=permutations)))
    return found_sections


def agreement_section(found: agreement.Agreement) -> Section:
    """α, the disputes and each question set's α in words, each pair's κ as the table."""
    pct = f"{found.level:.0%}"
    alpha = (f"Krippendorff's α ({found.metric}): {found.alpha:.4f}, {pct} interval "
             f"{_interval(found.alpha_ci)}, over {found.pairable} page(s) judged by two or more"
             if found.alpha is not None else f"Krippendorff's α ({found.metric}): undefined, {found.alpha_reason}")
    sets = [f"question set {s.scope}: {s.pages} page(s), α " + (f"{s.alpha:.4f} ({_interval(s.alpha_ci)})"
                                                               if s.alpha is not None else
                                                               f"undefined ({s.reason or s.alpha_reason})")
            for s in found.per_set]
    lines = (f"{len(found.annotators)} annotators ({', '.join(found.annotators)}) marked {found.pages} page(s) of "
             "these questions", alpha, *sets,
             f"disagreements: {len(found.disagreements)} page(s), {found.adjudicated} adjudicated; settle one with "
             f"{agreement.ADJUDICATE}",
             f"Cohen's κ per pair on the pages both judged; {pct} bootstrap intervals over pages ({found.resamples} "
             f"resamples, seed {found.seed}); docs/evaluation.md#several-annotators-agreement-and-adjudication")
    return Section("Annotator agreement", lines, table=found.pairs_frame())


def flips_section(flips: agreement.AnnotatorFlips) -> Section:
    """Each metric's verdict under each annotator's marks, and one line per metric whose verdict flips."""
    rows = [{"metric": m.metric, "labels alone": m.before, **{v.who: v.outcome for v in m.verdicts},
             "flips?": "yes" if m.flipped else "no"} for m in flips.metrics]
    return Section("Verdicts by annotator", (flips.sentence(), *flips.lines()),
                   table=pd.DataFrame(rows) if rows else None)


def _interval(ci: tuple[float, float] | None) -> str:
    return "n/a" if ci is None else f"{ci[0]:.4f} to {ci[1]:.4f}"
