"""Alerts a scheduler can act on: `--fail-on` thresholds on figures, `--fail-on-significant` on changes, and the
small TOML file that holds both; a breach makes the command exit 1 with one line per breach on stderr.

Grammar: `FIGURE OP NUMBER`, comma-separated, OP one of `>`, `>=`, `<`, `<=`, FIGURE one of figures.py's names, a
share as a fraction (`abstain_share>0.1` is 10%), a latency in ms. On `traces trends` a threshold applies to the
whole window's figure (not to each bucket); on `traces changes`, to the last window's. A figure with no value (no
row to compute it from) breaches nothing.

The file (`--fail-on-file alerts.toml`):

    fail_on = ["abstain_share>0.1", "p95_ms>50"]
    significant = ["abstain_share", "p95_ms"]   # or true: any significant change (read by `traces changes` only)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from retrieval.traces.changes import Changes
from retrieval.traces.figures import BY_NAME, NAMES
from retrieval.traces.trends import Trends

OPERATORS = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__}
EXPRESSION = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(>=|<=|>|<)\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
GRAMMAR = ("FIGURE OP NUMBER, comma-separated, OP one of > >= < <= (e.g. abstain_share>0.1,p95_ms>50; a share as a "
           "fraction, a latency in ms)")
SIGNIFICANT = "significant"  # the operator of a --fail-on-significant condition
ANY = "*"  # its figure when any significant change breaches
CONFIG_KEYS = ("fail_on", "significant")


@dataclass(frozen=True)
class Condition:
    """`figure` `op` `threshold` (e.g. abstain_share > 0.1), or `figure` significant (threshold None; figure ANY:
    any figure); `text` as given."""

    figure: str
    op: str
    threshold: float | None
    text: str


@dataclass(frozen=True)
class Breach:
    """A condition met: the figure's `value` (None for a significant change), and the `line` stderr prints."""

    condition: Condition
    value: float | None
    line: str


def parse_fail_on(text: str, *, flag: str = "--fail-on") -> tuple[Condition, ...]:
    """`abstain_share>0.1,p95_ms>50` as conditions; a ValueError naming the accepted forms and the figures for a
    malformed expression or an unknown figure."""
    parts = text.split(",")
    if not text.strip() or any(not part.strip() for part in parts):
        raise ValueError(f"{flag} takes {GRAMMAR}, got {text!r}")
    conditions = []
    for part in parts:
        match = EXPRESSION.match(part)
        if match is None:
            raise ValueError(f"{flag} takes {GRAMMAR}, got {part.strip()!r}; figures: {', '.join(NAMES)}")
        name, op, number = match.groups()
        _known(name, flag)
        conditions.append(Condition(name, op, float(number), part.strip()))
    return tuple(conditions)


def parse_significant(names: str | Sequence[str] | bool, *,
                      flag: str = "--fail-on-significant") -> tuple[Condition, ...]:
    """`--fail-on-significant` with no value (or "", or True): any significant change; else the comma-separated
    figures whose significant change breaches."""
    if names is True or (isinstance(names, str) and not names.strip()):
        return (Condition(ANY, SIGNIFICANT, None, "any significant change"),)
    if names is False:
        return ()
    items = names.split(",") if isinstance(names, str) else list(names)
    if not items or not all(isinstance(item, str) and item.strip() for item in items):
        raise ValueError(f"{flag} takes figure names, comma-separated (or nothing: any figure), got {names!r}; "
                         f"figures: {', '.join(NAMES)}")
    return tuple(Condition(_known(item.strip(), flag), SIGNIFICANT, None, f"{item.strip()} significant")
                 for item in items)


def load_config(path: str | Path) -> tuple[Condition, ...]:
    """The conditions of an alerts file: `fail_on` (a list of expressions) and `significant` (a list of figures,
    or true for any); a ValueError naming the file for anything else."""
    file = Path(path)
    flag = f"--fail-on-file {file}"
    try:
        data: dict[str, Any] = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{flag}: no such file; pass a TOML file with fail_on = [...] and significant = [...]") \
            from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{flag} is not a readable TOML file: {exc}") from None
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise ValueError(f"{flag} has unknown key(s) {', '.join(unknown)}; it takes {' and '.join(CONFIG_KEYS)}")
    expressions = data.get("fail_on", [])
    if not isinstance(expressions, list) or not all(isinstance(e, str) for e in expressions):
        raise ValueError(f"{flag}: fail_on takes a list of strings, each {GRAMMAR}")
    conditions = [c for expression in expressions for c in parse_fail_on(expression, flag=f"{flag} fail_on")]
    significant = data.get("significant", [])
    if isinstance(significant, bool):
        conditions += parse_significant(significant)
    elif isinstance(significant, list) and all(isinstance(s, str) for s in significant):
        conditions += parse_significant(significant, flag=f"{flag} significant") if significant else ()
    else:
        raise ValueError(f"{flag}: significant takes true or a list of figure names")
    return tuple(conditions)


def check(conditions: Sequence[Condition], trends_or_changes: Trends | Changes) -> tuple[Breach, ...]:
    """The conditions met: a threshold on the whole window's figure (Trends) or the last window's (Changes); a
    significance condition by a significant change (Changes only: Trends has none, so none is met there).
    Nothing breaches when the window holds no production lookup."""
    result = trends_or_changes
    if result.empty_reason:
        return ()
    if isinstance(result, Trends):
        values, window = result.total, result.window_words()
        changed: dict[str, Any] = {}
    else:
        values = {figure.name: figure.after for figure in result.figures}
        window = result.window_label()
        changed = {figure.name: figure for figure in result.significant()}
    breaches = []
    for condition in conditions:
        if condition.op == SIGNIFICANT:
            for name, figure in changed.items():
                if condition.figure in (ANY, name):
                    breaches.append(Breach(condition, figure.after, f"{name} changed significantly: {figure.words} "
                                                                    f"({window})"))
            continue
        value = values.get(condition.figure)
        if value is not None and OPERATORS[condition.op](float(value), condition.threshold):
            breaches.append(Breach(condition, float(value), f"{condition.figure} {_value(condition.figure, value)} "
                                                            f"{condition.op} {condition.threshold:g} ({window})"))
    unique = {breach.line: breach for breach in breaches}  # a change named twice (ANY and by name) once
    return tuple(unique.values())


def _known(name: str, flag: str) -> str:
    if name not in BY_NAME:
        raise ValueError(f"{flag}: unknown figure {name!r}; the figures are {', '.join(NAMES)}")
    return name


def _value(name: str, value: float) -> str:
    kind = BY_NAME[name].kind
    return f"{value:,.0f}" if kind == "count" else f"{value:.1f}" if kind == "latency" else f"{value:.3f}"
