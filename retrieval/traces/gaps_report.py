"""Content gaps as a reader sees them: Markdown (the weekly report, the changes report's section) and HTML (every
text escaped). Both say what counts as unanswered, how many questions were grouped and how many fell in no topic,
then a table of topics (terms, size, trend, the base's nearest pages) and each topic's example questions."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval.traces.gaps import ContentGaps, GapTopic


def summary(gaps: ContentGaps) -> str:
    """The counts in one sentence."""
    from retrieval.traces.gaps import DEFINITION, window_words

    span = (f"{window_words(gaps.window)} from {gaps.since:%Y-%m-%d %H:%M} to {gaps.until:%Y-%m-%d %H:%M} UTC")
    if gaps.empty_reason:
        return f"{span}: {gaps.empty_reason}."
    more = (f"; {gaps.more_topics} smaller topic{'s' if gaps.more_topics != 1 else ''} ({gaps.more_questions} "
            "questions) not shown") if gaps.more_topics else ""
    return (f"{span}: {gaps.questions} unanswered question{'s' if gaps.questions != 1 else ''} ({DEFINITION}), "
            f"{gaps.distinct} distinct; {gaps.clustered} grouped into {len(gaps.topics) + gaps.more_topics} "
            f"topic{'s' if len(gaps.topics) + gaps.more_topics != 1 else ''}, {gaps.unclustered} in no topic{more}. "
            f"The {window_words(gaps.window)} before: {gaps.questions_before} unanswered.")


def _pages_text(topic: GapTopic) -> str:
    return ", ".join(f"{p.title} ({p.source}, {p.score:.2f})" for p in topic.nearest_pages) or "none"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def as_markdown(gaps: ContentGaps, level: int = 2) -> str:
    """The report as Markdown, its heading at `level` (2; 3 inside the changes report)."""
    head = "#" * level
    lines = [f"{head} Content gaps", "", summary(gaps)]
    if not gaps.topics:
        return "\n".join(lines) + "\n"
    lines += ["", "| # | Topic | Questions | Trend | Nearest pages the base has |", "|---|---|---|---|---|"]
    for n, topic in enumerate(gaps.topics, 1):
        lines.append(f"| {n} | {_cell(topic.label)} | {topic.size} ({topic.distinct} distinct) | "
                     f"{_cell(topic.trend_words)} | {_cell(_pages_text(topic))} |")
    for n, topic in enumerate(gaps.topics, 1):
        lines += ["", f"{head}# {n}. {topic.label}", "",
                  f"Terms: {', '.join(topic.terms)}. {topic.size} questions, {topic.trend_words}.", "",
                  "Questions:"]
        lines += [f"- {question} (×{count})" for question, count in zip(topic.examples, topic.example_counts,
                                                                        strict=True)]
        lines += ["", f"Nearest pages the base has: {_pages_text(topic)}."]
    return "\n".join(lines) + "\n"


def as_html(gaps: ContentGaps, level: int = 2) -> str:
    """The report as an HTML fragment, its heading at `level`; every text from the traces or the base escaped."""
    e = html.escape
    parts = [f"<section class=\"content-gaps\"><h{level}>Content gaps</h{level}>", f"<p>{e(summary(gaps))}</p>"]
    if gaps.topics:
        parts.append("<table><thead><tr><th>#</th><th>Topic</th><th>Questions</th><th>Trend</th>"
                     "<th>Nearest pages the base has</th><th>Example questions</th></tr></thead><tbody>")
        for n, topic in enumerate(gaps.topics, 1):
            pages = "<br>".join(f"{e(p.title)} <code>{e(p.source)}</code> {p.score:.2f}"
                                for p in topic.nearest_pages) or "none"
            examples = "".join(f"<li>{e(q)} (×{c})</li>" for q, c in zip(topic.examples, topic.example_counts,
                                                                         strict=True))
            parts.append(f"<tr><td>{n}</td><td><strong>{e(topic.label)}</strong><br><small>"
                         f"{e(', '.join(topic.terms))}</small></td><td>{topic.size} ({topic.distinct} distinct)</td>"
                         f"<td>{e(topic.trend_words)}</td><td>{pages}</td><td><ul>{examples}</ul></td></tr>")
        parts.append("</tbody></table>")
    parts.append("</section>")
    return "\n".join(parts) + "\n"
