"""Command line: `python -m retrieval lookup "QUERY" --kb DIR ...` prints the result JSON.

A thin layer over the library: it parses flags into a LookupConfig, opens the index and the trace
store, and turns bad input into a one-line message with a non-zero exit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval.agent.categories import check_category
from retrieval.agent.http_flags import add_http_flags, http_settings
from retrieval.agent.tool import tool_definition
from retrieval.config import LookupConfig, add_config_flags, config_flag, config_from_args  # noqa: F401 (re-exported)
from retrieval.console.pipes import quiet_when_reader_leaves
from retrieval.index.build import KnowledgeIndex, open_index
from retrieval.kb.model import KnowledgeBaseNotFound
from retrieval.lookup.explain_command import add_explain, run_explain
from retrieval.lookup.invocation import Recorder, ToolInvocation
from retrieval.lookup.model_parts import prepare_models
from retrieval.lookup.orchestrator import lookup_knowledge
from retrieval.lookup.recorders import combine
from retrieval.otel.env import tracing_from_env
from retrieval.paths import default_kb, default_traces, trace_sources
from retrieval.traces import command_helper, gaps_command, trend_commands
from retrieval.traces import commands as trace_commands
from retrieval.traces.command_helper import CommandHelper
from retrieval.traces.db import TraceStoreError
from retrieval.traces.store import TraceStore
from retrieval.traces.writer import TraceStoreLockedWarning

if TYPE_CHECKING:
    from retrieval.otel.export import Tracing

CLI_EXPORT_TIMEOUT = 1.0  # seconds one export may take with its retries in a one-shot lookup (a dead collector)
CLI_EXIT_WAIT = 2.0  # seconds the lookup command waits at exit for its spans to be sent
OTLP_HELP = ("export each lookup as OpenTelemetry spans (OTLP over HTTP) to this collector, e.g. "
             "http://localhost:4318 (default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or $OTEL_EXPORTER_OTLP_ENDPOINT)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m retrieval", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    lookup = commands.add_parser("lookup", help="look up a query and print the result JSON")
    lookup.add_argument("query", help="the question or keywords")
    lookup.add_argument("--category", help="caller's category filter (always kept)")
    add_kb_flags(lookup)
    lookup.add_argument("--traces", default=None,
                        help="DuckDB trace file (default: traces.duckdb). Once the command exits 0, its row is in "
                             "the file's tool_invocation for any DuckDB client opened after it (read-only opens "
                             "included: nothing of this command holds the file by then), unless a warning said "
                             "another process held the file: then the row arrives when that process lets go")
    lookup.add_argument("--no-trace", action="store_true", help="do not record the invocation")
    lookup.add_argument("--lock-timeout", type=float, default=command_helper.LOCK_TIMEOUT, metavar="SECONDS",
                        help="how long to wait for a trace file another process holds before leaving the row in "
                             f"the spool beside it (default {command_helper.LOCK_TIMEOUT:g})")
    lookup.add_argument("--compact", action="store_true", help="one-line JSON")
    lookup.add_argument("--otlp-endpoint", default=None, metavar="URL", help=OTLP_HELP)
    add_config_flags(lookup)
    add_explain(commands, add_kb_flags, add_config_flags)
    index = commands.add_parser("index", help="build (or load from cache) the index and print a summary")
    add_kb_flags(index)
    index.add_argument("--svd-dims", dest="svd_dims", type=int, default=LookupConfig.svd_dims)
    index.add_argument("--rebuild", action="store_true",
                       help="build the index whole (a new LSA fit) instead of updating a cached one for changed files")
    index.add_argument("--keep-fit", dest="keep_fit", action="store_true",
                       help="with --rebuild: keep the cached index's LSA fit (updated first for changed files), "
                            "so the rebuild ranks as the updated index does")
    index.add_argument("--l1-dense-model", dest="l1_dense_model", default=None, metavar="SPEC",
                       help="also give every section its vector from this dense model (onnx:PATH, st:NAME_OR_PATH, "
                            "callable:module:function, hash:DIM), encoding only what the vector store lacks, with "
                            "progress on stderr; lookups with --l1-dense-model then start at once (docs/models.md)")
    mcp = commands.add_parser("mcp", help="serve lookup_knowledge as an MCP tool (stdio; needs the [mcp] extra)")
    add_kb_flags(mcp)
    mcp.add_argument("--traces", default=None, help="DuckDB trace file (default: traces.duckdb)")
    mcp.add_argument("--no-trace", action="store_true", help="do not record invocations")
    mcp.add_argument("--no-follow", dest="follow", action="store_false",
                     help="serve the index as it was at start; by default an edited, added or deleted page is "
                          "served within about a second, without a restart")
    mcp.add_argument("--http", type=int, default=None, metavar="PORT",
                     help="serve streamable HTTP on HOST:PORT (--host, default 127.0.0.1) instead of stdio")
    add_http_flags(mcp)
    mcp.add_argument("--otlp-endpoint", default=None, metavar="URL", help=OTLP_HELP)
    add_config_flags(mcp)
    definition = commands.add_parser("tool-definition", help="print the agent tool definition as JSON")
    add_kb_flags(definition)
    traces = commands.add_parser("traces", help="work on a trace file").add_subparsers(dest="action", required=True)
    backfill = traces.add_parser("export-otlp", help="send stored invocations to an OTLP collector as spans, with "
                                                     "their original timestamps")
    backfill.add_argument("--traces", default=None, help="DuckDB trace file, or a folder of them read as one "
                                                         "(default: $LOOKUP_KNOWLEDGE_TRACES, else traces.duckdb)")
    backfill.add_argument("--since", default=None, help="only rows created at or after this: an ISO date or time "
                                                        "(UTC unless it has an offset), or 90m, 24h, 7d, 2w")
    backfill.add_argument("--run", default=None, metavar="RUN_ID", help="only the lookups of this evaluation run")
    backfill.add_argument("--otlp-endpoint", default=None, metavar="URL", help=OTLP_HELP.replace("each lookup",
                                                                                                 "the rows"))
    trace_commands.add_export(traces)
    trace_commands.add_prune(traces)
    trace_commands.add_compact(traces)
    trend_commands.add_trends(traces)
    trend_commands.add_changes(traces, add_kb_flags)
    gaps_command.add_gaps(traces, add_kb_flags)
    pack = traces.add_parser("pack", help="fold the live parts and DuckDB's log into the trace file now, so the file "
                                          "alone holds every row (to copy it)")
    pack.add_argument("--traces", default=None, help="DuckDB trace file (default: traces.duckdb)")
    pack.add_argument("--lock-timeout", type=float, default=command_helper.LOCK_TIMEOUT, metavar="SECONDS",
                      help="how long to wait for a trace file another process holds "
                           f"(default {command_helper.LOCK_TIMEOUT:g})")
    return parser


def add_kb_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kb", default=None, help="knowledge base: Markdown folder or corpus.jsonl "
                                                   "(default: the sample in data/kb)")
    parser.add_argument("--strict", action="store_true", help="fail on a file with broken front matter")
    parser.add_argument("--no-cache", action="store_true", help="rebuild the index instead of using the cache")
    parser.add_argument("--exclude", default="", metavar="PREFIX,...",
                        help="leave these paths out of the knowledge base: comma-separated, relative to its root "
                             "(`news` drops news/ and everything under it; for a corpus.jsonl, `_id` prefixes)")


def open_kb(args: argparse.Namespace, kb: Any, svd_dims: int) -> KnowledgeIndex:
    """The index of `kb` as the knowledge-base flags (`add_kb_flags`) ask for it (a missing base: an error that
    says to pass --kb, where the library's names the function's argument)."""
    try:
        return open_index(kb, svd_dims=svd_dims, strict=args.strict, use_cache=not args.no_cache,
                          exclude_paths=args.exclude, rebuild=getattr(args, "rebuild", False),
                          keep_fit=getattr(args, "keep_fit", False))
    except KnowledgeBaseNotFound as exc:
        raise ValueError(exc.with_flag("--kb")) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line; its exit status (2 for bad input, 141 when the reader of stdout left early)."""
    return quiet_when_reader_leaves(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    tracing: list[Tracing] = []  # the lookup's export pipeline, stopped once the result is printed
    status, output = 0, None
    breaches: tuple[str, ...] = ()
    try:
        args = build_parser().parse_args(argv)
        output = _run(args, tracing)
        if isinstance(output, trend_commands.Outcome):  # trends, changes: a breach is exit 1, a line each
            breaches, output = output.breaches, output.output
            status = 1 if breaches else 0
    except (ValueError, TraceStoreError) as exc:  # KnowledgeBaseError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        status = 2
    finally:  # a helper prestarted for a command line refused before its lookup: no trace file is left
        command_helper.release_prestarted()
    try:
        if output is not None:  # the mcp server has already used stdout for the protocol
            print(output, flush=True)
        for line in breaches:
            print(line, file=sys.stderr, flush=True)
    finally:  # (a reader that left early included: the spans are still sent)
        if tracing:  # after the result: a slow or dead collector delays the exit, never the answer
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                tracing[0].shutdown(CLI_EXIT_WAIT)
            for warning in caught:
                print(f"warning: {warning.message}", file=sys.stderr)
    return status


def _run(args: argparse.Namespace, tracing: list[Tracing]) -> str | trend_commands.Outcome | None:
    if args.command == "traces":
        if args.action == "trends":
            return trend_commands.run_trends(args)
        if args.action == "changes":
            return trend_commands.run_changes(args, open_kb)
        if args.action == "export":
            return trace_commands.run_export(args)
        if args.action == "prune":
            return trace_commands.run_prune(args)
        if args.action == "compact":
            return trace_commands.run_compact(args)
        if args.action == "gaps":
            return gaps_command.run_gaps(args, open_kb)
        return _pack(args) if args.action == "pack" else _export_otlp(args)
    kb = args.kb or default_kb()
    if args.command == "mcp":
        return _serve_mcp(args, kb)
    if args.command == "explain":
        return run_explain(args, kb, config_from_args(args), open_kb)
    if args.command == "lookup":
        return _lookup(args, kb, tracing)
    index = open_kb(args, kb, getattr(args, "svd_dims", LookupConfig.svd_dims))
    if args.command == "index":
        summary: dict[str, Any] = index.kb.summary()
        summary.update(l1_dimensions=index.l1.dimensions if index.l1 else 0, from_cache=index.from_cache,
                       build_seconds=round(index.build_seconds, 3), l1_unavailable=index.l1_unavailable_reason,
                       updated=index.update is not None)
        if index.update is not None:
            summary["update"] = {"parsed": index.update.parsed, "entries_kept": index.update.entries_kept,
                                 "rows_added": index.update.rows_added, "rows_removed": index.update.rows_removed,
                                 **index.update.lineage.to_dict()}
        if index.kept_fit is not None:  # a rebuild on the cached index's LSA fit: its drift is still the fit's
            summary["kept_fit"] = index.kept_fit.to_dict()
        if args.l1_dense_model:
            summary["dense"] = _dense_vectors(index, args.l1_dense_model)
        return json.dumps(summary, indent=2)
    return json.dumps(tool_definition(index.kb.domains()), indent=2)


def _dense_vectors(index: KnowledgeIndex, model: str) -> dict[str, Any]:
    """`index --l1-dense-model`: every section's vector made (progress on stderr, a line per tenth) and what
    it took; a model that cannot load is the command's one-line error."""
    from retrieval.models import load_encoder

    shown: list[int] = []

    def progress(stage: str, fraction: float) -> None:
        tenth = int(fraction * 10)
        if not shown or tenth > shown[-1]:
            shown.append(tenth)
            print(f"{stage}: {fraction:.0%}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    encoder = load_encoder(model)
    prepare_models(index, LookupConfig(l1_dense_model=model), progress)
    return {"model": encoder.info.to_dict(), "sections": len(index.l1.chunks) if index.l1 else 0,
            "seconds": round(time.perf_counter() - started, 3)}


def _lookup(args: argparse.Namespace, kb: Any, tracing: list[Tracing]) -> str:
    """`lookup`: the result JSON. Input refused before the lookup (an empty query, a bad flag, a missing knowledge
    base) records nothing and leaves no trace file behind; a category the base does not have is refused as the
    MCP tool refuses it, and recorded as a failed call, as the library records the calls it refuses."""
    if not args.query.strip():
        raise ValueError('the query is empty; pass the question in quotes, e.g. lookup "reset my API token"')
    config = config_from_args(args)
    if not args.lock_timeout >= 0:
        raise ValueError(f"--lock-timeout takes seconds, 0 or more, got {args.lock_timeout}")
    path = None if args.no_trace else Path(args.traces or default_traces())
    helper = None if path is None else command_helper.take(path, args.lock_timeout)  # DuckDB loads beside the
    store: TraceStore | None = None  # lookup, in a helper process, which shows the row before this one exits
    recorded: list[ToolInvocation] = []
    caught: list[warnings.WarningMessage] = []
    try:
        index = open_kb(args, kb, config.svd_dims)
        prepare_models(index, config)  # a missing or mismatched model: the command's one-line error
        if path is not None:  # (made once the input is good: a refused command makes no folder)
            store = TraceStore(path, open_now=False, lock_timeout=args.lock_timeout, background=False)
            if helper is not None:
                helper.open()  # the helper makes and checks the file beside the lookup
        tracing.extend(filter(None, [tracing_from_env(args.otlp_endpoint, timeout_s=CLI_EXPORT_TIMEOUT)]))
        recorder = combine(store, tracing[0].recorder if tracing else None)
        record = None if recorder is None else _Noting(recorder, recorded)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                check_category(args.category, index.kb.domains(), {"query": args.query, "category": args.category,
                                                                   "top_k": args.top_k}, config, record)
                result = lookup_knowledge(args.query, index=index, config=config, category=args.category,
                                          top_k=args.top_k, recorder=record)
            finally:  # a refused call's row too: it is in the file when the command exits
                if store is not None and helper is not None and recorded:
                    _drain_at_exit(store, helper)
    finally:
        if helper is not None and not recorded:
            helper.cancel()  # nothing recorded: the helper exits having made nothing
        elif helper is not None:
            helper.close()
        for warning in caught:
            print(f"warning: {warning.message}", file=sys.stderr)
    if index.kb.problems:  # the count is in retrieval_details.kb; the names go to stderr
        named = "; ".join(f"{p.path}:{p.line}: {p.message}" for p in index.kb.problems[:3])
        print(f"warning: {len(index.kb.problems)} knowledge-base file(s) or line(s) skipped ({named}"
              f"{'; …' if len(index.kb.problems) > 3 else ''}); `index` lists them all", file=sys.stderr)
    return json.dumps(result.to_dict(), indent=None if args.compact else 2, ensure_ascii=False)


class _Noting:
    """A recorder that notes each invocation it passes on (the command drains only when it recorded a row)."""

    def __init__(self, recorder: Recorder, noted: list[ToolInvocation]) -> None:
        self.recorder, self.noted = recorder, noted

    def __call__(self, invocation: ToolInvocation) -> None:
        self.noted.append(invocation)
        self.recorder(invocation)


def _drain_at_exit(store: TraceStore, helper: CommandHelper) -> None:
    """Have the helper drain the row and show it before this command exits (then it stays on as the file's
    keeper). A file another process held for the lock timeout leaves the row waiting (one warning line naming
    the holder); a file the helper cannot use is this command's error; a helper that failed is replaced by a
    drain here."""
    outcome = helper.finish()
    if outcome.status == "ok":
        store.detach()
    elif outcome.status == "locked":
        store.detach()
        warnings.warn(f"{outcome.message}; the row is kept in {store.spool_path.name} beside it and arrives when it "
                      f"lets go", TraceStoreLockedWarning, stacklevel=2)
    elif outcome.status == "error":
        store.detach()
        raise TraceStoreError(outcome.message)
    else:
        store.close()


def _serve_mcp(args: argparse.Namespace, kb: Any) -> None:
    """Load the index once, then serve until the client leaves; `mcp` is imported only here."""
    if args.http is not None and not 1 <= args.http <= 65535:
        raise ValueError(f"--http takes a port from 1 to 65535, got {args.http}")
    http = http_settings(args, os.environ)  # a host beyond this machine without authentication stops here
    try:
        from retrieval.agent.mcp_server import serve
    except ImportError as exc:
        raise ValueError(f"the MCP server needs the mcp package ({exc}); "
                         f"install it with pip install 'lookup-knowledge[mcp]'") from None
    auth = None
    if http is not None:
        from retrieval.agent.mcp_auth import server_auth

        auth = server_auth(http)  # an OAuth issuer's keys are fetched now: none to be had refuses to start
    config = config_from_args(args)
    tracing = tracing_from_env(args.otlp_endpoint, set_global=True)  # the SDK's `tools/call` spans go there too
    try:
        index = open_kb(args, kb, config.svd_dims)
        prepare_models(index, config)  # the server starts with its models loaded, or not at all
        # opened once the base and the models are good: a refused start leaves no trace file behind
        store = None if args.no_trace else TraceStore(args.traces or default_traces())
        if args.follow:  # edits to the knowledge base are served without a restart (retrieval.index.live)
            from retrieval.index.live import LiveIndex

            index = LiveIndex(kb, index, svd_dims=config.svd_dims, strict=args.strict, use_cache=not args.no_cache,
                              exclude_paths=args.exclude).start()
        serve(index, config, combine(store, tracing.recorder if tracing else None), http=http, auth=auth)
    finally:
        if tracing is not None:
            tracing.shutdown()


def _export_otlp(args: argparse.Namespace) -> str:
    """`traces export-otlp`: the stored rows as spans; the report as JSON, or an error when none got through."""
    from retrieval.otel.backfill import export_stored, parse_since
    from retrieval.otel.settings import settings_from_env

    settings = settings_from_env(endpoint=args.otlp_endpoint)
    if settings is None:
        raise ValueError("export-otlp needs a collector: pass --otlp-endpoint URL (e.g. http://localhost:4318) or "
                         "set OTEL_EXPORTER_OTLP_ENDPOINT")
    since = parse_since(args.since) if args.since is not None else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = export_stored(args.traces or trace_sources(), settings, since=since, run_id=args.run)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    if report.spans_lost and not report.spans_sent:
        raise ValueError(f"no span reached {settings.endpoint} ({report.rows} row(s) read); is the collector "
                         f"running and listening for OTLP over HTTP there?")
    return json.dumps({"endpoint": settings.endpoint, **report.to_dict()}, indent=2)


def _pack(args: argparse.Namespace) -> str:
    """`traces pack`: fold the live parts and the log into the file now; what it folded, as JSON."""
    from retrieval.traces.db import TraceStoreLocked, file_holder
    from retrieval.traces.fold import pack, wal_path

    path = trace_commands.existing_traces(args.traces)
    if not args.lock_timeout >= 0:
        raise ValueError(f"--lock-timeout takes seconds, 0 or more, got {args.lock_timeout}")
    packed = pack(path, timeout=args.lock_timeout)
    if packed is None:
        holder = file_holder(path) or "another process"
        raise TraceStoreLocked(f"trace file {path} is locked by {holder} for over {args.lock_timeout:g}s; nothing "
                               f"was folded", holder)
    log = wal_path(path)
    return json.dumps({"trace_file": str(path), "folded_rows": packed.rows, "folded_parts": packed.parts,
                       "log_bytes": log.stat().st_size if log.exists() else 0}, indent=2)
