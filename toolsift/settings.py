"""Settings read from an injectable mapping (``os.environ`` by default) with a ``TOOLSIFT_`` prefix.

Explicit arguments win over the environment, which wins over the defaults.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolsift.errors import ToolsiftError

if TYPE_CHECKING:
    from toolsift.embeddings import EmbeddingCache
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
    model: str = "auto"
    """An embedding model; auto picks per catalog (see toolsift.embeddings.registry.model_for)."""
    index_kind: str = "auto"
    cache_dir: Path | None = field(default_factory=_default_cache_dir)
    host: str = "127.0.0.1"
    port: int = 8000
    lexical_weight: float = 0.3  # = toolsift.router.ranking.DEFAULT_LEXICAL_WEIGHT (kept light: no index import here)
    split_intents: bool = True
    """Route each part of a multi-part request too (see toolsift.router.intents)."""
    intent_min_score: float = 5.0
    """A part's best tool joins the matches when it scores at least this for its part."""
    log_level: str = "info"
    log_format: str = "json"
    """json: one JSON object a line (structured logs); text: plain lines."""
    reload_interval: float = 2.0
    """Seconds between checks of the index folder; a new build there is loaded (0 turns it off)."""
    max_request_bytes: int = 65_536
    """Larger request bodies get 413 before they are read."""
    session_cap: int = 64
    """Most tools a sticky session holds before it resets (see toolsift.router.sessions)."""
    max_sessions: int = 10_000
    session_ttl: float = 3600.0
    """Seconds a session lives after its last turn."""
    admin_token: str | None = None
    """Bearer token for the admin endpoints (reload); they are off while it is unset."""
    tenants: Path | None = None
    """A YAML/JSON file of tenants: API keys and the tools each may see (see toolsift.tenants)."""
    mcp_servers: Path | None = None
    """A YAML/JSON file listing MCP servers whose tools make up the catalog (live catalog)."""

    def __post_init__(self) -> None:
        for name in ("index_path", "catalog_path", "cache_dir", "tenants", "mcp_servers"):
            value = getattr(self, name)
            if isinstance(value, str):  # accept strings from Python callers too
                object.__setattr__(self, name, Path(value))

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

    def ranking(self) -> RankingConfig:
        """How the router ranks, as these settings say."""
        from toolsift.router import RankingConfig

        return RankingConfig(self.lexical_weight, split_intents=self.split_intents, intent_min_score=self.intent_min_score)


def _as_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


_as_bool.__name__ = "true or false"


def _as_path_or_none(raw: str) -> Path | None:
    return None if raw.lower() in ("none", "off", "false", "0") else Path(raw)


_CASTS: dict[str, Callable[[str], Any]] = {
    "index_path": Path,
    "catalog_path": Path,
    "cache_dir": _as_path_or_none,
    "port": int,
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
}


def _cast(name: str, raw: str) -> Any:
    cast = _CASTS.get(name, str)
    try:
        return cast(raw)
    except ValueError:
        raise ToolsiftError(
            f"environment variable {PREFIX}{name.upper()}={raw!r} is not valid; expected "
            f"{getattr(cast, '__name__', 'a value')}"
        ) from None
