"""The relevance confidence's fitted numbers, written by `python -m eval.fit_confidence`
on 2026-12-07 from 1,429 questions of eval.answerability's fitting part
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
    0.453754,
    -0.0246887,
    0.196127,
    0.349206,
    0.605582,
    0.274929,
    2.24468,
)
SCALE = (
    0.246718,
    0.159255,
    0.186671,
    0.476719,
    0.324359,
    0.250456,
    0.4367,
)
WEIGHTS = (
    0.198705,
    -0.886462,
    0.743158,
    0.160223,
    0.739779,
    1.79561,
    0.509496,
)
INTERCEPT = -2.69128
HIGH = 0.8363  # confidence at or above: high
MEDIUM = 0.2176  # at or above: medium; below: low (the result abstains)
