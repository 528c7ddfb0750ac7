"""`one_read`: an evaluation loader's reads of the trace file share one connection.

A loader such as `load_per_query` runs several queries, and the app's Compare page calls a handful of loaders
for the same two runs: opened once a query, the file was opened 53 times for one render (~13 ms each).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

Loader = TypeVar("Loader", bound=Callable[..., Any])


def one_read(loader: Loader) -> Loader:
    """`loader(store, ...)` with its reads of `store` in one read-only connection (TraceStore.one_connection;
    a nested loader joins its caller's). Only for functions that read: nothing may write the file meanwhile."""

    @functools.wraps(loader)
    def reading(store: Any, *args: Any, **kwargs: Any) -> Any:
        block = getattr(store, "one_connection", None)
        if block is None:  # not a TraceStore (a stand-in in a caller's test): reads as before
            return loader(store, *args, **kwargs)
        with block():
            return loader(store, *args, **kwargs)

    return reading  # type: ignore[return-value]
