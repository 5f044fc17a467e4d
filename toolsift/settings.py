"""Settings read from an injectable mapping (``os.environ`` by default) with a ``TOOLSIFT_`` prefix.

Explicit arguments win over the environment, which wins over the defaults. The defaults are the
library's own constants (imported, not copied), and every value is checked when ``Settings`` is
made: a bad one raises ``SettingsError``, one line that names the variable and what it takes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolsift.embeddings import AUTO_MODEL, DEFAULT_BACKEND
from toolsift.errors import SettingsError
from toolsift.index import INDEX_KINDS
from toolsift.router.ranking import DEFAULT_INTENT_MIN_SCORE, DEFAULT_LEXICAL_WEIGHT
from toolsift.router.sessions import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_CAP, DEFAULT_SESSION_TTL_SECONDS

if TYPE_CHECKING:
    from toolsift.embeddings import Backend, EmbeddingCache
    from toolsift.router import RankingConfig

PREFIX = "TOOLSIFT_"
BUNDLED_CATALOG = Path(__file__).parent / "data" / "default_catalog.yaml"


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolsift"


@dataclass(frozen=True)
class Settings:
    index_path: Path = Path("var/index")
    catalog_path: Path | None = None
    model: str = AUTO_MODEL
    """An embedding model; auto picks per catalog (see toolsift.embeddings.registry.model_for)."""
    index_kind: str = "auto"
    embedding_backend: str = DEFAULT_BACKEND
    """onnx (default: ONNX Runtime, no torch when serving) or torch (sentence-transformers)."""
    embedding_threads: int = 0
    """ONNX Runtime threads per process (0: one per core); fewer when several processes share a host."""
    query_batch: int = 32
    """Most queries of concurrent requests embedded in one call (1: each request on its own)."""
    cache_dir: Path | None = field(default_factory=_default_cache_dir)
    host: str = "127.0.0.1"
    port: int = 8000
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT
    split_intents: bool = True
    """Route each part of a multi-part request too (see toolsift.router.intents)."""
    intent_min_score: float = DEFAULT_INTENT_MIN_SCORE
    """A part's best tool joins the matches when it scores at least this for its part."""
    log_level: str = "info"
    log_format: str = "json"
    """json: one JSON object a line (structured logs); text: plain lines."""
    reload_interval: float = 2.0
    """Seconds between checks of the index folder; a new build there is loaded (0 turns it off)."""
    max_request_bytes: int = 65_536
    """Larger request bodies get 413 before they are read."""
    session_cap: int = DEFAULT_SESSION_CAP
    """Most tools a sticky session holds before it resets (see toolsift.router.sessions)."""
    max_sessions: int = DEFAULT_MAX_SESSIONS
    session_ttl: float = DEFAULT_SESSION_TTL_SECONDS
    """Seconds a session lives after its last turn."""
    admin_token: str | None = None
    """Bearer token for the admin endpoints (reload); they are off while it is unset."""
    tenants: Path | None = None
    """A YAML/JSON file of tenants: API keys and the tools each may see (see toolsift.tenants)."""
    mcp_servers: Path | None = None
    """A YAML/JSON file listing MCP servers whose tools make up the catalog (live catalog)."""
    lint_queries: Path | None = None
    """Labelled queries (a benchmark's queries.jsonl) the service's lint report scores the catalog
    on: per-tool accuracy on the curation page, and the query-based findings."""
    redis_url: str | None = None
    """redis://host:port/db: sessions, edit locks and index announcements shared by replicas
    (see toolsift.service.replicas); unset: in memory, per process."""
    redis_prefix: str = "toolsift"
    """Prefix of every Redis key and channel (several deployments can share one Redis)."""

    def __post_init__(self) -> None:
        for name in ("index_path", "catalog_path", "cache_dir", "tenants", "mcp_servers", "lint_queries"):
            value = getattr(self, name)
            if isinstance(value, str):  # accept strings from Python callers too
                object.__setattr__(self, name, Path(value))
        for name, (valid, expected) in _CHECKS.items():
            value = getattr(self, name)
            if not valid(value):
                raise SettingsError(PREFIX + name.upper(), value, expected)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for spec in fields(cls):
            raw = environ.get(PREFIX + spec.name.upper())
            if raw is None or raw == "":
                continue
            values[spec.name] = _cast(spec.name, raw)
        values.update({key: value for key, value in overrides.items() if value is not None})
        return replace(cls(), **values)

    def cache_file(self) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / "embeddings.sqlite"

    def open_cache(self) -> EmbeddingCache | None:
        """The on-disk embedding cache these settings name (None when it is off)."""
        from toolsift.embeddings import EmbeddingCache

        cache_file = self.cache_file()
        return EmbeddingCache(cache_file) if cache_file is not None else None

    @property
    def backend(self) -> Backend:
        return "torch" if self.embedding_backend == "torch" else "onnx"

    def ranking(self) -> RankingConfig:
        """How the router ranks, as these settings say."""
        from toolsift.router import RankingConfig

        return RankingConfig(
            self.lexical_weight, split_intents=self.split_intents, intent_min_score=self.intent_min_score
        )


def _number_in(low: float, high: float) -> Callable[[Any], bool]:
    def valid(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high

    return valid


LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
LOG_FORMATS = ("json", "text")

_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "model": (lambda value: isinstance(value, str) and bool(value.strip()), "a model name, a model folder or auto"),
    "index_kind": (lambda value: value in INDEX_KINDS, "one of " + ", ".join(INDEX_KINDS)),
    "embedding_backend": (lambda value: value in ("onnx", "torch"), "onnx or torch"),
    "port": (_number_in(0, 65535), "a port number from 0 to 65535"),
    "embedding_threads": (_number_in(0, 1024), "a number of threads from 0 (one per core) to 1024"),
    "query_batch": (_number_in(1, 1024), "a number of queries from 1 (no batching) to 1024"),
    "lexical_weight": (_number_in(0.0, 10.0), "a number from 0 (dense only) to 10"),
    "intent_min_score": (_number_in(-100.0, 100.0), "a number of standard deviations from -100 to 100"),
    "log_level": (lambda value: value in LOG_LEVELS, "one of " + ", ".join(LOG_LEVELS)),
    "log_format": (lambda value: value in LOG_FORMATS, "json or text"),
    "reload_interval": (_number_in(0.0, 86_400.0), "seconds from 0 (off) to 86400"),
    "max_request_bytes": (_number_in(1024, 2**30), "a number of bytes from 1024 to 2**30"),
    "session_cap": (_number_in(1, 100_000), "a number of tools from 1 to 100000"),
    "max_sessions": (_number_in(1, 10**8), "a number of sessions from 1 to 10**8"),
    "session_ttl": (_number_in(1.0, 10**8), "seconds, at least 1"),
    "redis_url": (
        lambda value: value is None or str(value).startswith(("redis://", "rediss://", "unix://")),
        "a Redis URL: redis://host:6379/0, rediss://... or unix:///path/redis.sock",
    ),
    "redis_prefix": (
        lambda value: isinstance(value, str) and bool(value) and " " not in value,
        "a word, e.g. toolsift",
    ),
}
"""Each checked setting: whether a value is valid, and what a valid one is (for the message)."""


def _as_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


_as_bool.__name__ = "true or false"  # named in SettingsError


def _as_path_or_none(raw: str) -> Path | None:
    return None if raw.lower() in ("none", "off", "false", "0") else Path(raw)


_CASTS: dict[str, Callable[[str], Any]] = {
    "index_path": Path,
    "catalog_path": Path,
    "cache_dir": _as_path_or_none,
    "port": int,
    "embedding_threads": int,
    "query_batch": int,
    "lexical_weight": float,
    "split_intents": _as_bool,
    "intent_min_score": float,
    "session_cap": int,
    "max_request_bytes": int,
    "reload_interval": float,
    "max_sessions": int,
    "session_ttl": float,
    "mcp_servers": Path,
    "tenants": Path,
    "lint_queries": Path,
}


def _cast(name: str, raw: str) -> Any:
    cast = _CASTS.get(name, str)
    try:
        return cast(raw)
    except ValueError:
        expected = _CHECKS[name][1] if name in _CHECKS else getattr(cast, "__name__", "a value")
        raise SettingsError(PREFIX + name.upper(), raw, expected) from None
