"""Names the eval CLI needs before any work (the report formats, the default metrics) and the name of a run's
own lookups in `eval_query_metric`, shared by eval.storage and eval.judged (light to import)."""

FORMATS = ("markdown", "html", "csv", "parquet", "jsonl", "json", "trec")
DEFAULT_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "map@100", "hit@10", "p@10")
LOOKUP = "lookup"  # the `system` of a run's own lookups (beside `bm25` and `oracle`)
