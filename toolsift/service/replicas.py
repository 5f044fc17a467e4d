"""Several replicas, one service: what they share through Redis (``TOOLSIFT_REDIS_URL``).

- **Sessions** (``RedisSessionStore``): each session's state (tool names, definition digests,
  turn count) under ``<prefix>:session:<id>``, with its TTL; a sorted set of last uses bounds
  their number. A turn is one optimistic transaction (WATCH, read, ``next_turn``, MULTI/EXEC,
  retried on conflict), so concurrent turns on one session never lose one, and any replica
  continues any session exactly as one process would.
- **Locks**: an admin edit of the index folder, and an append to the feedback log, hold a Redis
  lease (``<prefix>:lock:...``, ``leases``: an owner token, a renewed lease, a fence checked
  before writing) as well as the folder's file lock, so edits through replicas on different hosts
  are applied one after the other, and a replica that stalls past its lease writes nothing.
- **Announcements**: after saving a new index version a replica publishes it on
  ``<prefix>:index``; every replica listens and loads it at once (the folder watcher's polling
  stays as the fallback).

When Redis does not answer, a session turn, an admin edit or a feedback request is tried again
for about 5 s (``RETRIES``: a Redis restart or failover passes unnoticed), then gets
``SharedStoreUnavailable`` (503, ``Retry-After``), counted in ``toolsift_shared_store_errors_total``.
Routes without a session never touch Redis and keep working; service resumes when Redis is back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

import anyio
import orjson
import redis
import redis.asyncio
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from toolsift.catalog import Catalog, Tool
from toolsift.errors import SharedStoreUnavailable
from toolsift.router.sessions import SessionPolicy, SessionState, SessionTurn, check_policy, next_turn
from toolsift.service.leases import held

logger = logging.getLogger("toolsift.service")

RETRIES = 8
"""Tries after the first while Redis is unreachable, 0.05 s apart at first, doubling up to 1 s:
about 5 s (a restart or failover passes unnoticed) before a request gets a 503."""

T = TypeVar("T")


class Replicas:
    """The connection to the shared store, and the names of what lives there."""

    def __init__(self, url: str, prefix: str = "toolsift", on_error: Callable[[], None] | None = None) -> None:
        self.url = url
        self.prefix = prefix
        self.client = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
        self._on_error = on_error or (lambda: None)
        # whole operations (a WATCH/MULTI transaction included) are tried again, not single commands
        self.retry = Retry(
            ExponentialBackoff(cap=1.0, base=0.05),
            RETRIES,
            supported_errors=(redis.ConnectionError, redis.TimeoutError),
        )

    def key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    def failed(self, what: str, fix: str = "") -> SharedStoreUnavailable:
        """Count a failure to reach the store, and the error to raise for it."""
        self._on_error()
        return SharedStoreUnavailable(what, fix)

    def call(self, action: Callable[[], T], what: str, fix: str = "") -> T:
        """``action()``, tried again while Redis is unreachable (redis-py's ``Retry``, ``RETRIES``)."""
        try:
            return self.retry.call_with_retry(action, lambda error: None)
        except redis.RedisError:
            raise self.failed(what, fix) from None

    @contextmanager
    def lock(self, name: str, what: str) -> Iterator[Callable[[], None]]:
        """Hold the lease ``<prefix>:lock:<name>`` across replicas (``IndexBusy`` if it stays
        taken); yields the check to call before an irreversible write (``leases``)."""
        with held(self, name, what) as lease:
            yield lease.check

    def announce(self, channel: str, message: str) -> None:
        """Tell every replica; best effort (they poll as well)."""
        try:
            self.client.publish(self.key(channel), message)
        except redis.RedisError:
            self._on_error()
            logger.warning("could not announce %s on %s; replicas will notice by polling", message, channel)

    async def listen(self, channel: str, on_message: Callable[[str], Awaitable[None]]) -> None:
        """Call ``on_message`` for each announcement on ``channel``, for ever; reconnects after a
        Redis outage (and then calls it once, since announcements made meanwhile were missed)."""
        missed = False
        while True:
            client = redis.asyncio.Redis.from_url(self.url, socket_connect_timeout=1.0)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(self.key(channel))
                    if missed:
                        await on_message("")
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            data = message.get("data")
                            await on_message(data.decode() if isinstance(data, bytes) else str(data))
            except (redis.RedisError, OSError):
                missed = True
                await anyio.sleep(1.0)
            finally:
                await client.aclose()

    def close(self) -> None:
        self.client.close()


class RedisSessionStore:
    """Sessions shared by every replica; the same behaviour as ``SessionStore``."""

    def __init__(self, replicas: Replicas, cap: int, max_sessions: int, ttl_seconds: float) -> None:
        if cap < 1:
            raise ValueError(f"cap must be at least 1, not {cap}")
        self.replicas = replicas
        self.cap = cap
        self.max_sessions = max_sessions
        self.ttl_seconds = ttl_seconds
        self._recent = replicas.key("sessions")

    def __len__(self) -> int:
        try:
            return int(self.replicas.client.zcard(self._recent))
        except redis.RedisError:
            return 0  # metrics must not fail

    def state(self, session_id: str) -> SessionState:
        return _decoded(self.replicas.call(lambda: self.replicas.client.get(self._key(session_id)), "sessions"))

    def names(self, session_id: str) -> tuple[str, ...]:
        return tuple(name for name, _ in self.state(session_id).tools)

    def advance(
        self,
        session_id: str,
        selected: Sequence[Tool],
        catalog: Catalog,
        *,
        ranked: Sequence[str] = (),
        policy: SessionPolicy = "all",
        permitted: Callable[[Tool], bool] | None = None,
        turn_key: str | None = None,
    ) -> SessionTurn:
        check_policy(policy)
        key = self._key(session_id)
        turns: list[SessionTurn] = []

        def turn(pipe: redis.client.Pipeline) -> None:
            state = _decoded(pipe.get(key))
            state, done = next_turn(
                state, session_id, selected, catalog, cap=self.cap, ranked=ranked, policy=policy, permitted=permitted,
                turn_key=turn_key,
            )  # fmt: skip
            turns[:] = [done]
            pipe.multi()
            pipe.set(key, orjson.dumps(state.to_json()), px=int(self.ttl_seconds * 1000))
            pipe.zadd(self._recent, {session_id: time.time()})

        def advance() -> None:
            self.replicas.client.transaction(turn, key)
            self._bound()

        self.replicas.call(advance, "sessions", "or send the request without session_id")
        return turns[0]

    def forget(self, session_id: str) -> bool:
        def forget() -> int:
            self.replicas.client.zrem(self._recent, session_id)
            return int(self.replicas.client.delete(self._key(session_id)))

        return bool(self.replicas.call(forget, "sessions"))

    def _bound(self) -> None:
        """Forget expired entries of the recency set, then the least recently used sessions over
        ``max_sessions``."""
        client = self.replicas.client
        client.zremrangebyscore(self._recent, 0, time.time() - self.ttl_seconds)
        extra = int(client.zcard(self._recent)) - self.max_sessions
        if extra > 0:
            popped: list[tuple[bytes | str, float]] = client.zpopmin(self._recent, extra)  # type: ignore[assignment]
            members = [m.decode() if isinstance(m, bytes) else str(m) for m, _ in popped]
            client.delete(*(self._key(member) for member in members))

    def _key(self, session_id: str) -> str:
        return self.replicas.key("session", session_id)


def _decoded(raw: object) -> SessionState:
    if not isinstance(raw, bytes | str) or not raw:
        return SessionState()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return SessionState()
    return SessionState.from_json(data) if isinstance(data, dict) else SessionState()
