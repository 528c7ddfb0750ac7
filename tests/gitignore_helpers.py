"""A scratch git repository holding a copy of the project's .gitignore, what git sees in it, and a watcher that
notes every file that appears in it while writers run (files that live for milliseconds included)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "kb"
GIT_ENV = {"GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.invalid", "GIT_COMMITTER_NAME": "test",
           "GIT_COMMITTER_EMAIL": "test@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **GIT_ENV})


def scratch_repo(folder: Path) -> Path:
    """A git repository at `folder` whose one commit is the project's .gitignore."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / ".gitignore", folder / ".gitignore")
    for args in (("init", "-q"), ("add", ".gitignore"), ("commit", "-q", "-m", "the project's .gitignore")):
        done = git(folder, *args)
        if done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return folder


def untracked(repo: Path) -> list[str]:
    """What `git status --porcelain --untracked-files=all` lists (nothing, when every file left is ignored)."""
    done = git(repo, "status", "--porcelain", "--untracked-files=all")
    if done.returncode != 0:
        raise AssertionError(f"git status failed: {done.stderr}")
    return done.stdout.splitlines()


def not_ignored(repo: Path, paths: set[str]) -> list[str]:
    """The paths (relative to `repo`, existing or gone) that are neither tracked nor ignored by .gitignore."""
    paths = paths - set(git(repo, "ls-files").stdout.splitlines())
    if not paths:
        return []
    done = git(repo, "check-ignore", "--no-index", "--stdin", stdin="\n".join(sorted(paths)) + "\n")
    if done.returncode not in (0, 1):
        raise AssertionError(f"git check-ignore failed: {done.stderr}")
    return sorted(paths - set(done.stdout.splitlines()))


class Watcher:
    """Notes every file under a folder (outside .git) while it runs, polling as fast as it can."""

    def __init__(self, folder: Path, interval: float = 0.002) -> None:
        self.folder, self.interval = folder, interval
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._look()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._look()
            time.sleep(self.interval)

    def _look(self) -> None:
        for folder, subfolders, names in os.walk(self.folder):
            subfolders[:] = [name for name in subfolders if name != ".git"]
            base = Path(folder).relative_to(self.folder)
            self.seen.update((base / name).as_posix() for name in names)


def wait_for_keeper(trace_file: Path, timeout: float = 30.0) -> None:
    """Wait until the keeper a writer started for `trace_file` has made its lock file, folded the live folder and
    the log into the file, and let go of its lock (it exits then)."""
    lock = trace_file.with_name(trace_file.name + ".keeper.lock")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in (trace_file.with_name(trace_file.name + ".wal"),) if p.exists()]
        left += list(trace_file.with_name(trace_file.name + ".live").glob("*.parquet"))
        try:
            fd = os.open(lock, os.O_RDONLY)
        except FileNotFoundError:
            time.sleep(0.05)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            if not left:
                return
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
        time.sleep(0.05)
    raise AssertionError(f"the keeper of {trace_file} did not finish within {timeout:.0f} s")
