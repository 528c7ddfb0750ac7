"""`python -m retrieval explain "QUERY" --source PATH …`: where the lookup lost each expected page, as JSON.

The flags are `lookup`'s (knowledge base, exclusions, `--category`, `--top-k`, `--no-trace` and every
configuration flag; explain records nothing either way); `--invocation ID` explains a recorded call instead,
under its recorded query, category, top-k and settings, and says "could not reproduce" when the knowledge base
or the result changed since (retrieval.lookup.explain).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from retrieval.agent.categories import check_category
from retrieval.config import LookupConfig
from retrieval.index.build import KnowledgeIndex
from retrieval.lookup.explain import explain_missing
from retrieval.lookup.model_parts import prepare_models
from retrieval.paths import default_traces, trace_sources
from retrieval.traces.store import TraceStore

OpenKb = Callable[[argparse.Namespace, Any, int], KnowledgeIndex]


def add_explain(commands: argparse._SubParsersAction, kb_flags: Callable[[argparse.ArgumentParser], None],
                config_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    """The `explain` sub-command and its flags."""
    explain = commands.add_parser("explain", help="say where the lookup lost each expected page (JSON)")
    explain.add_argument("query", nargs="?", default=None, help="the question or keywords (or --invocation)")
    explain.add_argument("--source", action="append", default=[], metavar="PATH", required=True,
                         help="a page expected in the result, as the result names sources (repeatable)")
    explain.add_argument("--category", help="caller's category filter (always kept)")
    explain.add_argument("--invocation", default=None, metavar="ID",
                         help="explain a recorded call (its query, category, top-k and settings) from --traces")
    explain.add_argument("--traces", default=None, help="DuckDB trace file for --invocation (default: traces.duckdb)")
    explain.add_argument("--no-trace", action="store_true",
                         help="taken as lookup takes it, so a lookup's command line explains as it is: explain "
                              "records nothing either way")
    explain.add_argument("--cutoff", type=int, default=None, metavar="N",
                         help="the rank a page must reach to count as returned (default: the top-k); an evaluation "
                              "run retrieves 100 and scores the first 10: --cutoff 10")
    explain.add_argument("--compact", action="store_true", help="one-line JSON")
    kb_flags(explain)
    config_flags(explain)


def run_explain(args: argparse.Namespace, kb: Any, config: LookupConfig, open_kb: OpenKb) -> str:
    """The explanation JSON of `args` (ValueError for a bad query, source or invocation)."""
    query, category, top_k = args.query, args.category, args.top_k
    recorded: dict[str, Any] = {}
    if args.invocation:
        if query:
            raise ValueError("give a QUERY or --invocation ID, not both")
        query, category, top_k, config, recorded = _recorded(args, config)
    if not query or not query.strip():
        raise ValueError('the query is empty; pass the question in quotes, e.g. explain "reset my API token" '
                         "--source api/tokens.md")
    index = open_kb(args, kb, config.svd_dims)
    prepare_models(index, config)
    check_category(category, index.kb.domains(), {"query": query, "category": category, "top_k": top_k}, config,
                   None)  # refused as lookup refuses it (nothing recorded: explain records nothing)
    if args.cutoff is not None and args.cutoff < 1:
        raise ValueError(f"--cutoff takes a rank, 1 or more, got {args.cutoff}")
    report = explain_missing(query, args.source, index=index, config=config, category=category, top_k=top_k,
                             cutoff=args.cutoff, **recorded)
    return json.dumps(report.to_dict(), indent=None if args.compact else 2, ensure_ascii=False)


def _recorded(args: argparse.Namespace, config: LookupConfig) -> tuple[str, str | None, int | None, LookupConfig,
                                                                      dict[str, Any]]:
    """A recorded call's query, category, top-k, settings and what it returned (to check the replay against)."""
    store = TraceStore(args.traces or default_traces(), sources=None if args.traces else trace_sources())
    frame = store.query("SELECT query, arguments, config, kb_fingerprint, retrieval_details->'evidence_sources' "
                        "AS sources FROM tool_invocation WHERE id = ? AND status = 'ok'", [args.invocation])
    if frame.empty:
        raise ValueError(f"no successful recorded call {args.invocation!r} in {store.path}; copy an id from the "
                         "Traces page or `traces export`")
    row = frame.iloc[0]
    arguments = json.loads(row["arguments"]) if isinstance(row["arguments"], str) else {}
    settings = json.loads(row["config"]) if isinstance(row["config"], str) else {}
    known = {k: v for k, v in settings.items() if k in LookupConfig.__dataclass_fields__}
    sources = json.loads(row["sources"]) if isinstance(row["sources"], str) else None
    return (str(row["query"]), arguments.get("category"), arguments.get("top_k"), LookupConfig(**known),
            {"recorded_fingerprint": row["kb_fingerprint"], "recorded_sources": sources})
