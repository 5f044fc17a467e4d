"""Sticky sessions: the tool list given to a conversation only grows at the end.

Prompt caches key on an exact prefix (OpenAI) or on tools → system → messages (Anthropic), so a
tools array that changes or reorders from one turn to the next throws the cache away. With a
session, the tools delivered on earlier turns keep their place and this turn's new tools are
appended, so the previous turn's list stays a byte-identical prefix.

What is appended (``policy``):

- ``all`` (default): every tool of this turn's selection that the session lacks.
- ``outranking``: only the new tools ranked above the best-ranked tool the session already holds
  (pinned tools are always added). A turn whose top tool is already in the session then changes
  nothing, so the whole prompt stays a cache hit, not just the tools prefix; the new tools left
  out are listed in ``held_back``. Over multi-turn sessions: far more turns with an identical
  tools array and a lower prompt cost, for a lower recall than ``all`` (benchmarks/RESULTS.md).

Policy at the cap: when appending would take the list past ``cap`` tools, the session *resets*:
the list becomes this turn's tools (pinned first, then the matches, each by name). The prefix
changes once, on that turn (``reset`` is true), and the session has room to grow again. Dropping
old tools one by one instead would change the prefix on every turn after the cap.

When the catalog changes under a session (a re-index), tools that left the catalog are removed and
tools whose definition changed are replaced in place; either way the response says the prefix
changed and why. A session never serves a definition the current catalog no longer has.

``SessionStore`` keeps sessions in memory, per process, bounded in number (least recently used
evicted first) and in age (``ttl_seconds`` since last use). ``RedisSessionStore``
(``toolsift.service.replicas``, on with ``TOOLSIFT_REDIS_URL``) keeps the same state in
Redis, so any worker or replica continues any session; both apply ``next_turn``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from cachetools import TTLCache

from toolsift.catalog import Catalog, Tool
from toolsift.errors import InvalidQuery
from toolsift.wire import SESSION_POLICIES as SESSION_POLICIES
from toolsift.wire import SessionPolicy as SessionPolicy

DEFAULT_SESSION_CAP = 64
DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_SESSION_TTL_SECONDS = 3600.0


@dataclass(frozen=True)
class SessionTurn:
    """What one turn did to a session's tool list."""

    session_id: str
    turn: int
    tools: tuple[Tool, ...]
    """The whole list to send, earlier tools first; a prefix of the next turn's unless it changes."""
    appended: tuple[str, ...]
    """Names added at the end on this turn."""
    removed: tuple[str, ...] = ()
    """Names dropped because they left the catalog (or because of a reset)."""
    replaced: tuple[str, ...] = ()
    """Names whose definition changed in the catalog since they were given."""
    reset: bool = False
    """The cap was reached and the list started over with this turn's tools."""
    held_back: tuple[str, ...] = ()
    """New tools of this turn's selection not appended (``outranking`` policy)."""
    withheld: tuple[str, ...] = ()
    """Session tools this turn's rules (tags, access, tenant scope) forbid: taken out of the list."""

    @property
    def prefix_changed(self) -> bool:
        """False when the list sent on the previous turn is an exact prefix of this one."""
        return self.reset or bool(self.removed or self.replaced or self.withheld)


@dataclass(frozen=True)
class LastTurn:
    """What the session's latest turn did, under the key the caller sent with it: a retry of that
    request (same key) gets the same answer instead of a second turn."""

    key: str
    appended: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    reset: bool = False
    held_back: tuple[str, ...] = ()
    withheld: tuple[str, ...] = ()

    FIELDS = ("appended", "removed", "replaced", "held_back", "withheld")

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "reset": self.reset, **{name: list(getattr(self, name)) for name in self.FIELDS}}

    @classmethod
    def from_json(cls, data: object) -> LastTurn | None:
        if not isinstance(data, dict) or not isinstance(data.get("key"), str) or not data["key"]:
            return None
        names = {name: tuple(str(n) for n in data.get(name) or () if isinstance(n, str)) for name in cls.FIELDS}
        return cls(data["key"], reset=bool(data.get("reset")), **names)


@dataclass(frozen=True)
class SessionState:
    """What a store keeps of a session: its tools in delivery order, each as (name, digest of the
    definition given), how many turns it has had, and what the last keyed turn did. Names and
    digests only, so any process (any replica) can continue it against its own copy of the catalog."""

    tools: tuple[tuple[str, str], ...] = ()
    turns: int = 0
    last: LastTurn | None = None

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {"tools": [list(entry) for entry in self.tools], "turns": self.turns}
        if self.last is not None:
            found["last"] = self.last.to_json()
        return found

    @classmethod
    def from_json(cls, data: dict[str, object]) -> SessionState:
        tools = data.get("tools")
        turns = data.get("turns")
        entries = (
            tuple((str(e[0]), str(e[1])) for e in tools if isinstance(e, list) and len(e) == 2)
            if isinstance(tools, list)
            else ()
        )
        return cls(entries, turns if isinstance(turns, int) else 0, LastTurn.from_json(data.get("last")))


def next_turn(
    state: SessionState,
    session_id: str,
    selected: Sequence[Tool],
    catalog: Catalog,
    *,
    cap: int,
    ranked: Sequence[str] = (),
    policy: SessionPolicy = "all",
    permitted: Callable[[Tool], bool] | None = None,
    turn_key: str | None = None,
) -> tuple[SessionState, SessionTurn]:
    """The session after this turn, and what the turn did: the one transition every store uses,
    so a session continues identically in any process.

    ``turn_key``: the caller's key for this request. When it is the key of the session's latest
    turn, the request is a retry (its answer was lost, or the store's own retry ran it twice):
    that turn's answer is given again and the session is left as it is — unless this request's
    rules (``permitted``) forbid one of its tools: rules hold over any key."""
    if turn_key and state.last is not None and state.last.key == turn_key:
        replayed = _replayed(state, session_id, catalog)
        if permitted is None or all(permitted(tool) for tool in replayed.tools):
            return state, replayed  # a key reused with rules that forbid a tool is a turn of its own
    state, turn = _advanced(state, session_id, selected, catalog, cap, ranked, policy, permitted)
    if turn_key:
        last = LastTurn(turn_key, turn.appended, turn.removed, turn.replaced, turn.reset, turn.held_back, turn.withheld)
        state = replace(state, last=last)
    return state, turn


def _replayed(state: SessionState, session_id: str, catalog: Catalog) -> SessionTurn:
    """The latest turn's answer again: the session's tools as they stand, and what that turn did."""
    last = state.last
    assert last is not None
    tools = tuple(tool for tool in (catalog.get(name) for name, _ in state.tools) if tool is not None)
    return SessionTurn(
        session_id, state.turns, tools, last.appended, last.removed, last.replaced, last.reset, last.held_back,
        last.withheld,
    )  # fmt: skip


def _advanced(
    state: SessionState,
    session_id: str,
    selected: Sequence[Tool],
    catalog: Catalog,
    cap: int,
    ranked: Sequence[str],
    policy: SessionPolicy,
    permitted: Callable[[Tool], bool] | None,
) -> tuple[SessionState, SessionTurn]:
    turns = state.turns + 1
    kept, removed, replaced = _refresh(state.tools, catalog)
    withheld = tuple(tool.name for tool in kept if permitted is not None and not permitted(tool))
    if withheld:
        kept = [tool for tool in kept if tool.name not in withheld]
    present = {tool.name for tool in kept}
    new = [tool for tool in dict((t.name, t) for t in selected).values() if tool.name not in present]
    held_back: tuple[str, ...] = ()
    if policy == "outranking" and kept:
        first_held = next((i for i, name in enumerate(ranked) if name in present), len(ranked))
        wanted = set(ranked[:first_held]) | {t.name for t in new if t.name not in set(ranked)}
        held_back = tuple(t.name for t in new if t.name not in wanted)
        new = [t for t in new if t.name in wanted]
    if len(kept) + len(new) > cap and kept:
        chosen = {tool.name for tool in selected}
        dropped = removed + tuple(t.name for t in kept if t.name not in chosen)
        tools = list(dict((t.name, t) for t in selected).values())
        turn = SessionTurn(
            session_id, turns, tuple(tools), tuple(t.name for t in tools), dropped, reset=True, withheld=withheld
        )
        return _state(tools, catalog, turns), turn
    tools = kept + new
    turn = SessionTurn(
        session_id,
        turns,
        tuple(tools),
        appended=tuple(t.name for t in new),
        removed=removed,
        replaced=replaced,
        held_back=held_back,
        withheld=withheld,
    )
    return _state(tools, catalog, turns), turn


def _state(tools: Sequence[Tool], catalog: Catalog, turns: int) -> SessionState:
    return SessionState(tuple((tool.name, catalog.digest(tool.name)) for tool in tools), turns)


def check_policy(policy: str) -> None:
    if policy not in SESSION_POLICIES:
        raise InvalidQuery("session_policy", f"must be one of {', '.join(SESSION_POLICIES)}, got {policy!r}")


class Sessions(Protocol):
    """A session store: ``SessionStore`` (in memory) or ``RedisSessionStore`` (shared)."""

    def __len__(self) -> int: ...

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
    ) -> SessionTurn: ...

    def names(self, session_id: str) -> tuple[str, ...]: ...


class SessionStore:
    """Thread-safe, bounded, in-memory sessions keyed by the caller's session id (one process;
    ``toolsift.service.redis_sessions.RedisSessionStore`` shares them between replicas)."""

    def __init__(
        self,
        cap: int = DEFAULT_SESSION_CAP,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        ttl_seconds: float = DEFAULT_SESSION_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if cap < 1:
            raise ValueError(f"cap must be at least 1, not {cap}")
        self.cap = cap
        self.max_sessions = max_sessions
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        # least recently used evicted first; each expires ttl_seconds after its last turn
        self._sessions: TTLCache[str, SessionState] = TTLCache(max_sessions, ttl_seconds, timer=clock)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._sessions.expire()
            return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def names(self, session_id: str) -> tuple[str, ...]:
        """The names of the tools the session holds now (empty for an unknown session)."""
        return tuple(name for name, _ in self.state(session_id).tools)

    def state(self, session_id: str) -> SessionState:
        with self._lock:
            return self._sessions.get(session_id) or SessionState()

    def forget(self, session_id: str) -> bool:
        with self._lock:
            return self._sessions.pop(session_id, None) is not None

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
        """Add this turn's ``selected`` tools (in the order given, normally canonical) to the session.

        ``ranked``: the names of the selection's ranked matches, best first (the rest of
        ``selected`` being pinned tools); the ``outranking`` policy needs it. ``permitted``: this
        turn's rules; session tools it refuses are withheld (taken out of the list and reported),
        so a turn never delivers a tool its own rules forbid. ``turn_key``: see ``next_turn`` (a
        retried request gets the same answer, not a second turn)."""
        check_policy(policy)
        with self._lock:
            state = self._sessions.pop(session_id, None) or SessionState()
            state, turn = next_turn(
                state, session_id, selected, catalog, cap=self.cap, ranked=ranked, policy=policy, permitted=permitted,
                turn_key=turn_key,
            )  # fmt: skip
            self._sessions[session_id] = state  # its time to live starts again
            return turn


def _refresh(
    entries: Sequence[tuple[str, str]], catalog: Catalog
) -> tuple[list[Tool], tuple[str, ...], tuple[str, ...]]:
    """The session's tools as the current catalog defines them: gone ones dropped, changed ones replaced."""
    kept: list[Tool] = []
    removed: list[str] = []
    replaced: list[str] = []
    for name, digest in entries:
        current = catalog.get(name)
        if current is None:
            removed.append(name)
            continue
        if catalog.digest(name) != digest:
            replaced.append(name)
        kept.append(current)
    return kept, tuple(removed), tuple(replaced)
