"""The library versions a run recorded (retrieval.lookup.provenance.library_versions), compared between two runs.

A run's `library_versions` are those of the process that planned it (the serial run, the parent of a fan-out,
the process that saved a replay); runs stored before they were recorded, and the `recorded-…` side of a
replay of interactive lookups (made earlier, versions unknown), read None: "not recorded", never a crash.
A fan-out's workers report theirs with every shard; versions a worker ran with that differ from the parent's
are kept in the run's diagnostics as `worker_library_versions` ({library: [the workers' versions]}).
Two runs whose versions differ are compared with a warning, not refused: the settings may still be what moved
the metrics, but the libraries may be too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from retrieval.lookup import LIBRARIES

WORKERS_KEY = "worker_library_versions"  # the diagnostics key of a fan-out's workers' other versions


@dataclass(frozen=True)
class VersionNote:
    """One line about two runs' library versions: `level` is `warning` (they differ) or `note` (not known)."""

    level: str
    text: str

    def line(self) -> str:
        """The CLI's and the reports' form: `warning: …` or `note: …`."""
        return f"{self.level}: {self.text}"


def recorded(value: Any) -> dict[str, str | None] | None:
    """A stored `library_versions` value as a dict, or None when the run did not record it (null, NaN, junk)."""
    if not isinstance(value, Mapping) or not value:
        return None
    return {str(k): (None if v is None else str(v)) for k, v in value.items()}


def library_diff(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, list[Any]]:
    """{library: [version in A, version in B]} for every library whose recorded versions differ (LIBRARIES'
    order first; None: not installed, or not named by that run's versions); empty when they agree or either run
    did not record them."""
    if a is None or b is None:
        return {}
    names = [*LIBRARIES, *sorted((set(a) | set(b)) - set(LIBRARIES))]
    return {name: [a.get(name), b.get(name)] for name in names if a.get(name) != b.get(name)}


def worker_mismatch(parent: Mapping[str, Any], workers: Iterable[Mapping[str, Any] | None]) -> dict[str, list[Any]]:
    """{library: sorted distinct versions the workers ran with} for each library where a worker's version is not
    the parent's (a Dask worker on another machine); workers that reported nothing are skipped."""
    seen: dict[str, set[str]] = {}
    for versions in workers:
        for name, version in (versions or {}).items():
            if version != parent.get(name):
                seen.setdefault(name, set()).add("not installed" if version is None else str(version))
    return {name: sorted(found) for name, found in sorted(seen.items())}


def version_notes(run_a: str, run_b: str, versions: tuple[Any, Any], diff: Mapping[str, list[Any]],
                  workers: tuple[Any, Any] = (None, None)) -> list[VersionNote]:
    """What `eval compare`, its reports and the Compare page say about two runs' library versions: a warning
    when they differ, a note when a run did not record them, a warning when a run's workers ran other ones."""
    notes = []
    if diff:
        known = (recorded(versions[0]) or {}, recorded(versions[1]) or {})
        changes = ", ".join(f"{name} {_shown(name, a, known[0])} vs {_shown(name, b, known[1])}"
                            for name, (a, b) in diff.items())
        notes.append(VersionNote("warning", f"runs used different library versions ({changes}; A vs B): metric "
                                            "differences may come from the libraries, not the settings"))
    for side, run_id, stored in (("A", run_a, versions[0]), ("B", run_b, versions[1])):
        if recorded(stored) is None:
            notes.append(VersionNote("note", f"library versions were not recorded for run {side} ({run_id}), "
                                              "e.g. a run stored before they were, or an imported run (its "
                                              "system's libraries are its own): whether the libraries differ "
                                              "is not known"))
    for side, run_id, other in (("A", run_a, workers[0]), ("B", run_b, workers[1])):
        if isinstance(other, Mapping) and other:
            shown = ", ".join(f"{name} {', '.join(map(str, found))}" for name, found in other.items())
            notes.append(VersionNote("warning", f"run {side} ({run_id}) looked up on workers with other library "
                                                f"versions than it recorded ({shown})"))
    return notes


def _shown(name: str, version: Any, stored: Mapping[str, Any]) -> str:
    """A version as the notes say it: a library the run's versions do not name (a run recorded with another
    list of libraries) is "not recorded", one recorded as None "not installed"."""
    if name not in stored:
        return "not recorded"
    return "not installed" if version is None else str(version)
