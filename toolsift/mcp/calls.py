"""Calls forwarded to the MCP server that owns a tool: the gateway's other half.

``Forwarder.call`` takes a tool the caller may call (``toolsift.router.tool_to_call`` decided
that), checks the arguments against its ``inputSchema``, sends them over the live connection the
``LiveCatalog`` holds to its server, and gives back the server's result as it came (every content
block, ``structuredContent``, ``isError``), cut to ``max_result_bytes`` with a note when larger.

Whatever the server does — down, crashed mid-call, too slow, an error, an answer that is not MCP —
the caller gets ``UpstreamCallFailed`` naming the server and what happened, never a hang: each call
has its server's ``call_timeout``. Every call, whatever its outcome, is handed to ``observe``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import jsonschema_rs
import orjson
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, CallToolResult, TextContent
from pydantic import ValidationError

from toolsift.catalog import Tool
from toolsift.errors import InvalidToolArguments, ToolCallRefused, UpstreamCallFailed
from toolsift.mcp.live import BASE, LiveCatalog

logger = logging.getLogger("toolsift.gateway")

Progress = ProgressFnT
"""Called with (progress, total, message) as the server reports progress on a call."""

OUTCOMES = ("ok", "tool_error", "refused", "invalid_arguments", "unavailable", "timeout", "upstream_error")
"""How a call ended: ``ok`` (the server ran it), ``tool_error`` (it ran and answered isError),
``refused`` (the caller may not call it), ``invalid_arguments``, ``unavailable`` (the server is not
connected), ``timeout``, ``upstream_error`` (the server failed or answered garbage)."""
DROPPED = "the connection closed during the call (the server may have crashed); toolsift reconnects to it"
NOTE_ROOM = 400
"""Bytes kept for the note that says a result was cut."""


@dataclass(frozen=True)
class CallRecord:
    """One call, as it is logged and counted."""

    tool: str
    server: str
    outcome: str
    seconds: float
    tenant: str = ""
    result_bytes: int = 0
    session_id: str | None = None
    error: str | None = None
    cut: bool = False


@dataclass(frozen=True)
class CallOutcome:
    """What a caller gets back: the MCP result, and how the call ended (one of ``OUTCOMES``)."""

    result: CallToolResult
    outcome: str


@dataclass
class ServerCalls:
    """Per-server call counts and the last failure, for ``/admin/status``."""

    outcomes: dict[str, int] = field(default_factory=dict)
    last_error: str | None = None
    last_error_at: str | None = None

    def count(self, record: CallRecord) -> None:
        self.outcomes[record.outcome] = self.outcomes.get(record.outcome, 0) + 1
        if record.error is not None and record.outcome not in ("refused", "invalid_arguments"):
            self.last_error = record.error
            self.last_error_at = datetime.now(UTC).isoformat(timespec="milliseconds")

    def record(self) -> dict[str, Any]:
        return {
            "calls": sum(self.outcomes.values()),
            "outcomes": dict(sorted(self.outcomes.items())),
            "last_error": self.last_error,
            "last_error_at": self.last_error_at,
        }


class Forwarder:
    """Forwards calls to the servers of one ``LiveCatalog``."""

    def __init__(
        self,
        live: LiveCatalog,
        *,
        max_result_bytes: int = 1_000_000,
        observe: Callable[[CallRecord], None] | None = None,
    ) -> None:
        self.live = live
        self.max_result_bytes = max_result_bytes
        self.calls: dict[str, ServerCalls] = {name: ServerCalls() for name in live.servers}
        self._observe = observe
        self._validators: dict[str, Any] = {}

    async def call(
        self,
        tool: Tool,
        arguments: Any,
        *,
        tenant: str = "",
        session_id: str | None = None,
        progress: Progress | None = None,
    ) -> CallOutcome:
        """Run ``tool`` on its server with ``arguments`` (for ``tenant``, as logged). A call that
        fails (no server serves the tool, arguments that do not match, the server failing) is a
        tool error that says why (``error_result``), counted like any other."""
        started = time.perf_counter()
        server = self.live.owner(tool.name)
        try:
            self.check_arguments(tool, arguments)
            result = await self._forward(server, tool, arguments or {}, progress)
        except (ToolCallRefused, InvalidToolArguments, UpstreamCallFailed) as error:
            self.refuse(tool.name, server or "", error, tenant, session_id, started)
            return CallOutcome(error_result(error), outcome_of(error))
        size = _size(result)
        cut = size > self.max_result_bytes
        if cut:
            result = cut_to_size(result, tool.name, size, self.max_result_bytes)
        outcome = "tool_error" if result.is_error else "ok"
        seconds = time.perf_counter() - started
        self._done(CallRecord(tool.name, server or "", outcome, seconds, tenant, size, session_id, cut=cut))
        return CallOutcome(result, outcome)

    def refuse(
        self,
        tool: str,
        server: str,
        error: Exception,
        tenant: str = "",
        session_id: str | None = None,
        started: float | None = None,
    ) -> CallOutcome:
        """Count a call that never reached a server's answer (or was refused before it was sent);
        the caller's answer: a tool error that says why."""
        seconds = time.perf_counter() - started if started is not None else 0.0
        record = CallRecord(tool, server, outcome_of(error), seconds, tenant, session_id=session_id, error=str(error))
        self._done(record)
        return CallOutcome(error_result(error), record.outcome)

    def check_arguments(self, tool: Tool, arguments: Any) -> None:
        """``InvalidToolArguments`` naming the first field that does not match the tool's inputSchema."""
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidToolArguments(tool.name, "arguments", f"expected an object, got {type(arguments).__name__}")
        validator = self._validator(tool)
        if validator is None:
            return
        for error in validator.iter_errors(arguments or {}):
            where = "arguments" + "".join(
                f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.instance_path
            )
            raise InvalidToolArguments(tool.name, where, error.message)

    def status(self) -> dict[str, Any]:
        return {name: calls.record() for name, calls in self.calls.items()}

    # -- forwarding ------------------------------------------------------------------------

    async def _forward(
        self, server: str | None, tool: Tool, arguments: dict[str, Any], progress: Progress | None
    ) -> CallToolResult:
        if server is None or server == BASE:
            reason = "it comes from the catalog file (--catalog), which no MCP server serves"
            raise ToolCallRefused(tool.name, (), reason if server == BASE else "it was removed from the catalog")
        state = self.live.servers[server]
        client = state.client
        if client is None:
            what = f"it is not connected ({state.last_error or 'starting'}); toolsift reconnects on its own"
            raise UpstreamCallFailed(server, tool.name, what, "unavailable")
        name = tool.name.removeprefix(state.spec.prefix)
        timeout = state.spec.call_timeout
        try:
            with anyio.fail_after(timeout):
                return await client.call_tool(name, arguments, read_timeout_seconds=timeout, progress_callback=progress)
        except TimeoutError:
            what = f"no answer within {timeout:g} s (its call_timeout in the servers file)"
            raise UpstreamCallFailed(server, tool.name, what, "timeout") from None
        except MCPError as error:
            if error.code == CONNECTION_CLOSED:
                self.live.connection_lost(server)
                raise UpstreamCallFailed(server, tool.name, DROPPED) from None
            raise UpstreamCallFailed(server, tool.name, f"it answered with an error: {_one_line(str(error))}") from None
        except ValidationError:
            raise UpstreamCallFailed(
                server, tool.name, "it answered something that is not an MCP tool result"
            ) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            self.live.connection_lost(server)
            raise UpstreamCallFailed(server, tool.name, DROPPED) from None

    def _validator(self, tool: Tool) -> Any:
        if not tool.parameters:
            return None
        key = orjson.dumps(tool.parameters, option=orjson.OPT_SORT_KEYS).decode()
        found = self._validators.get(key)
        if found is None:
            try:
                found = jsonschema_rs.validator_for(tool.parameters)
            except (jsonschema_rs.ValidationError, ValueError):  # checked when the catalog was read; be safe
                logger.warning("the inputSchema of '%s' cannot be used to check arguments", tool.name)
                return None
            if len(self._validators) > 4096:
                self._validators.clear()
            self._validators[key] = found
        return found

    def _done(self, record: CallRecord) -> None:
        if record.server in self.calls:
            self.calls[record.server].count(record)
        if self._observe is not None:
            self._observe(record)


def cut_to_size(result: CallToolResult, tool: str, size: int, limit: int) -> CallToolResult:
    """``result`` within ``limit`` bytes: its content blocks in order while they fit, the first
    text block that does not fit cut short, ``structuredContent`` kept only if it fits too, and a
    note (a last text block) that says what was cut."""
    budget = limit - NOTE_ROOM
    structured = result.structured_content
    if structured is not None:
        structured_size = len(orjson.dumps(structured))
        if structured_size > budget // 2:
            structured = None
        else:
            budget -= structured_size
    kept: list[Any] = []
    for block in result.content:
        block_size = _size(block)
        if block_size <= budget:
            kept.append(block)
            budget -= block_size
            continue
        if isinstance(block, TextContent) and budget > 64:
            text = block.text.encode()[: budget - 64].decode(errors="ignore")
            kept.append(block.model_copy(update={"text": text}))
        break
    left_out = len(result.content) - len(kept)
    note = (
        f"[toolsift: the result of '{tool}' was {size} bytes, over the gateway's limit of {limit} "
        f"(TOOLSIFT_MAX_RESULT_BYTES); it was cut"
        + (f": {left_out} content block(s) left out" if left_out else "")
        + (", structuredContent left out" if result.structured_content is not None and structured is None else "")
        + "]"
    )
    kept.append(TextContent(type="text", text=note))
    return result.model_copy(update={"content": kept, "structured_content": structured})


def _size(model: Any) -> int:
    return len(orjson.dumps(model.model_dump(mode="json", by_alias=True, exclude_none=True)))


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 300 else line[:297] + "..."


def error_result(error: Exception) -> CallToolResult:
    """A call that failed, as the MCP tool error the caller's model reads (the message says why
    and what to do): what both the MCP gateway and ``POST /call`` answer."""
    return CallToolResult(content=[TextContent(type="text", text=str(error))], is_error=True)


def outcome_of(error: Exception) -> str:
    if isinstance(error, UpstreamCallFailed):
        return error.outcome
    return "invalid_arguments" if isinstance(error, InvalidToolArguments) else "refused"
