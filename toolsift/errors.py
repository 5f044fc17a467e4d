"""Every error toolsift raises on purpose. Each message says what is wrong, where, and the fix."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches


class ToolsiftError(Exception):
    """Base class: catch this to handle any toolsift error."""

    status_code = 400  # used by the HTTP service


class CatalogError(ToolsiftError):
    """A catalog file or entry is malformed. Raised by the catalog loaders and validators."""

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        entry: str | None = None,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.entry = entry
        self.field = field
        self.fix = fix
        where = ", ".join(
            part
            for part in (
                source,
                entry,
                f"field '{field}'" if field else None,
            )
            if part
        )
        message = f"{where}: {problem}" if where else problem
        if fix:
            message += f". {fix}"
        super().__init__(message)


class EmbedderUnavailable(ToolsiftError):
    """The embedding model cannot be loaded (missing package, unknown name)."""

    status_code = 500

    def __init__(self, model: str, reason: str, fix: str) -> None:
        self.model = model
        super().__init__(f"embedding model '{model}' is unavailable: {reason}. {fix}")


class IndexMismatch(ToolsiftError):
    """A saved index does not fit the catalog, model or code it is loaded with."""

    status_code = 409

    def __init__(self, path: str, what: str, expected: object, actual: object) -> None:
        self.path = path
        self.what = what
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"index at {path} was built with {what} {actual!r}, but {expected!r} was expected. "
            f"Rebuild it: toolsift build CATALOG --out {path}"
        )


class IndexNotFound(ToolsiftError):
    """No saved index at the given path, or it is missing files."""

    status_code = 404

    def __init__(self, path: str, missing: str) -> None:
        self.path = path
        super().__init__(
            f"no usable index at {path}: {missing} is missing. "
            f"Build one first: toolsift build CATALOG --out {path}"
        )


class UnknownTag(ToolsiftError):
    """A tag rule names a tag that no tool in the catalog carries."""

    def __init__(self, tag: str, known: Iterable[str]) -> None:
        self.tag = tag
        known_list = sorted(set(known))
        self.known = known_list
        close = get_close_matches(tag, known_list, n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = ", ".join(known_list[:30]) + (" ..." if len(known_list) > 30 else "")
        super().__init__(f"unknown tag '{tag}'.{hint} Known tags: {listing}")


class UnknownTool(ToolsiftError):
    """A request names a tool (to pin, for instance) that is not in the catalog."""

    def __init__(self, name: str, known: Iterable[str], field: str = "pinned") -> None:
        self.name = name
        close = get_close_matches(name, list(known), n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(
            f"{field}: no tool named '{name}' in the catalog.{hint} GET /tools (or `toolsift route "
            "--json`) lists the names"
        )


class InvalidQuery(ToolsiftError):
    """A route request is out of bounds (empty or huge query, bad k, unknown format)."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        super().__init__(f"{field}: {problem}")


class AdminDisabled(ToolsiftError):
    """Admin endpoints are off because no admin token is configured."""

    status_code = 403

    def __init__(self) -> None:
        super().__init__(
            "admin endpoints are off: no admin token is set. Start the service with "
            "TOOLSIFT_ADMIN_TOKEN=<a long random secret> and send 'Authorization: Bearer <secret>'"
        )


class Unauthorized(ToolsiftError):
    """An admin request without the right token."""

    status_code = 401

    def __init__(self) -> None:
        super().__init__("missing or wrong admin token: send 'Authorization: Bearer <TOOLSIFT_ADMIN_TOKEN>'")


class CatalogManagedElsewhere(ToolsiftError):
    """A catalog edit was sent to a service whose catalog comes from MCP servers."""

    status_code = 409

    def __init__(self) -> None:
        super().__init__(
            "this catalog comes from MCP servers (--mcp-servers): change the tools on those servers "
            "(toolsift follows them), or POST /admin/reload"
        )


class ReloadFailed(ToolsiftError):
    """Fetching or indexing the new tools failed; the previous catalog keeps serving."""

    status_code = 502

    def __init__(self, reason: str) -> None:
        super().__init__(f"reload failed, the previous catalog is still serving: {reason}")


class TenantUnauthorized(ToolsiftError):
    """A request without a valid tenant API key, once tenants are configured."""

    status_code = 401

    def __init__(self) -> None:
        super().__init__("missing or unknown API key: send 'Authorization: Bearer <your tenant key>'")


class NotReady(ToolsiftError):
    """The service has no index loaded yet."""

    status_code = 503

    def __init__(self) -> None:
        super().__init__("the index is not loaded yet; retry in a moment")
