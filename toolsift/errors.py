"""Every error toolsift raises on purpose. Each message says what is wrong, where, and the fix.

The classes know nothing of HTTP: the service maps each to a status code
(``toolsift.service.responses.STATUS_CODES``); the CLI prints the message on one line.

    ToolsiftError
    ├── InputFileError            a file or entry the user wrote (file, entry, field, fix)
    │   ├── CatalogError          a tool catalog
    │   ├── TenantsFileError      the tenants file
    │   └── McpServersFileError   the MCP servers file
    ├── SettingsError             a TOOLSIFT_* setting
    ├── EmbedderUnavailable, MissingExtra, IndexMismatch, IndexNotFound, IndexBusy, LockLost
    ├── UnknownTag, UnknownTool (ToolNotFound), InvalidQuery
    ├── ToolCallRefused, InvalidToolArguments, UpstreamCallFailed, NotAGateway   forwarded calls
    └── AdminDisabled, Unauthorized, TenantUnauthorized, CatalogManagedElsewhere, ReloadFailed, NotReady
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from difflib import get_close_matches


class ToolsiftError(Exception):
    """Base class: catch this to handle any toolsift error."""


class InputFileError(ToolsiftError):
    """A file (or an entry of one) that the user wrote is malformed; the message names the file,
    the entry and the field, and says the fix."""

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


class CatalogError(InputFileError):
    """A catalog file or entry is malformed. Raised by the catalog loaders and validators."""


class TenantsFileError(InputFileError):
    """The tenants file (``--tenants``, ``TOOLSIFT_TENANTS``) is malformed."""


class McpServersFileError(InputFileError):
    """The MCP servers file (``--mcp-servers``, ``TOOLSIFT_MCP_SERVERS``) is malformed."""


class SettingsError(ToolsiftError):
    """A setting (``TOOLSIFT_*`` environment variable or argument) has a value toolsift cannot use."""

    def __init__(self, name: str, value: object, expected: str) -> None:
        self.name = name
        self.value = value
        super().__init__(f"{name}={value!r} is not valid: expected {expected}. Fix or unset {name}")


class EmbedderUnavailable(ToolsiftError):
    """The embedding model cannot be loaded (missing package, unknown name)."""

    def __init__(self, model: str, reason: str, fix: str) -> None:
        self.model = model
        super().__init__(f"embedding model '{model}' is unavailable: {reason}. {fix}")


class MissingExtra(ToolsiftError):
    """An optional dependency is not installed; the message names the extra that installs it."""

    def __init__(self, module: str, extra: str, needed_for: str = "this") -> None:
        self.module = module
        self.extra = extra
        super().__init__(
            f"{needed_for} needs '{module}', which is not installed. Install toolsift's '{extra}' extra: "
            f"pip install 'toolsift[{extra}]'"
        )


class IndexMismatch(ToolsiftError):
    """A saved index does not fit the catalog, model or code it is loaded with."""

    def __init__(self, path: str | None, what: str, expected: object, actual: object) -> None:
        """``path`` is the index folder, or None for an index built in memory."""
        self.path = path
        self.what = what
        self.expected = expected
        self.actual = actual
        if path is None:
            super().__init__(
                f"the index in memory was built with {what} {actual!r}, but the router was given {expected!r}. "
                "Pass the embedder that built the index, or build a new one: Router.build(catalog, embedder)"
            )
            return
        super().__init__(
            f"index at {path} was built with {what} {actual!r}, but {expected!r} was expected. "
            f"Rebuild it: toolsift build CATALOG --out {path}"
        )


class IndexNotFound(ToolsiftError):
    """No saved index at the given path, or it is missing files."""

    def __init__(self, path: str, missing: str) -> None:
        self.path = path
        super().__init__(
            f"no usable index at {path}: {missing} is missing. Build one first: toolsift build CATALOG --out {path}"
        )


class IndexBusy(ToolsiftError):
    """Another process held the index folder's lock for too long (a build or an edit)."""

    def __init__(self, lock: str, seconds: float) -> None:
        self.lock = lock
        super().__init__(
            f"the index folder is locked by another build or edit ({lock}) and was not released within "
            f"{seconds:.0f} s; retry, or check for a stuck `toolsift build`"
        )


class LockLost(ToolsiftError):
    """A replica lost the shared lock it held (it stalled past the lease, and another replica
    took the lock); it wrote nothing."""

    retry_after = 1
    """Seconds a caller should wait before trying again (sent as ``Retry-After``)."""

    def __init__(self, lock: str, what: str, seconds: float) -> None:
        self.lock = lock
        super().__init__(
            f"{what}: this replica stalled for more than the {seconds:.0f} s lease on {lock} and another "
            "replica took it; nothing was written. Send the request again"
        )


class SharedStoreUnavailable(ToolsiftError):
    """The shared store (Redis) that replicas coordinate through does not answer."""

    retry_after = 2
    """Seconds a caller should wait before trying again (sent as ``Retry-After``)."""

    def __init__(self, what: str, fix: str = "") -> None:
        self.what = what
        super().__init__(
            f"{what}: the shared store (Redis, TOOLSIFT_REDIS_URL) does not answer. Retry in "
            f"{self.retry_after} s{'; ' + fix if fix else ''}"
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
            f"{field}: no tool named '{name}' in the catalog.{hint} GET /tools (or `toolsift tools`) lists the names"
        )


class ToolNotFound(UnknownTool):
    """A request addresses a tool by name (to delete it, say) and the catalog has none by that name."""


class ToolCallRefused(ToolsiftError):
    """A call names a tool the caller may not call: none by that name, one their key does not
    reach, or one the operator's rules (tags, access) leave out. The upstream sees nothing."""

    def __init__(self, name: str, known: Iterable[str], reason: str | None = None) -> None:
        self.name = name
        if reason is not None:
            super().__init__(f"the tool '{name}' may not be called here: {reason}")
            return
        close = get_close_matches(name, list(known), n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(f"no tool named '{name}' that you may call.{hint} search_tools finds the tools you may call")


class InvalidToolArguments(ToolsiftError):
    """A call's arguments do not match the tool's inputSchema (checked before anything is forwarded)."""

    def __init__(self, tool: str, where: str, problem: str) -> None:
        self.tool = tool
        self.where = where
        super().__init__(
            f"arguments of '{tool}' do not match its inputSchema at {where}: {problem}. "
            "Fix that field and call again (search_tools shows the schema)"
        )


class NotAGateway(ToolsiftError):
    """A tool call was sent to a service that serves an index folder: it has no MCP servers to forward to."""

    def __init__(self, what: str = "forward calls to") -> None:
        super().__init__(
            f"this service has no MCP servers to {what}: start it with --mcp-servers servers.yaml "
            "(toolsift serve or toolsift mcp) to search and call their tools"
        )


class UpstreamCallFailed(ToolsiftError):
    """The MCP server that owns a tool did not give a usable answer (down, crashed, too slow,
    or not speaking MCP). The gateway and the other servers keep working."""

    def __init__(self, server: str, tool: str, what: str, outcome: str = "upstream_error") -> None:
        self.server = server
        self.outcome = outcome
        super().__init__(f"MCP server '{server}' could not run '{tool}': {what}")


class InvalidQuery(ToolsiftError):
    """A route request is out of bounds (empty or huge query, bad k, unknown format)."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        super().__init__(f"{field}: {problem}")


class AdminDisabled(ToolsiftError):
    """Admin endpoints are off because no admin token is configured."""

    def __init__(self) -> None:
        super().__init__(
            "admin endpoints are off: no admin token is set. Start the service with "
            "TOOLSIFT_ADMIN_TOKEN=<a long random secret> and send 'Authorization: Bearer <secret>'"
        )


class Unauthorized(ToolsiftError):
    """An admin request without the right token."""

    def __init__(self) -> None:
        super().__init__("missing or wrong admin token: send 'Authorization: Bearer <TOOLSIFT_ADMIN_TOKEN>'")


class PoisonedTools(ToolsiftError):
    """Tool definitions the ``security-*`` screen finds poisoned were sent to the catalog."""

    def __init__(self, found: Mapping[str, Sequence[str]]) -> None:
        self.found = dict(found)
        listed = "; ".join(f"'{name}': {', '.join(problems)}" for name, problems in list(found.items())[:5])
        super().__init__(
            f"{len(found)} tool definitions look poisoned and were not added: {listed}. A definition must describe "
            "its tool, never address the model: remove that text; if you wrote it and it is not an attack, send "
            '"keep_flagged": true'
        )


class CatalogManagedElsewhere(ToolsiftError):
    """A catalog edit was sent to a service whose catalog comes from MCP servers."""

    def __init__(self) -> None:
        super().__init__(
            "this catalog comes from MCP servers (--mcp-servers): change the tools on those servers "
            "(toolsift follows them), or POST /admin/reload"
        )


class ReloadFailed(ToolsiftError):
    """Fetching or indexing the new tools failed; the previous catalog keeps serving."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"reload failed, the previous catalog is still serving: {reason}")


class TenantUnauthorized(ToolsiftError):
    """A request without a valid tenant API key, once tenants are configured."""

    def __init__(self) -> None:
        super().__init__("missing or unknown API key: send 'Authorization: Bearer <your tenant key>'")


class FeedbackRefused(ToolsiftError):
    """Feedback without a credential the service accepts for it (or with feedback off)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)


class FeedbackRateLimited(ToolsiftError):
    """One contributor sent more feedback than ``TOOLSIFT_FEEDBACK_RATE`` a minute."""

    def __init__(self, rate: int) -> None:
        super().__init__(f"more than {rate} feedback requests a minute from this credential: slow down and retry")


class NotReady(ToolsiftError):
    """The service has no index loaded yet."""

    def __init__(self) -> None:
        super().__init__("the index is not loaded yet; retry in a moment")


class TuningRefused(ToolsiftError):
    """``toolsift tune`` cannot tune, or will not publish what it tuned (the reason says which)."""

    def __init__(self, reason: str, fix: str = "") -> None:
        self.reason = reason
        super().__init__(f"tuning refused: {reason}" + (f". {fix}" if fix else ""))
