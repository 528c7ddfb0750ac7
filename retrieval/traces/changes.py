"""What changed: the last window of production lookups against the one before, figure by figure, each change tested,
corrected for the number of figures tested, said in words, with the queries that drive it.

`--window 7d` compares [until-7d, until) with [until-14d, until-7d). The tests, all computed from aggregates DuckDB
returns (no lookup row comes to Python), exact for any sample size in the sense that no sample is drawn:
- a share: the two-proportion z-test with the pooled proportion (two-sided), over the rows where the share's
  condition is defined in each window;
- a latency quantile (p50, p95): the generalised Mood median test. Both windows are pooled, the pooled q-quantile
  m is taken, and the share of each window's latencies above m is compared with the same two-proportion test:
  under no change, each window has about 1-q of its latencies above m. It assumes nothing about the latency's
  distribution (skewed, heavy-tailed), needs two scans and no resampling, so it scales to any volume;
- `mean_confidence`: Welch's t-test from each window's mean, sample variance and count;
- `lookups` (a count) is reported, not tested.
The p-values of every figure tested are corrected together by Holm's step-down method, which holds the chance of
any false alarm at `level` whatever the dependence between the figures; a change is significant when its
Holm-adjusted p-value is below `level`.

The drivers of a significant share (or latency) change are the normalised query texts (lower case, blanks
collapsed) among the rows the share counts, ranked by their contribution to the change: a query's count over the
window's denominator, after minus before. These contributions sum exactly to the change of the share.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from retrieval.traces import reader as trace_reader
from retrieval.traces.figures import FIGURES, PRODUCTION, Figure, formatted
from retrieval.traces.filters import parse_span
from retrieval.traces.schema import TABLE
from retrieval.traces.trends import end_of, source_words, time_range

DRIVERS = 5  # queries named per significant change
SHARE_TEST = "two-proportion z-test (pooled)"
QUANTILE_TEST = "Mood's quantile test (share above the pooled quantile, two-proportion z)"
MEAN_TEST = "Welch's t-test"
NORMALISED_QUERY = r"lower(regexp_replace(trim(query), '\s+', ' ', 'g'))"


@dataclass(frozen=True)
class ReportSection:
    """An extra section of the changes report (e.g. content gaps): its title, its body as Markdown and as HTML
    (escaped by its maker: the report inserts it as given), and its data for `--json`."""

    title: str
    markdown: str
    html: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FigureChange:
    """One figure in both windows: `before`, `after` (None: no row to compute it from), `delta` (after - before),
    the `test` used, its p-value `p` and Holm-adjusted `p_adjusted` (None: not tested), `significant`, the change
    in `words`, and its `drivers`: (normalised query, count before, count after), the top contributors."""

    name: str
    before: float | None
    after: float | None
    delta: float | None
    test: str
    p: float | None
    p_adjusted: float | None
    significant: bool
    words: str
    drivers: tuple[tuple[str, int, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "before": self.before, "after": self.after, "delta": self.delta,
                "test": self.test, "p": self.p, "p_adjusted": self.p_adjusted, "significant": self.significant,
                "words": self.words, "drivers": [{"query": q, "count_before": b, "count_after": a}
                                                 for q, b, a in self.drivers]}


@dataclass(frozen=True)
class Changes:
    """The last `window` before `until` against the window before it: every figure's change (`figures`, in FIGURES'
    order), at significance `level`; `empty_reason` when the last window holds no production lookup."""

    source: str
    window: timedelta
    until: datetime
    level: float
    lookups_before: int
    lookups_after: int
    figures: tuple[FigureChange, ...]
    sections: tuple[ReportSection, ...] = ()
    empty_reason: str | None = None

    def with_sections(self, sections: Sequence[ReportSection]) -> Changes:
        """This report with `sections` added after the figures (e.g. the content gaps)."""
        return replace(self, sections=self.sections + tuple(sections))

    def significant(self) -> tuple[FigureChange, ...]:
        return tuple(figure for figure in self.figures if figure.significant)

    def tested(self) -> int:
        return sum(figure.p is not None for figure in self.figures)

    def window_label(self) -> str:
        """'last 7d', the window as alert lines name it."""
        return f"last {span_words(self.window)}"

    def window_words(self) -> str:
        """'the last 7d (2026-02-22 00:00 to 2026-03-01 00:00 UTC) against the 7d before'."""
        start = self.until - self.window
        return (f"the last {span_words(self.window)} ({start:%Y-%m-%d %H:%M} to {self.until:%Y-%m-%d %H:%M} UTC) "
                f"against the {span_words(self.window)} before")

    def _summary(self) -> str:
        return (f"{self.lookups_after:,} production lookups in {self.window_words()} ({self.lookups_before:,}); "
                f"{len(self.significant())} of {self.tested()} figures tested changed significantly at "
                f"{self.level:g} (Holm)")

    def to_text(self) -> str:
        """The report for a terminal: significant changes with their drivers first, then the rest."""
        if self.empty_reason:
            return self.empty_reason
        lines = [f"What changed: {self._summary()}", ""]
        changed, rest = self.significant(), [f for f in self.figures if not f.significant]
        lines.append("Significant:" if changed else "Significant: none")
        for figure in changed:
            lines.append(f"- {figure.words}")
            for query, before, after in figure.drivers:
                lines.append(f"    {query!r}: {before:,} before, {after:,} after")
        lines += ["", "No significant change:"] + [f"- {figure.words}" for figure in rest]
        for section in self.sections:
            lines += ["", f"{section.title}:", section.markdown]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The report as Markdown: the summary, the significant changes with their drivers, a table of every figure,
        then the extra sections."""
        if self.empty_reason:
            return f"# What changed\n\n{_md(self.empty_reason)}\n"
        out = ["# What changed", "", _md(self._summary()) + ".", "", "## Significant changes", ""]
        changed = self.significant()
        if not changed:
            out.append("None at this level.")
        for figure in changed:
            out.append(f"- {_md(figure.words)}")
            for query, before, after in figure.drivers:
                out.append(f"  - `{query.replace('`', chr(39))}`: {before:,} before, {after:,} after")
        out += ["", "## Every figure", "", "| figure | before | after | test | p | p (Holm) | in words |",
                "| --- | ---: | ---: | --- | ---: | ---: | --- |"]
        for figure in self.figures:
            out.append(f"| {figure.name} | {formatted(figure.name, figure.before)} | "
                       f"{formatted(figure.name, figure.after)} | {figure.test} | {_p(figure.p)} | "
                       f"{_p(figure.p_adjusted)} | {_md(figure.words)} |")
        for section in self.sections:
            out += ["", f"## {_md(section.title)}", "", section.markdown]
        return "\n".join(out) + "\n"

    def to_html(self) -> str:
        """The report as a standalone HTML page; every value from the trace file is escaped."""
        e = html.escape
        title = "What changed"
        body = [f"<h1>{title}</h1>"]
        if self.empty_reason:
            body.append(f"<p>{e(self.empty_reason)}</p>")
        else:
            body += [f"<p>{e(self._summary())}.</p>", "<h2>Significant changes</h2>"]
            changed = self.significant()
            if not changed:
                body.append("<p>None at this level.</p>")
            else:
                body.append("<ul>")
                for figure in changed:
                    drivers = "".join(f"<li><code>{e(q)}</code>: {b:,} before, {a:,} after</li>"
                                      for q, b, a in figure.drivers)
                    body.append(f"<li>{e(figure.words)}" + (f"<ul>{drivers}</ul>" if drivers else "") + "</li>")
                body.append("</ul>")
            body += ["<h2>Every figure</h2>", "<table>", "<tr><th>figure</th><th>before</th><th>after</th>"
                     "<th>test</th><th>p</th><th>p (Holm)</th><th>in words</th></tr>"]
            for figure in self.figures:
                cells = (figure.name, formatted(figure.name, figure.before), formatted(figure.name, figure.after),
                         figure.test, _p(figure.p), _p(figure.p_adjusted), figure.words)
                mark = ' class="significant"' if figure.significant else ""
                body.append(f"<tr{mark}>" + "".join(f"<td>{e(str(cell))}</td>" for cell in cells) + "</tr>")
            body.append("</table>")
        for section in self.sections:
            body += [f"<h2>{e(section.title)}</h2>", section.html]
        style = ("body{font-family:system-ui,sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
                 "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}"
                 "tr.significant{background:#fff3cd}")
        return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n'
                f"<style>{style}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the windows, the level, every figure's change and the sections' data."""
        return {"traces": self.source, "window": span_words(self.window),
                "before": {"since": (self.until - 2 * self.window).isoformat(),
                           "until": (self.until - self.window).isoformat(), "lookups": self.lookups_before},
                "after": {"since": (self.until - self.window).isoformat(), "until": self.until.isoformat(),
                          "lookups": self.lookups_after},
                "level": self.level, "correction": "holm", "empty_reason": self.empty_reason,
                "figures": {figure.name: figure.to_dict() for figure in self.figures},
                "sections": [{"title": s.title, "data": s.data} for s in self.sections]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def changes(path: trace_reader.Target, *, window: timedelta | str, until: datetime | str | None = None,
            level: float = 0.05) -> Changes:
    """The last `window` before `until` (default: now, UTC) against the window before it, every figure tested
    and Holm-corrected at `level`; `window` is a timedelta or a span (`7d`)."""
    span = parse_span(window, flag="--window") if isinstance(window, str) else window
    if span <= timedelta(0):
        raise ValueError(f"--window takes a span longer than 0, got {window!r}")
    if not 0 < level < 1:
        raise ValueError(f"--level takes a significance level between 0 and 1 (e.g. 0.05), got {level!r}")
    end = end_of(until)
    start = end - 2 * span
    cut = end - span
    with trace_reader.connect(path) as con:
        found = con.execute(_moments_sql(start, cut, end)).fetchall()
        windows = {row[0]: dict(zip([c[0] for c in con.description], row, strict=True)) for row in found}
        before, after, pooled = windows.get(False, {}), windows.get(True, {}), windows.get(None, {})
        above = _above(con, start, cut, end, pooled) if after and before else {}
        figures = [_test(figure, before, after, above.get(figure.name)) for figure in FIGURES]
        figures = _holm(figures, level)
        figures = [_with_drivers(con, f, start, cut, end, before, after, pooled) if f.significant else f
                   for f in figures]
    source = source_words(path)
    result = Changes(source, span, end, level, int(before.get("lookups") or 0), int(after.get("lookups") or 0),
                     tuple(figures))
    if not result.lookups_after:
        result = replace(result, empty_reason=f"no production lookups (no evaluation run) in {source} in "
                                              f"{result.window_words()}")
    return result


def span_words(span: timedelta) -> str:
    """A span as the CLI takes it: '7d', '12h', '90m'."""
    seconds = int(span.total_seconds())
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0 and unit != "w":
            return f"{seconds // size}{unit}"
    return f"{span.total_seconds() / 60:g}m"


def holm(p_values: Sequence[float]) -> tuple[float, ...]:
    """Holm's step-down adjusted p-values, in the order given: the k-th smallest is multiplied by (m - k + 1),
    made monotone, and capped at 1."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return tuple(adjusted)


def two_proportion_p(x1: int, n1: int, x2: int, n2: int) -> float:
    """The two-sided p-value of the pooled two-proportion z-test of x1/n1 against x2/n2 (1.0 when both are 0% or
    100%: nothing varies). The normal tail by `math.erfc`: exact to double precision, and no scipy to import."""
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return 1.0
    return math.erfc(abs(x2 / n2 - x1 / n1) / se / math.sqrt(2))


def welch_p(mean1: float, var1: float, n1: int, mean2: float, var2: float, n2: int) -> float:
    """The two-sided p-value of Welch's t-test from each sample's mean, variance and size (Welch-Satterthwaite
    degrees of freedom; Student's t tail from scipy.special)."""
    se2 = var1 / n1 + var2 / n2
    if se2 == 0:  # no variance in either window: the means are equal or plainly not
        return 1.0 if mean1 == mean2 else 0.0
    from scipy.special import stdtr

    df = se2 ** 2 / ((var1 / n1) ** 2 / (n1 - 1) + (var2 / n2) ** 2 / (n2 - 1))
    return float(2 * stdtr(df, -abs(mean2 - mean1) / math.sqrt(se2)))


def _moments_sql(start: datetime, cut: datetime, end: datetime) -> str:
    """One scan of both windows: per window (current true/false) and pooled (current null), each share's count
    and denominator, the latency quantiles and count, the confidence's mean, variance and count."""
    parts = ["count(*) AS lookups", "count(latency_ms) AS n_latency", "avg(confidence) AS mean_confidence",
             "var_samp(confidence) AS var_confidence", "count(confidence) AS n_confidence"]
    for figure in FIGURES:
        if figure.kind == "share":
            parts += [f'sum(CAST(({figure.condition}) AS INTEGER)) AS "x_{figure.name}"',
                      f'count({figure.condition}) AS "n_{figure.name}"']
        elif figure.kind == "latency":
            parts.append(f'{figure.sql} AS "{figure.name}"')
    return (f"SELECT CASE WHEN grouping(current) = 1 THEN NULL ELSE current END AS current, {', '.join(parts)}\n"
            f"FROM (SELECT *, created_at >= {_ts(cut)} AS current FROM {TABLE}\n"
            f"      WHERE {time_range(start, end)} AND {PRODUCTION})\n"
            f"GROUP BY GROUPING SETS ((current), ())")


def _above(con: Any, start: datetime, cut: datetime, end: datetime, pooled: dict[str, Any]) -> dict[str, Any]:
    """Per latency figure: (above before, n before, above after, n after), latencies above the pooled quantile."""
    latencies = [f for f in FIGURES if f.kind == "latency" and pooled.get(f.name) is not None]
    if not latencies:
        return {}
    counts = ", ".join(f'count(*) FILTER (WHERE latency_ms > {float(pooled[f.name])!r}) AS "{f.name}"'
                       for f in latencies)
    found = con.execute(f"SELECT created_at >= {_ts(cut)} AS current, count(latency_ms) AS n, {counts}\n"
                        f"FROM {TABLE} WHERE {time_range(start, end)} AND {PRODUCTION} GROUP BY 1").fetchall()
    rows = {row[0]: row for row in found}
    if False not in rows or True not in rows:
        return {}
    return {f.name: (int(rows[False][2 + i]), int(rows[False][1]), int(rows[True][2 + i]), int(rows[True][1]))
            for i, f in enumerate(latencies)}


def _test(figure: Figure, before: dict[str, Any], after: dict[str, Any],
          above: tuple[int, int, int, int] | None) -> FigureChange:
    """The figure's values in both windows and its test's p-value (Holm's comes later); a figure not tested has
    its words now."""
    b_text = a_text = ""
    if figure.kind == "count":
        b, a = float(before.get("lookups") or 0), float(after.get("lookups") or 0)
        moved = f"{formatted(figure.name, b)} in both windows" if a == b else \
            f"{_moved(b, a)} {formatted(figure.name, b)} to {formatted(figure.name, a)}"
        return FigureChange(figure.name, b, a, a - b, "none (a count)", None, None, False,
                            f"{figure.label} {moved} (a count: not tested)")
    p = None
    if figure.kind == "share":
        x1, n1 = int(before.get(f"x_{figure.name}") or 0), int(before.get(f"n_{figure.name}") or 0)
        x2, n2 = int(after.get(f"x_{figure.name}") or 0), int(after.get(f"n_{figure.name}") or 0)
        b, a = (x1 / n1 if n1 else None), (x2 / n2 if n2 else None)
        test = SHARE_TEST
        if n1 and n2 and 0 < x1 + x2 < n1 + n2:
            p = two_proportion_p(x1, n1, x2, n2)
        elif n1 and n2:  # 0% (or 100%) in both windows: nothing varies, nothing to test
            b_text = f"{figure.label}: no change ({formatted(figure.name, b)} in both windows, not tested)"
    elif figure.kind == "latency":
        b, a = _float(before.get(figure.name)), _float(after.get(figure.name))
        if above is not None and above[1] and above[3]:
            p = two_proportion_p(*above)
        test = QUANTILE_TEST
    else:
        b, a = _float(before.get("mean_confidence")), _float(after.get("mean_confidence"))
        n1, n2 = int(before.get("n_confidence") or 0), int(after.get("n_confidence") or 0)
        if n1 >= 2 and n2 >= 2:
            p = welch_p(b, _float(before.get("var_confidence")) or 0.0, n1, a,
                        _float(after.get("var_confidence")) or 0.0, n2)
        test = MEAN_TEST
    delta = a - b if a is not None and b is not None else None
    if p is None and not b_text:
        which = "the window before" if b is None else "the last window" if a is None else "a window (too few rows)"
        a_text = (f"{figure.label}: not tested, no lookup to compute it from in {which} "
                  f"({formatted(figure.name, b)} to {formatted(figure.name, a)})")
    return FigureChange(figure.name, b, a, delta, test if p is not None else f"none ({test} not applicable)", p,
                        None, False, b_text or a_text)


def _holm(figures: list[FigureChange], level: float) -> list[FigureChange]:
    """Each tested figure's Holm-adjusted p-value, whether it is significant, and its words."""
    tested = [i for i, f in enumerate(figures) if f.p is not None]
    adjusted = dict(zip(tested, holm([figures[i].p for i in tested]), strict=True))
    out = []
    for i, figure in enumerate(figures):
        p_adjusted = adjusted.get(i)
        if p_adjusted is None:
            out.append(figure)
            continue
        significant = p_adjusted < level
        out.append(replace(figure, p_adjusted=p_adjusted, significant=significant,
                           words=_words(figure, p_adjusted, significant)))
    return out


def _words(figure: FigureChange, p_adjusted: float, significant: bool) -> str:
    """'abstentions rose from 4.1% to 9.8%, significant (p=0.0003, Holm)', or the no-change wording."""
    label = next(f.label for f in FIGURES if f.name == figure.name)
    b, a = formatted(figure.name, figure.before), formatted(figure.name, figure.after)
    if significant and figure.before == figure.after:  # a quantile unmoved while the shares around it moved
        return f"{label} stayed at {a} but the values around it moved, significant ({_p(p_adjusted, '=')}, Holm)"
    if significant:
        return f"{label} {_moved(figure.before, figure.after)} {b} to {a}, significant ({_p(p_adjusted, '=')}, Holm)"
    return f"{label}: no change ({b} to {a}, {_p(p_adjusted, '=')} after Holm)"


def _with_drivers(con: Any, figure: FigureChange, start: datetime, cut: datetime, end: datetime,
                  before: dict[str, Any], after: dict[str, Any], pooled: dict[str, Any]) -> FigureChange:
    """The queries contributing most to a significant share (or latency quantile) change, with their counts."""
    spec = next(f for f in FIGURES if f.name == figure.name)
    if spec.kind == "share":
        condition = spec.condition
        n_before, n_after = int(before[f"n_{spec.name}"]), int(after[f"n_{spec.name}"])
    elif spec.kind == "latency" and pooled.get(spec.name) is not None:
        condition = f"latency_ms > {float(pooled[spec.name])!r}"  # the rows the quantile test counts
        n_before, n_after = int(before["n_latency"]), int(after["n_latency"])
    else:
        return figure
    sign = 1 if (figure.delta or 0) >= 0 else -1
    found = con.execute(
        f"SELECT q, count(*) FILTER (WHERE NOT current) AS before, count(*) FILTER (WHERE current) AS after\n"
        f"FROM (SELECT {NORMALISED_QUERY} AS q, created_at >= {_ts(cut)} AS current FROM {TABLE}\n"
        f"      WHERE {time_range(start, end)} AND {PRODUCTION} AND ({condition}))\n"
        f"GROUP BY q\n"
        f"ORDER BY {sign} * (count(*) FILTER (WHERE current) / {n_after}::DOUBLE - "
        f"count(*) FILTER (WHERE NOT current) / {n_before}::DOUBLE) DESC, q\n"
        f"LIMIT {DRIVERS}").fetchall()
    return replace(figure, drivers=tuple((str(q), int(b), int(a)) for q, b, a in found))


def _moved(before: float, after: float) -> str:
    return "rose from" if after > before else "fell from"


def _p(p: float | None, sep: str = "") -> str:
    if p is None:
        return "n/a" if not sep else "p n/a"
    if p < 0.0001:
        return "p<0.0001" if sep else "<0.0001"
    return f"p{sep}{p:.2g}" if sep else f"{p:.2g}"


def _float(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _ts(moment: datetime) -> str:
    return f"TIMESTAMP '{moment.isoformat(sep=' ')}'"


def _md(text: str) -> str:
    """Text from the trace file made inert in Markdown: pipes and angle brackets escaped."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
