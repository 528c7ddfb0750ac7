"""The relevance confidence's fitted numbers, written by `python -m eval.fit_confidence`
on 2026-12-07 from 1,446 questions of eval.answerability's fitting part
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
    0.454118,
    -0.0200856,
    0.197963,
    0.356584,
    0.606892,
    0.277194,
    2.2367,
)
SCALE = (
    0.247065,
    0.162728,
    0.187594,
    0.47899,
    0.323662,
    0.251402,
    0.44057,
)
WEIGHTS = (
    0.199059,
    -0.861911,
    0.813108,
    0.0933056,
    0.768986,
    1.9735,
    0.562878,
)
INTERCEPT = -2.79878
HIGH = 0.8476  # confidence at or above: high
MEDIUM = 0.1934  # at or above: medium; below: low (the result abstains)
