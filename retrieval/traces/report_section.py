"""A section of the changes report (`Changes.with_sections`): its title, its text as Markdown and as HTML, and its
data for the JSON report. Content gaps make one (`ContentGaps.as_section`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ReportSection:
    """One extra section of a report: `markdown` and `html` are whole blocks (HTML escaped by their maker)."""

    title: str
    markdown: str
    html: str
    data: dict[str, Any] = field(default_factory=dict)
