"""Locks shared by replicas on several hosts: a lease in Redis, with an owner and a fence.

A lease is the key ``<prefix>:lock:<name>`` holding ``<token>:<fence>``:

- **the owner's token**, drawn once per acquisition and sent again on every retry, so a request
  whose reply was lost (Redis stalled past the socket timeout, then ran it) is recognised as the
  owner's own on the retry instead of leaving a lock that no one owns;
- **a lease** of ``LEASE_SECONDS``, renewed by a thread while the holder works: a holder that
  dies frees the lock within one lease, not minutes;
- **a fence**, a number drawn from ``<prefix>:fence:<name>`` at each acquisition. Before its
  irreversible step (the link swap that publishes an index version, the append to the feedback
  log) a holder calls ``Lease.check``: it passes only while the key still holds this owner's
  value — or when the lease lapsed and no one has acquired it since (the fence is still the
  latest drawn). A holder that stalled (paused, swapped out, partitioned) and lost the lock to
  another replica is refused with ``LockLost`` and writes nothing.

Each step is one Lua script, so it is atomic in Redis. What is left is the moment between a
passed check and the rename right after it: a holder frozen exactly there for longer than a lease
could still publish. The file lock (``folder_lock``) closes that on hosts sharing a file system
with working ``flock``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import redis

from toolsift.errors import IndexBusy, LockLost

if TYPE_CHECKING:
    from toolsift.service.replicas import Replicas

logger = logging.getLogger("toolsift.service")

LEASE_SECONDS = 10.0
"""A lease not renewed lapses after this long (its holder died or stalled)."""
WAIT_SECONDS = 60.0
"""How long an acquisition waits for another holder before ``IndexBusy``."""
POLL_SECONDS = 0.05

_ACQUIRE = """
local held = redis.call('GET', KEYS[1])
if held then
  local sep = string.find(held, ':', 1, true)
  if sep and string.sub(held, 1, sep - 1) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return tonumber(string.sub(held, sep + 1))
  end
  return 0
end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. fence, 'PX', ARGV[2])
return fence
"""
"""Take the lock for ARGV[1] (or find it already ours: a retried call): the fence, or 0."""

_HOLD = """
local value = ARGV[1] .. ':' .. ARGV[2]
local held = redis.call('GET', KEYS[1])
if held == value then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
if not held and redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('SET', KEYS[1], value, 'PX', ARGV[3])
  return 1
end
return 0
"""
"""Still ours (renewed), or lapsed with no one acquiring since (taken back): 1; lost: 0."""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class Lease:
    """One holding of a shared lock (``Replicas.lock`` makes them)."""

    def __init__(self, replicas: Replicas, name: str, what: str, seconds: float = LEASE_SECONDS) -> None:
        self.replicas = replicas
        self.name = name
        self.what = what
        self.seconds = seconds
        self.key = replicas.key("lock", name)
        self.fence_key = replicas.key("fence", name)
        self.token = uuid.uuid4().hex
        self.fence = 0
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    @property
    def _ms(self) -> str:
        return str(int(self.seconds * 1000))

    def acquire(self, wait: float = WAIT_SECONDS) -> None:
        """Take the lock, waiting up to ``wait`` seconds for another holder (``IndexBusy``)."""
        client = self.replicas.client
        deadline = time.monotonic() + wait
        while True:
            fence = self.replicas.call(
                lambda: client.eval(_ACQUIRE, 2, self.key, self.fence_key, self.token, self._ms), self.what
            )
            if int(fence):
                self.fence = int(fence)
                break
            if time.monotonic() >= deadline:
                raise IndexBusy(self.key, wait)
            time.sleep(POLL_SECONDS)
        self._renewer = threading.Thread(target=self._renew, name=f"lease {self.name}", daemon=True)
        self._renewer.start()

    def check(self) -> None:
        """Before an irreversible write: the lock is still this holder's (``LockLost`` if not)."""
        if not self.replicas.call(self._hold, self.what):
            raise LockLost(self.key, self.what, self.seconds)

    def _hold(self) -> bool:
        """One run of ``_HOLD``: renewed (or taken back) if still this holder's."""
        held = self.replicas.client.eval(_HOLD, 2, self.key, self.fence_key, self.token, str(self.fence), self._ms)
        return bool(int(held))

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=self.seconds)
        client = self.replicas.client
        value = f"{self.token}:{self.fence}"
        try:
            self.replicas.retry.call_with_retry(lambda: client.eval(_RELEASE, 1, self.key, value), lambda _: None)
        except redis.RedisError:  # unreachable: the lease lapses on its own
            logger.warning("could not release the shared lock %s; it lapses within %.0f s", self.name, self.seconds)

    def _renew(self) -> None:
        """Every third of a lease, extend it; a failed renewal is tried at the next tick (the
        lease may lapse meanwhile: ``check`` then decides)."""
        while not self._stop.wait(self.seconds / 3):
            try:
                self._hold()
            except redis.RedisError:
                logger.warning("could not renew the shared lock %s", self.name)


@contextmanager
def held(replicas: Replicas, name: str, what: str, seconds: float = LEASE_SECONDS) -> Iterator[Lease]:
    """Hold ``name`` across replicas for the block; the lease is given to check before writing."""
    lease = Lease(replicas, name, what, seconds)
    lease.acquire()
    try:
        yield lease
    finally:
        lease.release()
