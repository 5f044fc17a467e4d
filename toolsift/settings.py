"""``TOOLSIFT_*`` settings, read with pydantic-settings from the environment (or an injected
mapping, ``Settings.from_env``).

Explicit arguments win over the environment, which wins over the defaults. The defaults are the
library's own constants (imported, not copied), and every value is checked when ``Settings`` is
made: a bad one raises ``SettingsError``, one line that names the variable and what it takes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from toolsift.embeddings import AUTO_MODEL, DEFAULT_BACKEND
from toolsift.errors import SettingsError
from toolsift.index import INDEX_KINDS
from toolsift.router.ranking import DEFAULT_INTENT_MIN_SCORE, DEFAULT_LEXICAL_WEIGHT
from toolsift.router.sessions import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_CAP, DEFAULT_SESSION_TTL_SECONDS

if TYPE_CHECKING:
    from toolsift.embeddings import Backend, EmbeddingCache
    from toolsift.router import RankingConfig, TagRules

PREFIX = "TOOLSIFT_"
BUNDLED_CATALOG = Path(__file__).parent / "data" / "default_catalog.yaml"


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolsift"


class Settings(BaseSettings):
    """Every ``TOOLSIFT_*`` setting. ``Settings()`` reads the process environment;
    ``Settings.from_env(mapping, **overrides)`` reads a mapping instead (tests, embedding). A bad
    value raises ``SettingsError``: one line naming the variable and what it takes."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, env_ignore_empty=True, frozen=True, extra="forbid")

    index_path: Path = Path("var/index")
    catalog_path: Path | None = None
    model: str = Field(AUTO_MODEL, min_length=1, pattern=r"\S")
    """An embedding model; auto picks per catalog (see toolsift.embeddings.registry.model_for)."""
    index_kind: Literal["auto", "flat", "hnsw"] = "auto"
    embedding_backend: Literal["onnx", "torch"] = DEFAULT_BACKEND
    """onnx (default: ONNX Runtime, no torch when serving) or torch (sentence-transformers)."""
    embedding_threads: int = Field(0, ge=0, le=1024)
    """ONNX Runtime threads per process (0: one per core); fewer when several processes share a host."""
    query_batch: int = Field(32, ge=1, le=1024)
    """Most queries of concurrent requests embedded in one call (1: each request on its own)."""
    cache_dir: Path | None = Field(default_factory=_default_cache_dir)
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    lexical_weight: float = Field(DEFAULT_LEXICAL_WEIGHT, ge=0.0, le=10.0, allow_inf_nan=False)
    group_weight: float = Field(0.0, ge=0.0, le=10.0, allow_inf_nan=False)
    """Weight of a tool's group score (its group centroid's standardised cosine); 0: flat ranking."""
    split_intents: bool = True
    """Route each part of a multi-part request too (see toolsift.router.intents)."""
    intent_min_score: float = Field(DEFAULT_INTENT_MIN_SCORE, ge=-100.0, le=100.0, allow_inf_nan=False)
    """A part's best tool joins the matches when it scores at least this for its part."""
    min_confidence: float | None = Field(None, ge=0.0, le=1.0, allow_inf_nan=False)
    """None: the router's default (``DEFAULT_MIN_CONFIDENCE``, or the catalog's no-tool floor where
    higher: ``Router.default_threshold``; 0 with a ``hashing-*`` embedder)."""
    log_level: Literal["critical", "error", "warning", "info", "debug", "trace"] = "info"
    log_format: Literal["json", "text"] = "json"
    """json: one JSON object a line (structured logs); text: plain lines."""
    reload_interval: float = Field(2.0, ge=0.0, le=86_400.0, allow_inf_nan=False)
    """Seconds between checks of the index folder; a new build there is loaded (0 turns it off)."""
    max_request_bytes: int = Field(65_536, ge=1024, le=2**30)
    """Larger request bodies get 413 before they are read."""
    session_cap: int = Field(DEFAULT_SESSION_CAP, ge=1, le=100_000)
    """Most tools a sticky session holds before it resets (see toolsift.router.sessions)."""
    max_sessions: int = Field(DEFAULT_MAX_SESSIONS, ge=1, le=10**8)
    session_ttl: float = Field(DEFAULT_SESSION_TTL_SECONDS, ge=1.0, le=10**8, allow_inf_nan=False)
    """Seconds a session lives after its last turn."""
    admin_token: str | None = None
    """Bearer token for the admin endpoints (reload); they are off while it is unset."""
    tenants: Path | None = None
    """A YAML/JSON file of tenants: API keys and the tools each may see (see toolsift.tenants)."""
    mcp_servers: Path | None = None
    """A YAML/JSON file listing MCP servers whose tools make up the catalog (live catalog)."""
    feedback: Literal["keys", "open", "off"] = "keys"
    """Who may send POST /feedback: ``keys`` a tenant key, the feedback token or the admin token
    (off on a service with none of them); ``open`` anyone (trusted networks: each client address
    counts as one contributor, and a tool's feedback counts once ``feedback_quorum`` agree);
    ``off`` nobody."""
    feedback_token: str | None = Field(None, min_length=16, max_length=512)
    """A credential for POST /feedback only (agents that may teach the router, not edit it)."""
    feedback_quorum: int = Field(3, ge=1, le=1000)
    """With ``feedback: open``: distinct client addresses that must send feedback for a tool
    before any of theirs ranks it."""
    feedback_rate: int = Field(60, ge=1, le=100_000)
    """Feedback requests a minute one contributor (credential or address) may send."""
    approvals: Path | None = None
    """The file of pinned MCP tool definitions (default: ``<mcp servers file>.approvals.json``)."""
    lint_queries: Path | None = None
    """Labelled queries (a benchmark's queries.jsonl) the service's lint report scores the catalog
    on: per-tool accuracy on the curation page, and the query-based findings."""
    redis_url: str | None = Field(None, pattern=r"^(redis|rediss|unix)://")
    """redis://host:port/db: sessions, edit locks and index announcements shared by replicas
    (see toolsift.service.replicas); unset: in memory, per process."""
    redis_prefix: str = Field("toolsift", pattern=r"^[^ ]+$")
    """Prefix of every Redis key and channel (several deployments can share one Redis)."""
    tags: str | None = Field(None, max_length=4096)
    """Comma-separated: every caller sees only tools with at least one of these tags (searches and calls)."""
    exclude_tags: str | None = Field(None, max_length=4096)
    """Comma-separated: no caller sees a tool with any of these tags (searches and calls)."""
    access: Literal["any", "read_only", "non_destructive"] = "any"
    """read_only: every caller sees (and may call) only tools annotated read-only."""
    expose: Literal["search", "dynamic"] = "search"
    """How the MCP gateway shows tools: search (search_tools + call_tool, a list that never
    changes) or dynamic (the tools a session found are added to its tools/list)."""
    dynamic_cap: int = Field(32, ge=1, le=1000)
    """With expose dynamic: most found tools one session lists (the least recently used goes)."""
    max_result_bytes: int = Field(1_000_000, ge=1024, le=2**30)
    """Largest forwarded tool result; a larger one is cut, with a note saying so."""

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise _settings_error(error) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments first, then the environment: the process's, or the mapping ``from_env`` was given."""
        given = _environ.get()
        return (init_settings, env_settings if given is None else _MappingSource(settings_cls, given))

    @field_validator("cache_dir", mode="before")
    @classmethod
    def _cache_off(cls, value: Any) -> Any:
        return None if isinstance(value, str) and value.lower() in ("none", "off", "false", "0") else value

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``environ`` (the process environment when None), with ``overrides`` (those
        not None) winning over it."""
        token = _environ.set(environ)
        try:
            return cls(**{key: value for key, value in overrides.items() if value is not None})
        finally:
            _environ.reset(token)

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

    def rules(self) -> TagRules:
        """The operator's rules (``tags``, ``exclude_tags``, ``access``): every caller is held to them."""
        from toolsift.router import TagRules

        return TagRules.parse(any_of=self.tags, exclude=self.exclude_tags, access=self.access)

    def ranking(self) -> RankingConfig:
        """How the router ranks, as these settings say."""
        from toolsift.router import RankingConfig

        return RankingConfig(
            self.lexical_weight,
            group_weight=self.group_weight,
            split_intents=self.split_intents,
            intent_min_score=self.intent_min_score,
            min_confidence=self.min_confidence,
        )


LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
LOG_FORMATS = ("json", "text")

EXPECTED: dict[str, str] = {
    "feedback": "keys, open or off",
    "feedback_token": "a secret of 16 to 512 characters",
    "feedback_quorum": "a number from 1 to 1000",
    "feedback_rate": "a number from 1 to 100000",
    "model": "a model name, a model folder or auto",
    "index_kind": "one of " + ", ".join(INDEX_KINDS),
    "embedding_backend": "onnx or torch",
    "port": "a port number from 0 to 65535",
    "embedding_threads": "a number of threads from 0 (one per core) to 1024",
    "query_batch": "a number of queries from 1 (no batching) to 1024",
    "lexical_weight": "a number from 0 (dense only) to 10",
    "group_weight": "a number from 0 (flat ranking) to 10",
    "intent_min_score": "a number of standard deviations from -100 to 100",
    "min_confidence": "a probability from 0 (never abstain) to 1",
    "split_intents": "true or false",
    "log_level": "one of " + ", ".join(LOG_LEVELS),
    "log_format": "json or text",
    "reload_interval": "seconds from 0 (off) to 86400",
    "max_request_bytes": "a number of bytes from 1024 to 2**30",
    "session_cap": "a number of tools from 1 to 100000",
    "max_sessions": "a number of sessions from 1 to 10**8",
    "session_ttl": "seconds, at least 1",
    "redis_url": "a Redis URL: redis://host:6379/0, rediss://... or unix:///path/redis.sock",
    "redis_prefix": "a word, e.g. toolsift",
    "access": "one of any, read_only, non_destructive",
    "expose": "search or dynamic",
    "dynamic_cap": "a number of tools from 1 to 1000",
    "max_result_bytes": "a number of bytes from 1024 to 2**30",
}
"""What a valid value of each checked setting is (for the message); others: a path or a text."""


def _settings_error(error: ValidationError) -> SettingsError:
    """The first problem, as one line naming the variable, the value and what it takes."""
    first = error.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else "settings"
    if first["type"] == "extra_forbidden":
        return SettingsError(f"{PREFIX}{name.upper()}", first.get("input"), "no such setting (see the README)")
    return SettingsError(PREFIX + name.upper(), first.get("input"), EXPECTED.get(name, "a path or a text"))


_environ: ContextVar[Mapping[str, str] | None] = ContextVar("toolsift_settings_environ", default=None)
"""The mapping ``Settings.from_env`` reads instead of the process environment (None: the process's)."""


class _MappingSource(EnvSettingsSource):
    """The environment source, over a given mapping instead of ``os.environ``."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._given = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {key.lower(): value for key, value in self._given.items() if value != ""}
