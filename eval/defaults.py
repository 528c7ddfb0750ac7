"""Names the eval CLI needs before any work: the report formats and the default metrics (light to import)."""

FORMATS = ("markdown", "html", "csv", "parquet", "jsonl", "json")
DEFAULT_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "map@100", "hit@10", "p@10")
