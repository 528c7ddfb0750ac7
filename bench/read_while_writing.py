"""Benchmark (not a test): can others read the trace file while agents write it? Issue 31's protocol.

    python bench/read_while_writing.py                 # 4 writers for 20 s, a plain client every 100 ms
    python bench/read_while_writing.py --seconds 10 --app-reads

WRITERS processes (forked after the sample knowledge base's index is built, so they measure the store and
not Python's start-up) record lookups into one trace file as fast as they can for SECONDS. Beside them:
- a plain DuckDB client, a separate fresh process, tries `duckdb.connect(path, read_only=True)` every 100 ms,
  reads `count(*)` and closes; it counts successes and failures (the issue: 17 successes in 160 tries);
- a lock probe asks the kernel every 2 ms whether some process holds a write lock on the file (`F_GETLK`,
  which takes no lock itself): the share of samples that found one is the write lock's share of the time;
- with `--app-reads`, this process reads as the app's Traces page does (`appui.data.traces`), in a loop.
When the writers have stopped, every recorded id must be in the table once (after at most 10 s).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import multiprocessing
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUERIES = ("PagerDuty escalation", "silence alerts", "download invoices", "rotate an API token", "retention",
           "how do I add a dashboard", "alert routing rules", "SSO setup")

PLAIN_CLIENT = r"""
import json, sys, time
import duckdb
path, seconds, every = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
ok = failed = 0
errors = {}
end = time.monotonic() + seconds
while time.monotonic() < end:
    started = time.monotonic()
    try:
        con = duckdb.connect(path, read_only=True)
        try:
            con.execute("SELECT count(*) FROM tool_invocation").fetchone()
        finally:
            con.close()
        ok += 1
    except duckdb.Error as exc:
        failed += 1
        key = str(exc).splitlines()[0][:60]
        errors[key] = errors.get(key, 0) + 1
    time.sleep(max(0.0, every - (time.monotonic() - started)))
print(json.dumps({"ok": ok, "failed": failed, "errors": errors}))
"""


def _writer(path: str, name: str, index, start: float, seconds: float, ids) -> None:
    from retrieval import TraceStore, lookup_knowledge

    while time.time() < start:
        time.sleep(0.001)
    recorded = []
    store = TraceStore(path, lock_timeout=60)
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        result = lookup_knowledge(QUERIES[i % len(QUERIES)], index=index, recorder=store, query_id=f"{name}-{i}")
        recorded.append(result.invocation_id if hasattr(result, "invocation_id") else f"{name}-{i}")
        i += 1
    store.close()
    ids.put((name, i))


def _probe(path: str, seconds: float, every: float = 0.002) -> dict[str, float]:
    """The share of F_GETLK samples that found a write lock on `path` (none taken by the probe)."""
    fd = os.open(path, os.O_RDONLY)
    held = total = 0
    holders: dict[str, int] = {}
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            query = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0)
            kind, _, _, _, pid = struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, query))
            total += 1
            if kind == fcntl.F_WRLCK:
                held += 1
                holders[_command(pid)] = holders.get(_command(pid), 0) + 1
            time.sleep(every)
    finally:
        os.close(fd)
    return {"samples": total, "write_lock_share": held / max(total, 1), "holders": holders}


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[-80:].strip()
    except OSError:
        return f"pid {pid} (gone)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--every", type=float, default=0.1, help="seconds between the plain client's tries")
    parser.add_argument("--app-reads", action="store_true", help="also read as the Traces page does, in a loop")
    parser.add_argument("--folder", type=Path, default=None, help="where the trace file goes (default: a temp dir)")
    args = parser.parse_args()

    from retrieval import TraceStore, open_index
    from retrieval.paths import SAMPLE_KB

    folder = args.folder or Path(tempfile.mkdtemp(prefix="read-while-writing-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = str(folder / "traces.duckdb")
    TraceStore(path).close()
    index = open_index(SAMPLE_KB)
    fork = multiprocessing.get_context("fork")
    done = fork.Queue()
    start = time.time() + 1.0
    writers = [fork.Process(target=_writer, args=(path, f"w{n}", index, start, args.seconds, done))
               for n in range(args.writers)]
    for proc in writers:
        proc.start()
    while time.time() < start:
        time.sleep(0.001)
    plain = subprocess.Popen([sys.executable, "-c", PLAIN_CLIENT, path, str(args.seconds), str(args.every)],
                             stdout=subprocess.PIPE, text=True)
    probe_queue = fork.Queue()
    probe = fork.Process(target=lambda: probe_queue.put(_probe(path, args.seconds)))
    probe.start()
    app = {"reads": 0, "failed": 0, "errors": {}}
    if args.app_reads:
        from appui.data import traces as data
        from retrieval import TraceStoreError

        reader = TraceStore(path, lock_timeout=3.0)
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            try:
                data.stamp(reader)
                data.filter_traces(reader, data.TraceFilters(text="silence"))
                app["reads"] += 1
            except TraceStoreError as exc:
                app["failed"] += 1
                key = str(exc)[:80]
                app["errors"][key] = app["errors"].get(key, 0) + 1
            time.sleep(0.02)
    client = json.loads(plain.communicate()[0])
    lock = probe_queue.get()
    probe.join()
    recorded = dict(done.get() for _ in writers)
    for proc in writers:
        proc.join()
    expected = sum(recorded.values())
    deadline = time.monotonic() + 10
    import duckdb

    while True:
        try:
            con = duckdb.connect(path, read_only=True)
            stored, distinct = con.execute("SELECT count(*), count(DISTINCT query_id) FROM tool_invocation").fetchone()
            con.close()
        except duckdb.Error:
            stored = distinct = -1
        if stored == expected or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    print(json.dumps({"seconds": args.seconds, "writers": args.writers, "rows_recorded": expected,
                      "rows_stored": stored, "distinct_stored": distinct,
                      "plain_client": {**client, "rate": client["ok"] / max(client["ok"] + client["failed"], 1)},
                      "write_lock": lock, "app_reads": app if args.app_reads else None,
                      "wal_bytes": os.path.getsize(path + ".wal") if os.path.exists(path + ".wal") else 0,
                      "file_bytes": os.path.getsize(path), "folder": str(folder)}, indent=2))


if __name__ == "__main__":
    main()
