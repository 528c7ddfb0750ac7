"""Names the eval CLI needs before any work (the report formats, the default metrics) and the name of a run's
own lookups in `eval_query_metric`, shared by eval.storage and eval.judged (light to import)."""

FORMATS = ("markdown", "html", "csv", "parquet", "jsonl", "json", "trec")
DEFAULT_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "map@100", "hit@10", "p@10")
LOOKUP = "lookup"  # the `system` of a run's own lookups (beside `bm25` and `oracle`)

# The comparison the README, docs/evaluation.md, docs/cli.md, docs/app.md, docs/parallel.md and the app's sweep box
# suggest first on the sample (`python -m eval sweep --dataset data --grid l0_filter=true,false`): the L0 filter on
# and off. The sample holds questions where the filter helps and where it hurts (data/README.md), so the two runs
# differ; tests/test_sample_comparison.py runs it and checks that they do, and that the docs and the app suggest it.
SAMPLE_GRID = "l0_filter=true,false"
