"""The generated regions of a Markdown page: text between `<!-- generated: NAME … -->` and
`<!-- end generated -->`, each on a line of its own. tests/docs_examples.py fills them from real output and
tests/test_docs_examples.py checks them."""

from __future__ import annotations

import re
from collections.abc import Mapping

REGION = re.compile(r"^(?P<start><!-- generated: (?P<name>[\w-]+)\b[^\n]*-->\n)(?P<body>.*?)"
                    r"^(?P<end><!-- end generated -->)$", re.M | re.S)


def regions(text: str) -> dict[str, str]:
    """Each region's name and body (the lines between its markers, newline-terminated)."""
    found: dict[str, str] = {}
    for match in REGION.finditer(text):
        name = match.group("name")
        if name in found:
            raise ValueError(f"generated region {name!r} appears twice")
        found[name] = match.group("body")
    return found


def replace_regions(text: str, bodies: Mapping[str, str]) -> str:
    """`text` with the named regions' bodies replaced (regions not named are kept as they are)."""
    def body(match: re.Match[str]) -> str:
        new = bodies.get(match.group("name"))
        if new is None:
            return match.group(0)
        return match.group("start") + new.rstrip("\n") + "\n" + match.group("end")

    return REGION.sub(body, text)
