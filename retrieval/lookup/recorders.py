"""`Recorders`: several recorders as one, so a call goes to each (the trace store and OpenTelemetry, say)."""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.lookup.invocation import Recorder, ToolInvocation


@dataclass(frozen=True)
class Recorders:
    """Calls every recorder in order with the same invocation; one that raises does not keep the others from
    it (the first error is raised after all ran). `flush` and `close` reach those that have them."""

    recorders: tuple[Recorder, ...]

    def __call__(self, invocation: ToolInvocation) -> None:
        failure: BaseException | None = None
        for recorder in self.recorders:
            try:
                recorder(invocation)
            except Exception as exc:  # noqa: BLE001 - raised below, after the other recorders ran
                failure = failure or exc
        if failure is not None:
            raise failure

    def flush(self) -> None:
        self._each("flush")

    def close(self) -> None:
        self._each("close")

    def _each(self, name: str) -> None:
        for recorder in self.recorders:
            method = getattr(recorder, name, None)
            if callable(method):
                method()


def combine(*recorders: Recorder | None) -> Recorder | None:
    """One recorder for those given (None ones dropped): None, the only one, or `Recorders` of them all."""
    present = tuple(r for r in recorders if r is not None)
    if not present:
        return None
    return present[0] if len(present) == 1 else Recorders(present)
