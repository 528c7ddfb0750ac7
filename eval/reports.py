"""Reports of a run or a comparison: Markdown, self-contained HTML, CSV/Parquet (per query), JSONL traces, JSON.

Markdown and HTML are retrieval.export's renderers over the same sections (title, key-value lines, table),
so the two formats, and the app's exports, cannot drift apart; every cell is made safe there.
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from retrieval import TraceStore
from retrieval.config import changed_settings
from retrieval.export import Section, cell_text, csv_safe, html_document, is_ms, markdown_document
from retrieval.traces import TraceFilter, export_traces

from . import abstention_report, agreement_report, facets_report
from .attribution import missed_cell
from .compare import EXTERNAL, SIGNIFICANCE, Comparison, significance_words
from .defaults import FORMATS
from .depth import judged_line
from .model_notes import models_line
from .oracle import headroom_table
from .runs import RunResult
from .ties import ties_sentence, ties_table

ALIASES = {"md": "markdown", "htm": "html", "pq": "parquet"}
TABLE_ROWS = 20
JSON_TEXT = ("tie_ranges", "facets")  # per-question mappings written as JSON text in CSV and Parquet reports
TABLE_DIAGNOSTICS = ("oracle", "filter_by_domain", "filter_confusion", "answerability", "missed_stages",
                     "ties", "judged_at_10")  # their own sections


def normalize_format(fmt: str) -> str:
    name = ALIASES.get(str(fmt).lower(), str(fmt).lower())
    if name not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; known formats: {', '.join(FORMATS)}")
    return name


def render(obj: RunResult | Comparison, fmt: str, *, store: TraceStore | None = None) -> str | bytes:
    """The report of a run or comparison in `fmt`; `jsonl` (the traces) needs the trace `store`."""
    fmt = normalize_format(fmt)
    if not isinstance(obj, (RunResult, Comparison)):
        raise ValueError(f"can only report a RunResult or a Comparison, got {type(obj).__name__}")
    if fmt == "json":
        return json.dumps(obj.to_dict(), indent=2, default=str, ensure_ascii=False)
    if fmt == "jsonl":
        return _traces(obj, store)
    if fmt == "trec":
        if not isinstance(obj, RunResult):
            raise ValueError("a TREC run file holds one run; write each run's with `python -m eval report RUN "
                             "--format trec`")
        from .trec_export import run_file
        return run_file(_store(store), obj.run_id)
    if fmt in ("csv", "parquet"):
        frame = _json_text(_every_question(obj), JSON_TEXT)
        frame = _flat(frame) if fmt == "csv" else frame
        if fmt == "csv":
            return csv_safe(frame).to_csv(index=False)
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    sections = _run_sections(obj) if isinstance(obj, RunResult) else _comparison_sections(obj)
    sections += agreement_report.sections(list(obj.per_query["query"]) if "query" in obj.per_query else [], store,
                                          obj if isinstance(obj, Comparison) else None)
    return markdown_document(sections) if fmt == "markdown" else html_document(sections)


def export(obj: RunResult | Comparison, fmt: str, path: str | Path, *, store: TraceStore | None = None) -> Path:
    """Write `render(obj, fmt)` to `path` and return it (JSONL: streamed there by DuckDB, never held here)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if normalize_format(fmt) == "jsonl" and isinstance(obj, (RunResult, Comparison)):
        export_traces(_store(store), target, "jsonl", _runs(obj), oldest_first=True, overwrite=True)
        return target
    content = render(obj, fmt, store=store)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")
    return target


def _traces(obj: RunResult | Comparison, store: TraceStore | None) -> str:
    """The run's (or both runs') lookups as JSON lines in time order, JSON columns nested: DuckDB writes them to
    a temporary file (retrieval's export_traces), read back as the text `render` returns."""
    with tempfile.TemporaryDirectory(prefix="run-traces-") as folder:
        out = Path(folder) / "traces.jsonl"
        export_traces(_store(store), out, "jsonl", _runs(obj), oldest_first=True)
        return out.read_text(encoding="utf-8")


def _store(store: TraceStore | None) -> TraceStore:
    if store is None:
        raise ValueError("the jsonl report holds the run's traces; pass the trace store (--traces)")
    return store


def _json_text(frame: pd.DataFrame, names: tuple[str, ...]) -> pd.DataFrame:
    """`names` columns (mappings that are often empty, which Parquet cannot store as a struct) as JSON text."""
    found = [n for n in names if n in frame]
    if not found:
        return frame
    return frame.assign(**{n: frame[n].map(lambda v: json.dumps(v) if isinstance(v, dict) else v) for n in found})


def _runs(obj: RunResult | Comparison) -> TraceFilter:
    return TraceFilter(run_ids=(obj.run_id,) if isinstance(obj, RunResult) else (obj.run_a, obj.run_b))


def _every_question(obj: RunResult | Comparison) -> pd.DataFrame:
    """A run's per-question rows, its unanswerable questions among them (graded, no metric), in order; a
    comparison's paired rows."""
    if not isinstance(obj, RunResult) or obj.unanswerable is None or obj.unanswerable.empty:
        return obj.per_query
    both = pd.concat([obj.per_query, obj.unanswerable], ignore_index=True)
    return both.sort_values("position", kind="stable").reset_index(drop=True)


def _flat(frame: pd.DataFrame) -> pd.DataFrame:
    """List columns joined with `; ` so CSV cells stay readable."""
    flat = frame.copy()
    for name in flat.columns:
        if flat[name].map(lambda v: isinstance(v, (list, tuple))).any():
            flat[name] = flat[name].map(lambda v: "; ".join(map(str, v)) if isinstance(v, (list, tuple)) else v)
    return flat


def _run_sections(run: RunResult) -> list[Section]:
    info = run.dataset
    changed = changed_settings(run.overrides)  # a value set to its default is no change
    head = (f"dataset: {info.get('name')} ({info.get('kind')}, split {info.get('split')}, "
            f"{info.get('queries')} queries)", *_dataset_notes(info), f"top_k retrieved: {run.top_k}",
            _settings_line(run, changed),
            f"created: {run.created_at:%Y-%m-%d %H:%M:%S} UTC; {run.seconds:.1f} s", _libraries(run),
            models_line(run.models))
    metrics = headroom_table(run.metrics, run.baseline, run.diagnostics).rename(columns={"bm25": "bm25 baseline"})
    metrics.insert(3, "delta", [None if b is None or pd.isna(b) else round(v - b, 4)
                                for v, b in zip(metrics["lookup"], metrics["bm25 baseline"], strict=True)])
    primary = next(iter(run.metrics), None)
    worst = run.per_query.sort_values([primary, "query_id"]).head(TABLE_ROWS) if primary else None
    keep = ["query_id", "query", primary, "first_relevant_rank", "missed", "filter_decision", "filter_category",
            "filter_harm", "retrieval_layer"]
    if worst is not None:
        worst = worst.assign(missed=worst.get("relevant_stages", pd.Series(None, index=worst.index)).map(missed_cell))
    return [Section(f"Evaluation run {run.run_id}", head),
            Section("Metrics", (_oracle_line(run.diagnostics), judged_line(run.diagnostics)), table=metrics),
            Section("Diagnostics", tuple(_diagnostic_lines(run.diagnostics))),
            *_filter_sections(run.diagnostics),
            *_missed_sections(run.diagnostics.get("missed_stages")),
            *_ties_sections(run.diagnostics.get("ties")),
            *abstention_report.run_sections(run.diagnostics.get("answerability"), run.unanswerable),
            Section(f"Lowest {primary} queries", table=None if worst is None else worst.reindex(columns=keep))]


def _missed_sections(missed: dict[str, Any] | None) -> list[Section]:
    """Where the run lost its relevant pages: the stage counts (eval.attribution)."""
    if not missed:
        return []
    if "counts" not in missed:
        return [Section("Missed relevant pages", (f"not attributed: {missed.get('skipped')}",))]
    table = pd.DataFrame([{"stage": stage, "pages": n} for stage, n in missed["counts"].items()],
                         columns=["stage", "pages"])
    return [Section("Missed relevant pages", (missed["sentence"], "each page's first lost stage: docs/explain.md"),
                    table=table)]


def _settings_line(run: RunResult, changed: dict[str, Any]) -> str:
    """What the run ran with: the settings it changed, or, for an imported run, the system and its file."""
    if run.config.get("system") == EXTERNAL:
        return f"system: {run.config.get('name')}, imported from {run.config.get('run_file')} (no settings of ours)"
    return f"settings changed: {_settings(changed) if changed else 'none (defaults)'}"


def _ties_sections(summary: dict[str, Any] | None) -> list[Section]:
    """How much the order of tied scores moves the metrics (eval.ties); a table when it moves any."""
    rows = ties_table(summary)
    return [Section("Ties", (ties_sentence(summary), "conventions: docs/evaluation.md#ties"),
                    table=pd.DataFrame(rows) if rows else None)]


def _libraries(run: RunResult) -> str:
    """The versions of the libraries that decide the run's numbers, as recorded."""
    if run.library_versions is None:
        return ("libraries: not recorded (a run stored before they were, a replay's recorded calls, or an "
                "imported run)")
    return "libraries: " + ", ".join(f"{k} {v or 'not installed'}" for k, v in run.library_versions.items())


def _dataset_notes(info: dict[str, Any]) -> list[str]:
    """What the run did not score or could not find, said rather than dropped."""
    notes = []
    if info.get("unlabelled_skipped"):
        notes.append(f"not scored: {info['unlabelled_skipped']} row(s) have no text or no `relevant` field, "
                     f"e.g. {cell_text(info.get('unlabelled_examples'))}")
    if info.get("unanswerable"):
        notes.append(f"unanswerable (no relevant page; graded, not ranked): {info['unanswerable']} question(s), "
                     f"e.g. {cell_text(info.get('unanswerable_examples'))}"
                     + (f"; {info['unanswerable_from_file']} from {info['unanswerable_file']}"
                        if info.get("unanswerable_file") else ""))
    if info.get("exclude_paths"):
        notes.append(f"excluded paths: {cell_text(info['exclude_paths'])}")
    if info.get("relevant_not_in_kb"):
        notes.append(f"relevant pages not in the knowledge base: {info['relevant_not_in_kb']} (they count as misses), "
                     f"e.g. {cell_text(info.get('relevant_not_in_kb_examples'))}")
    return notes


def _settings(settings: dict[str, Any]) -> str:
    """`name = value, …`, as `--set` takes them."""
    return ", ".join(f"{k} = {cell_text(v)}" for k, v in settings.items())


def _oracle_line(diagnostics: dict[str, Any]) -> str:
    oracle = diagnostics.get("oracle") or {}
    if "metrics" not in oracle:
        return f"oracle filter: skipped ({oracle.get('skipped', 'not measured in this run')})"
    return (f"oracle filter: each query again with its true category ({oracle.get('category_rule')}) as the "
            f"caller's filter; {oracle.get('queries_with_category')} queries filtered, "
            f"{oracle.get('queries_unfiltered')} unfiltered; headroom = oracle filter - lookup")


def _filter_sections(diagnostics: dict[str, Any]) -> list[Section]:
    """Per-domain filter precision and harm, and the chosen-versus-true confusion, when a filter was applied."""
    by_domain = diagnostics.get("filter_by_domain") or {}
    if not by_domain:
        return []
    domains = pd.DataFrame([{"domain": d, **v} for d, v in by_domain.items()])
    confusion = pd.DataFrame(diagnostics.get("filter_confusion") or [], columns=["chosen", "true", "count"])
    return [Section("Filter by applied category", ("precision = correct / applied; harm = a relevant page "
                                                   "outside the category",), table=domains),
            Section("Filter confusion (chosen vs true category)", table=confusion.head(TABLE_ROWS * 2))]


def _diagnostic_lines(diagnostics: dict[str, Any]) -> list[str]:
    """One line per diagnostic, as text: `filter_harm: count 0, rate 0, missed 0, query_ids none`."""
    lines = []
    for key, value in diagnostics.items():
        if key in TABLE_DIAGNOSTICS:
            continue
        if isinstance(value, dict) and "query_ids" in value:
            ids = list(value["query_ids"] or [])
            shown = ", ".join(ids[:TABLE_ROWS]) + (f" … (+{len(ids) - TABLE_ROWS})" if len(ids) > TABLE_ROWS else "")
            value = {**{k: v for k, v in value.items() if k != "query_ids"}, "query_ids": shown or "none"}
        lines.append(f"{key}: {cell_text(value, ms=is_ms(key))}")
    return lines


def _comparison_sections(comparison: Comparison) -> list[Section]:
    settings = ", ".join(f"{k} {cell_text(a)} → {cell_text(b)}" for k, (a, b) in comparison.config_diff.items())
    head = (f"A: {comparison.run_a} ({comparison.datasets[0]})", f"B: {comparison.run_b} ({comparison.datasets[1]})",
            f"paired queries: {len(comparison.per_query)}; unpaired: {cell_text(comparison.unpaired)}",
            f"settings A → B: {settings or 'identical'}", *(n.line() for n in comparison.library_notes()),
            *(n.line() for n in comparison.model_notes()),
            *_verdicts(comparison),
            f"delta = B − A; significance: the two-sided paired randomisation test at p below {SIGNIFICANCE}, as on "
            "the app's Compare page")
    rows = [{"metric": m, "A": s["mean_a"], "B": s["mean_b"], "delta": s["delta"],
             "wins/ties/losses": f"{s['wins']}/{s['ties']}/{s['losses']}",
             "significance": significance_words(s["p_randomization"], s["delta"])}
            for m, s in comparison.metrics.items()]
    m = comparison.primary_metric
    keep = ["query_id", "query", f"{m}_a", f"{m}_b", f"{m}_delta", "first_relevant_rank_a", "first_relevant_rank_b",
            "filter_decision_a", "filter_category_a", "filter_decision_b", "filter_category_b"]
    losses = comparison.losses(TABLE_ROWS).reindex(columns=keep)
    losses["query"] = losses["query"].map(lambda q: q if len(str(q)) <= 80 else str(q)[:79] + "…")
    return [Section(f"Comparison {comparison.run_a} vs {comparison.run_b}", head),
            Section("Metrics", table=pd.DataFrame(rows)),
            *abstention_report.comparison_sections(*comparison.answerability),
            *_moves_section(comparison.stage_moves),
            *facets_report.sections(comparison.facets),
            Section(f"Largest per-query losses of B on {comparison.primary_metric}", table=losses)]


def _moves_section(moves: dict[str, Any] | None) -> list[Section]:
    """Which stages of the lookup moved between the runs (eval.attribution.stage_moves)."""
    if not moves or not moves.get("sentences"):
        return []
    return [Section("Where B lost or won relevant pages", tuple(moves["sentences"]))]


def _verdicts(comparison: Comparison) -> list[str]:
    """The primary metric's outcome in words, as the Compare page says it: 'ndcg@10: B better, significant …'."""
    stats = comparison.metrics.get(comparison.primary_metric)
    if not stats:
        return []
    return [f"{comparison.primary_metric} (primary): {significance_words(stats.get('p_randomization'), stats['delta'])}"
            f"; mean A {cell_text(stats['mean_a'])} → B {cell_text(stats['mean_b'])}; B wins {stats['wins']}, ties "
            f"{stats['ties']}, loses {stats['losses']} of {stats['n']} queries"]
