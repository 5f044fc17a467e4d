"""An exclusive lock on an index folder, across processes (workers, hosts sharing a POSIX file
system with working ``flock``, and ``toolsift build``): catalog edits read, change and save the
folder as one step, so no acknowledged edit is overwritten by another."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from toolsift.errors import IndexBusy

_held = threading.local()


def lock_file(folder: str | Path) -> Path:
    """``.<name>-lock`` beside the folder (outside the ``.<name>.*`` names a save cleans up)."""
    path = Path(folder)
    return path.with_name(f".{path.name}-lock")


@contextlib.contextmanager
def folder_lock(folder: str | Path, timeout: float = 120.0) -> Iterator[None]:
    """Hold the folder's lock for the block. Re-entrant within one thread; other threads and
    processes wait, up to ``timeout`` seconds (then ``IndexBusy``)."""
    path = lock_file(folder)
    key = str(path.resolve()) if path.parent.exists() else str(path)
    held: dict[str, int] = _held.__dict__.setdefault("counts", {})
    if held.get(key):
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(descriptor, path, timeout)
        held[key] = 1
        try:
            yield
        finally:
            held[key] = 0
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


def _acquire(descriptor: int, path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise IndexBusy(str(path), timeout) from None
            time.sleep(0.02)
