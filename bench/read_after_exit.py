"""Benchmark (not a test): is a CLI lookup's row readable by a plain client the moment the command exits? Issue 48.

    python bench/read_after_exit.py                      # 100 lookups, then 20 traced/untraced pairs
    python bench/read_after_exit.py --lookups 30 --pairs 10 --keep
    python bench/read_after_exit.py --lookups 40 --pairs 0 --pack-idle 0.3   # the keeper folds between lookups

In a fresh temporary folder with a fresh trace file, LOOKUPS sequential commands
`python -m retrieval lookup "<query i>" --traces <file> --kb data/kb --compact` (cwd: the repo root), each
followed at once, in this process, by a plain `duckdb.connect(file, read_only=True)` that counts the rows of
`tool_invocation` with that query and closes. It counts the lookups whose row was visible and the opens that
failed (DuckDB's error, first line, counted by kind; for a lock error, the command line of the process the
message names, read from /proc while it still runs). After the loop it waits up to --settle seconds for every
row to arrive, to tell a late row from a lost one. Prints `visible: N/LOOKUPS, open failures: M`. With the
product's 5 s pack idle the keeper never folds inside the loop (a lookup every ~0.5 s), so lock failures are
rare; `--pack-idle 0.3` makes it fold between lookups, where an open at exit can meet its write lock. Note a
helper forked by `python -m retrieval` (before its imports) has the command's own command line.

Then the cost of recording: PAIRS interleaved pairs of the same query looked up traced and with `--no-trace`
(the order alternating each pair), the wall time of each command; prints both medians and their ratio
(target <= 1.25). One untraced lookup first builds the index cache, so neither side pays for it.
Exits 0 whatever the figures (a benchmark); 1 when the setup fails.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
KB = ROOT / "data" / "kb"
COUNT = "SELECT count(*) FROM tool_invocation WHERE query = ?"
TARGET_RATIO = 1.25
HOLDER = re.compile(r"\(PID (\d+)\)")


def _lookup(query: str, traces: Path, *, traced: bool, timeout: float,
            env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """Run one CLI lookup from the repo root; its wall time and the finished process."""
    command = [sys.executable, "-m", "retrieval", "lookup", query, "--traces", str(traces), "--kb", str(KB),
               "--compact"]
    if not traced:
        command.append("--no-trace")
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        done = subprocess.CompletedProcess(command, -1, "", f"timed out after {timeout:.0f} s (killed)")
    return time.perf_counter() - started, done


def _holder(message: str) -> str:
    """The command line of the process a DuckDB lock error names, read at once (it may be gone already)."""
    found = HOLDER.search(message)
    if not found:
        return "no PID in the message"
    pid = int(found.group(1))
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return f"PID {pid} (gone before it could be read)"
    return f"PID {pid}: {cmdline[-160:]}"


def _plain_count(traces: Path, query: str) -> int:
    """What a plain read-only client sees: the rows with `query` (raises duckdb.Error when the open fails)."""
    con = duckdb.connect(str(traces), read_only=True)
    try:
        return con.execute(COUNT, [query]).fetchone()[0]
    finally:
        con.close()


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


def _last_line(text: str) -> str:
    """A failed command's last stderr line: the exception, past the traceback."""
    return (text.strip().splitlines() or [""])[-1]


def read_after_exit(traces: Path, lookups: int, timeout: float, settle: float, env: dict[str, str]) -> None:
    visible, failures, command_failures = 0, [], []
    invisible: list[str] = []
    errors: Counter[str] = Counter()
    holders: Counter[str] = Counter()
    seconds = []
    for i in range(lookups):
        query = f"rotate token {i} read-after-exit"
        took, done = _lookup(query, traces, traced=True, timeout=timeout, env=env)
        try:
            found = _plain_count(traces, query)  # at once: nothing between the exit and the open
        except duckdb.Error as exc:
            message = str(exc)
            holder = _holder(message) if "lock" in message.lower() else ""
            failures.append(query)
            errors[_first_line(message)[:120]] += 1
            if holder:
                holders[re.sub(r"PID \d+", "PID n", re.sub(r"\d+ read-after-exit", "N read-after-exit", holder))] += 1
            print(f"  lookup {i}: open failed: {_first_line(message)[:160]}"
                  + (f"\n    holder: {holder}" if holder else ""))
            found = None
        seconds.append(took)
        if done.returncode != 0:
            command_failures.append(f"lookup {i}: exit {done.returncode}: {_last_line(done.stderr)[:160]}")
        if found:
            visible += 1
        elif found == 0:
            invisible.append(query)
    print(f"visible: {visible}/{lookups}, open failures: {len(failures)}")
    print(f"  not visible though the open worked: {len(invisible)}; commands that exited non-zero: "
          f"{len(command_failures)}; median lookup {statistics.median(seconds):.3f} s")
    for line in command_failures[:5]:
        print(f"  {line}")
    for message, n in errors.most_common():
        print(f"  open error x{n}: {message}")
    for holder, n in holders.most_common():
        print(f"  lock held by x{n}: {holder}")
    _late_rows(traces, [*invisible, *failures], settle)


def _late_rows(traces: Path, missed: list[str], settle: float) -> None:
    """Of the rows not seen at exit, how many arrived within `settle` seconds (the rest are lost)."""
    if not missed:
        return
    deadline = time.monotonic() + settle
    started = time.monotonic()
    arrived: set[str] = set()
    last_error = ""
    while True:
        try:
            arrived |= {q for q in missed if q not in arrived and _plain_count(traces, q)}
        except duckdb.Error as exc:
            last_error = _first_line(str(exc))[:120]
        if len(arrived) == len(missed) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    print(f"  of the {len(missed)} rows not seen at exit: {len(arrived)} arrived within "
          f"{time.monotonic() - started:.1f} s, {len(missed) - len(arrived)} still missing after {settle:.0f} s"
          + (f" (last open error: {last_error})" if last_error and len(arrived) < len(missed) else ""))


def traced_ratio(traces: Path, pairs: int, timeout: float, env: dict[str, str]) -> None:
    traced, untraced, failed = [], [], 0
    for i in range(pairs):
        query = f"silence alerts during maintenance {i} ratio"
        order = (True, False) if i % 2 == 0 else (False, True)
        for trace in order:
            took, done = _lookup(query, traces, traced=trace, timeout=timeout, env=env)
            failed += done.returncode != 0
            (traced if trace else untraced).append(took)
    t, u = statistics.median(traced), statistics.median(untraced)
    ratio = t / u
    print(f"traced median: {t:.3f} s, untraced median: {u:.3f} s over {pairs} pairs"
          + (f" ({failed} commands exited non-zero)" if failed else ""))
    print(f"traced/untraced ratio: {ratio:.2f} (target <= {TARGET_RATIO}: "
          f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lookups", type=int, default=100, help="sequential lookups, each read at exit")
    parser.add_argument("--pairs", type=int, default=20, help="traced/untraced pairs for the ratio (0: skip)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one command may take")
    parser.add_argument("--settle", type=float, default=15.0,
                        help="seconds to wait for the rows not seen at exit, to tell late from lost")
    parser.add_argument("--pack-idle", type=float, default=None, metavar="SECONDS",
                        help="set $LOOKUP_KNOWLEDGE_PACK_IDLE for the commands (default: unset, the product's "
                             "5 s): a short one makes the keeper fold between lookups, the lock case of issue 48")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="read-after-exit-"))
    traces = folder / "traces.duckdb"
    env = dict(os.environ)
    if args.pack_idle is not None:
        env["LOOKUP_KNOWLEDGE_PACK_IDLE"] = str(args.pack_idle)
    print(f"trace file: {traces} (duckdb {duckdb.__version__}, {os.cpu_count()} cores"
          + (f", LOOKUP_KNOWLEDGE_PACK_IDLE={env['LOOKUP_KNOWLEDGE_PACK_IDLE']}"
             if "LOOKUP_KNOWLEDGE_PACK_IDLE" in env else "") + ")")
    try:
        took, done = _lookup("warm the index cache", traces, traced=False, timeout=args.timeout, env=env)
        if done.returncode != 0:
            print(f"setup failed: the untraced warm-up lookup exited {done.returncode}:\n{done.stderr[-3000:]}",
                  file=sys.stderr)
            return 1
        if traces.exists():
            print(f"note: an untraced lookup left a trace file ({traces})")
        print(f"warm-up (untraced) lookup: {took:.3f} s")
        if args.lookups > 0:
            read_after_exit(traces, args.lookups, args.timeout, args.settle, env)
        if args.pairs > 0:
            traced_ratio(traces, args.pairs, args.timeout, env)
    finally:
        if args.keep:
            print(f"kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
