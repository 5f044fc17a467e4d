"""An exclusive lock on an index folder, across processes (workers, hosts sharing a POSIX file
system with working ``flock``, and ``toolsift build``): catalog edits read, change and save the
folder as one step, so no acknowledged edit is overwritten by another.

``filelock``'s ``FileLock`` (``flock`` on POSIX), one instance per lock file in the process and
re-entrant within a thread: a save inside an edit that holds the lock does not wait for itself,
while other threads and processes wait their turn.

``TOOLSIFT_FOLDER_LOCKS=off`` turns the file lock off, for file systems where ``flock`` does not
work (some network file systems): replicas then rely on the Redis lease alone
(``toolsift.service.leases``), and a lone process on nothing."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from toolsift.errors import IndexBusy

OFF = {"off", "0", "false", "no"}


def nothing_to_check() -> None:
    """What a lock that cannot be lost gives to check before writing (``leases.Lease.check``
    for a replicas' lock): nothing to do."""
    return None


def lock_file(folder: str | Path) -> Path:
    """``.<name>-lock`` beside the folder (outside the ``.<name>.*`` names a save cleans up)."""
    path = Path(folder)
    return path.with_name(f".{path.name}-lock")


@contextlib.contextmanager
def folder_lock(folder: str | Path, timeout: float = 120.0) -> Iterator[None]:
    """Hold the folder's lock for the block. Re-entrant within one thread; other threads and
    processes wait, up to ``timeout`` seconds (then ``IndexBusy``)."""
    if os.environ.get("TOOLSIFT_FOLDER_LOCKS", "on").strip().lower() in OFF:
        yield
        return
    path = lock_file(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path.resolve(), mode=0o644, is_singleton=True, thread_local=True)
    try:
        lock.acquire(timeout=timeout, poll_interval=0.02)
    except Timeout:
        raise IndexBusy(str(path), timeout) from None
    try:
        yield
    finally:
        lock.release()
