"""The relevance confidence's fitted numbers, written by `python -m eval.fit_confidence`
on 2026-12-05 from 1,385 questions of eval.answerability's fitting part
(the held-out part was not used).
Do not edit by hand: refit."""

SIGNALS = (
    'l1_score',
    'word_lead',
    'margin',
    'primary_l0',
    'corpus_coverage',
    'primary_coverage',
    'query_terms',
)
MEAN = (
    0.453565,
    -0.025127,
    0.206306,
    0.347988,
    0.60723,
    0.27709,
    2.25958,
)
SCALE = (
    0.248209,
    0.160059,
    0.205618,
    0.476332,
    0.326973,
    0.253512,
    0.434647,
)
WEIGHTS = (
    0.351387,
    -0.795955,
    0.679744,
    0.158835,
    0.773941,
    1.68802,
    0.512765,
)
INTERCEPT = -2.53638
HIGH = 0.8471  # confidence at or above: high
MEDIUM = 0.2027  # at or above: medium; below: low (the result abstains)
