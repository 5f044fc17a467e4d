"""A Python client for a toolsift service, and the glue of deferred loading for each provider.

    from toolsift.client import Client

    toolsift = Client("http://127.0.0.1:8000", api_key=None)
    result = toolsift.route("will it rain in Lisbon?", k=3, format="anthropic")
    result.tools                      # the definitions to send

Deferred loading (see toolsift.router.deferred): send ``toolsift.deferred("anthropic").tools``
on every turn; when the model calls the search tool, append what ``anthropic_tool_result`` (for
OpenAI Responses, ``openai_tool_search_output``; for Gemini Interactions,
``gemini_function_result``) returns; answer its calls of found tools with ``anthropic_call_result``
(``openai_call_output``, ``gemini_call_result``). ``AsyncClient`` has the same methods.

Errors come back as toolsift's own error classes (``UnknownTag``, ``InvalidQuery``, ...); a
connection error, or a 503 while the service loads its index, is retried ``retries`` times.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import httpx

from toolsift import errors
from toolsift.wire import (
    SEARCH_TOOL_NAME,
    CallResult,
    DeferredFormat,
    DeferredTools,
    FeedbackAccepted,
    RouteResponse,
    ToolPage,
)

DEFAULT_URL = "http://127.0.0.1:8000"
RETRY_STATUSES = frozenset({502, 503, 504})
TURN_KEY = re.compile(r"[A-Za-z0-9._:-]{1,128}")
RETRY_ERRORS = (httpx.TransportError,)


def retry_policy(retries: int, *, once: bool = False) -> dict[str, Any]:
    """tenacity's arguments for a request: a connection error or a 502/503/504 (the service
    loading its index, a proxy between replicas) is tried again ``retries`` times, waiting 0.1,
    0.2, 0.4 s...; after the last try its error (or its response) is what the caller gets.
    ``once`` (a tool call, which must not run twice): only what never reached the service is
    tried again — a refused connection, a 503 while it loads.
    (tenacity is imported on the first request, not with the client: importing it costs 40 ms.)"""
    from tenacity import retry_if_exception_type, retry_if_result, stop_after_attempt, wait_exponential

    errors_, statuses = ((httpx.ConnectError,), frozenset({503})) if once else (RETRY_ERRORS, RETRY_STATUSES)
    return {
        "stop": stop_after_attempt(retries + 1),
        "wait": wait_exponential(multiplier=0.1, max=5.0),
        "retry": retry_if_exception_type(errors_) | retry_if_result(lambda response: response.status_code in statuses),
        "retry_error_callback": lambda state: state.outcome.result(),  # the last response, or its error raised
    }


class ServiceError(errors.ToolsiftError):
    """An error the service returned whose type this client does not know."""


def error_from(response: httpx.Response) -> errors.ToolsiftError:
    """The toolsift error a non-2xx response carries, as its own class (``status`` set)."""
    try:
        body = response.json()["error"]
        kind, message = str(body["type"]), str(body["message"])
    except (ValueError, KeyError, TypeError):
        kind, message = "ServiceError", f"HTTP {response.status_code}: {response.text[:500]}"
    found = getattr(errors, kind, None)
    cls = found if isinstance(found, type) and issubclass(found, errors.ToolsiftError) else ServiceError
    error = cls.__new__(cls)  # the message is already written: skip the class's own formatting
    Exception.__init__(error, message)
    error.status = response.status_code  # type: ignore[attr-defined]
    return error


def route_request(query: str, **options: Any) -> dict[str, Any]:
    """The ``POST /route`` body: ``query`` and the options that are set. With a session, a fresh
    ``turn_key`` unless one is given: the body is built once per call, so a retry sends the same
    key and gets the same answer instead of a second turn."""
    body = {"query": query, **{key: value for key, value in options.items() if value is not None}}
    if body.get("session_id") and not body.get("turn_key"):
        body["turn_key"] = uuid.uuid4().hex
    return body


def deferred_params(format: str, rules: Mapping[str, Any]) -> dict[str, Any]:
    """The query string of ``GET /deferred``: the format and the rules that are set."""
    return {"format": format, **{key: value for key, value in rules.items() if value is not None}}


def turn_key_of(call_id: Any) -> str:
    """The turn key for answering one search call of the model: its id when it fits, so the same
    call answered twice is one turn."""
    text = str(call_id or "")
    return text if TURN_KEY.fullmatch(text) else uuid.uuid4().hex


def call_request(tool: str, arguments: Mapping[str, Any] | None, session_id: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"tool": tool, "arguments": dict(arguments) if arguments is not None else None}
    return body | ({"session_id": session_id} if session_id else {})


def feedback_request(query: str, tool: str, session_id: str | None) -> dict[str, Any]:
    return {"query": query, "tool": tool, **({"session_id": session_id} if session_id else {})}


def search_arguments(arguments: Any) -> dict[str, Any]:
    """The search tool's arguments (a dict, or the JSON string some SDK objects hold)."""
    if isinstance(arguments, str):
        import orjson

        arguments = orjson.loads(arguments or "{}")
    if not isinstance(arguments, Mapping) or not isinstance(arguments.get("query"), str):
        raise errors.InvalidQuery("query", f"the model's search call carries no query: {arguments!r}")
    return dict(arguments)


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def _search_options(
    arguments: Mapping[str, Any], k: int, session_id: str | None, rules: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The model's own options (k, tags), within the operator's ``rules`` (``tags``, ``access``,
    ``pinned``, as ``POST /route`` takes them): the model may narrow a search, never widen it.
    With pinned tools the model's tags are left out (a pinned tool must pass the request's rules,
    and the operator's pin wins)."""
    rules = rules or {}
    asked = None if rules.get("pinned") else arguments.get("tags") or None
    return {
        "k": int(arguments.get("k") or k),
        "tags": _merged_tags(asked, rules.get("tags")),
        "session_id": session_id,
        "access": rules.get("access"),
        "pinned": rules.get("pinned"),
    }


def _merged_tags(asked: Any, operator: Any) -> Any:
    """The operator's tag rules, with the model's tags as ``any`` when the operator set none."""
    if operator is None:
        return asked
    merged = {"any": list(operator)} if isinstance(operator, list | tuple) else dict(operator)
    if asked and not merged.get("any"):
        merged["any"] = list(asked) if isinstance(asked, list | tuple) else asked
    return merged


class Client:
    """A blocking client. ``api_key``: a tenant key (sent as ``X-API-Key``)."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout, transport=transport)
        self.retries = retries

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _request(self, method: str, path: str, *, once: bool = False, **kwargs: Any) -> httpx.Response:
        from tenacity import Retrying

        retrying = Retrying(**retry_policy(self.retries, once=once))
        response: httpx.Response = retrying(self._http.request, method, path, **kwargs)
        if response.status_code >= 400:
            raise error_from(response)
        return response

    def route(self, query: str, **options: Any) -> RouteResponse:
        """``POST /route``: options as its body takes them (k, tags, access, pinned, format,
        delivery, session_id, call_id, min_score, ...)."""
        response = self._request("POST", "/route", json=route_request(query, **options))
        return RouteResponse.model_validate(response.json())

    def deferred(self, format: DeferredFormat, **rules: Any) -> DeferredTools:
        """``GET /deferred``; ``rules``: ``tag``, ``exclude_tag`` (lists), ``access``, and
        ``namespaces=True`` (OpenAI: each group of tools as one namespace)."""
        params = deferred_params(format, rules)
        return DeferredTools.model_validate(self._request("GET", "/deferred", params=params).json())

    def call(
        self, tool: str, arguments: Mapping[str, Any] | None = None, *, session_id: str | None = None
    ) -> CallResult:
        """``POST /call`` (a service started with ``--mcp-servers``): run ``tool`` on the MCP server
        that owns it. A refused or failed call is a result with ``is_error`` whose ``text`` says
        why, as a model should read it. Never sent twice: only a refused connection is retried."""
        response = self._request("POST", "/call", json=call_request(tool, arguments, session_id), once=True)
        return CallResult.model_validate(response.json())

    def feedback(self, query: str, tool: str, *, session_id: str | None = None) -> FeedbackAccepted:
        """``POST /feedback``: ``tool`` is what the model called for ``query``; later routes learn
        from it. Safe to retry: the same request for the same tool is kept once."""
        response = self._request("POST", "/feedback", json=feedback_request(query, tool, session_id))
        return FeedbackAccepted.model_validate(response.json())

    def tools(
        self,
        *,
        tag: Iterable[str] = (),
        group: Iterable[str] = (),
        format: str = "toolsift",
        offset: int = 0,
        limit: int = 100,
    ) -> ToolPage:
        params = {"tag": list(tag), "group": list(group), "format": format, "offset": offset, "limit": limit}
        return ToolPage.model_validate(self._request("GET", "/tools", params=params).json())

    def health(self) -> dict[str, Any]:
        body: dict[str, Any] = self._request("GET", "/healthz").json()
        return body

    def anthropic_tool_result(
        self, tool_use: Any, *, k: int = 5, session_id: str | None = None, **rules: Any
    ) -> dict[str, Any]:
        """The ``tool_result`` block answering the model's ``toolsift_search`` call (a ``tool_use``
        block, SDK object or dict): ``tool_reference`` blocks for the tools found. ``rules``: the
        operator's ``tags``, ``access`` and ``pinned``, held whatever the model asks."""
        return _tool_result(tool_use, self.route(**anthropic_search(tool_use, k, session_id, rules)))

    def openai_tool_search_output(
        self, call: Any, *, k: int = 5, session_id: str | None = None, **rules: Any
    ) -> dict[str, Any]:
        """The ``tool_search_output`` item answering the model's ``tool_search_call`` item."""
        return _output_item(self.route(**openai_search(call, k, session_id, rules)))

    def gemini_function_result(
        self, call: Any, *, k: int = 5, session_id: str | None = None, **rules: Any
    ) -> dict[str, Any]:
        """The ``function_result`` step answering the model's call of the search tool (a Gemini
        Interactions ``function_call`` step, SDK object or dict): the functions found."""
        return _output_item(self.route(**gemini_search(call, k, session_id, rules)))

    def gemini_call_result(self, call: Any, *, session_id: str | None = None) -> dict[str, Any]:
        """The ``function_result`` step answering the model's call of a tool it found (a
        ``function_call`` step), the call run through ``POST /call``."""
        try:
            name, arguments = _called(call, "arguments")
        except ValueError as error:
            return _gemini_result(call, _not_sent(error))
        return _gemini_result(call, self.call(name, arguments, session_id=session_id))

    def anthropic_call_result(self, tool_use: Any, *, session_id: str | None = None) -> dict[str, Any]:
        """The ``tool_result`` block answering the model's call of a tool it found (a ``tool_use``
        block): the call run through ``POST /call`` on the server that owns the tool."""
        name, arguments = _called(tool_use, "input")
        return _call_result(tool_use, self.call(name, arguments, session_id=session_id))

    def openai_call_output(self, call: Any, *, session_id: str | None = None) -> dict[str, Any]:
        """The ``function_call_output`` item answering the model's ``function_call`` item, the call
        run through ``POST /call``; arguments that are not a JSON object are answered as an error
        the model can read (and mend), never sent."""
        try:
            name, arguments = _called(call, "arguments")
        except ValueError as error:
            return _call_output(call, _not_sent(error))
        return _call_output(call, self.call(name, arguments, session_id=session_id))


def anthropic_search(
    tool_use: Any, k: int, session_id: str | None, rules: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``/route`` request answering an Anthropic ``tool_use`` of the search tool."""
    arguments = search_arguments(_field(tool_use, "input"))
    return {"query": arguments["query"], "delivery": "tool_reference", "format": "anthropic",
            "turn_key": turn_key_of(_field(tool_use, "id")), **_search_options(arguments, k, session_id, rules)}  # fmt: skip


def openai_search(call: Any, k: int, session_id: str | None, rules: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``/route`` request answering an OpenAI Responses ``tool_search_call`` item."""
    arguments = search_arguments(_field(call, "arguments"))
    call_id = _field(call, "call_id") or _field(call, "id")
    return {"query": arguments["query"], "delivery": "tool_search_output", "format": "responses",
            "call_id": call_id, "turn_key": turn_key_of(call_id), **_search_options(arguments, k, session_id, rules)}  # fmt: skip


def gemini_search(call: Any, k: int, session_id: str | None, rules: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``/route`` request answering a Gemini Interactions ``function_call`` of the search tool."""
    arguments = search_arguments(_field(call, "arguments"))
    call_id = _field(call, "id")
    return {"query": arguments["query"], "delivery": "function_result", "format": "gemini",
            "call_id": call_id, "turn_key": turn_key_of(call_id), **_search_options(arguments, k, session_id, rules)}  # fmt: skip


def is_search_call(call: Any) -> bool:
    """Whether a model's call (an Anthropic ``tool_use``, a Gemini ``function_call``) is of the search tool."""
    return bool(_field(call, "name") == SEARCH_TOOL_NAME)


def _called(call: Any, field: str) -> tuple[str, dict[str, Any]]:
    """The tool a model's call names and its arguments (a dict, or the JSON text OpenAI sends);
    ``ValueError`` when the arguments are not a JSON object."""
    arguments = _field(call, field)
    if isinstance(arguments, str):
        import orjson

        try:
            arguments = orjson.loads(arguments or "{}")
        except orjson.JSONDecodeError as error:
            raise ValueError(f"the arguments are not JSON ({error}); send a JSON object") from None
    if not isinstance(arguments, Mapping):
        raise ValueError(f"the arguments must be a JSON object, got {type(arguments).__name__}")
    return str(_field(call, "name")), dict(arguments)


def _not_sent(error: ValueError) -> CallResult:
    return CallResult.model_validate({"content": [{"type": "text", "text": str(error)}], "isError": True})


def _call_result(tool_use: Any, result: CallResult) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": _field(tool_use, "id"), "content": result.anthropic_content()}
    return block | ({"is_error": True} if result.is_error else {})


def _call_output(call: Any, result: CallResult) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": _field(call, "call_id"), "output": result.openai_output()}


def _gemini_result(call: Any, result: CallResult) -> dict[str, Any]:
    step = {"type": "function_result", "name": _field(call, "name"), "call_id": _field(call, "id"),
            "result": result.gemini_result()}  # fmt: skip
    return step | ({"is_error": True} if result.is_error else {})


def _tool_result(tool_use: Any, found: RouteResponse) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": _field(tool_use, "id"), "content": found.content or []}


def _output_item(found: RouteResponse) -> dict[str, Any]:
    if found.output_item is None:  # the service always sends it for this delivery
        raise ServiceError(f"the service answered a {found.delivery} request without output_item")
    return found.output_item


class AsyncClient:
    """``Client``'s methods, awaitable."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self._http = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout, transport=transport)
        self.retries = retries

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _request(self, method: str, path: str, *, once: bool = False, **kwargs: Any) -> httpx.Response:
        from tenacity import AsyncRetrying

        retrying = AsyncRetrying(**retry_policy(self.retries, once=once))
        response: httpx.Response = await retrying(self._http.request, method, path, **kwargs)
        if response.status_code >= 400:
            raise error_from(response)
        return response

    async def route(self, query: str, **options: Any) -> RouteResponse:
        response = await self._request("POST", "/route", json=route_request(query, **options))
        return RouteResponse.model_validate(response.json())

    async def deferred(self, format: DeferredFormat, **rules: Any) -> DeferredTools:
        response = await self._request("GET", "/deferred", params=deferred_params(format, rules))
        return DeferredTools.model_validate(response.json())

    async def call(
        self, tool: str, arguments: Mapping[str, Any] | None = None, *, session_id: str | None = None
    ) -> CallResult:
        response = await self._request("POST", "/call", json=call_request(tool, arguments, session_id), once=True)
        return CallResult.model_validate(response.json())

    async def feedback(self, query: str, tool: str, *, session_id: str | None = None) -> FeedbackAccepted:
        response = await self._request("POST", "/feedback", json=feedback_request(query, tool, session_id))
        return FeedbackAccepted.model_validate(response.json())

    async def tools(
        self,
        *,
        tag: Iterable[str] = (),
        group: Iterable[str] = (),
        format: str = "toolsift",
        offset: int = 0,
        limit: int = 100,
    ) -> ToolPage:
        params = {"tag": list(tag), "group": list(group), "format": format, "offset": offset, "limit": limit}
        return ToolPage.model_validate((await self._request("GET", "/tools", params=params)).json())

    async def health(self) -> dict[str, Any]:
        body: dict[str, Any] = (await self._request("GET", "/healthz")).json()
        return body

    async def anthropic_tool_result(
        self, tool_use: Any, *, k: int = 5, session_id: str | None = None, **rules: Any
    ) -> dict[str, Any]:
        return _tool_result(tool_use, await self.route(**anthropic_search(tool_use, k, session_id, rules)))

    async def openai_tool_search_output(
        self, call: Any, *, k: int = 5, session_id: str | None = None, **rules: Any
    ) -> dict[str, Any]:
        return _output_item(await self.route(**openai_search(call, k, session_id, rules)))

    async def anthropic_call_result(self, tool_use: Any, *, session_id: str | None = None) -> dict[str, Any]:
        name, arguments = _called(tool_use, "input")
        return _call_result(tool_use, await self.call(name, arguments, session_id=session_id))

    async def openai_call_output(self, call: Any, *, session_id: str | None = None) -> dict[str, Any]:
        try:
            name, arguments = _called(call, "arguments")
        except ValueError as error:
            return _call_output(call, _not_sent(error))
        return _call_output(call, await self.call(name, arguments, session_id=session_id))

    async def gemini_function_result(
        self, call: Any, *, k: int = 5, session_id: str | None = None, **rules: Any
    ) -> dict[str, Any]:
        return _output_item(await self.route(**gemini_search(call, k, session_id, rules)))

    async def gemini_call_result(self, call: Any, *, session_id: str | None = None) -> dict[str, Any]:
        try:
            name, arguments = _called(call, "arguments")
        except ValueError as error:
            return _gemini_result(call, _not_sent(error))
        return _gemini_result(call, await self.call(name, arguments, session_id=session_id))


def langgraph_bigtool_retrievers(
    client: Client, async_client: AsyncClient | None = None, *, k: int = 2, **options: Any
) -> tuple[Callable[[str], list[str]], Callable[[str], Awaitable[list[str]]]]:
    """toolsift as langgraph-bigtool's retrieval, for ``create_agent(llm, tool_registry,
    retrieve_tools_function=..., retrieve_tools_coroutine=...)``: the ids are the catalog's tool
    names, so the registry maps each catalog name to its tool. ``options`` go to every route
    (tags, access, session_id...)."""

    def retrieve_tools(query: str) -> list[str]:
        """Retrieve a tool to use, given a search query."""
        return [match.name for match in client.route(query, k=k, **options).matches]

    async def aretrieve_tools(query: str) -> list[str]:
        """Retrieve a tool to use, given a search query."""
        if async_client is None:
            return await asyncio.to_thread(retrieve_tools, query)
        return [match.name for match in (await async_client.route(query, k=k, **options)).matches]

    return retrieve_tools, aretrieve_tools


__all__ = [
    "SEARCH_TOOL_NAME",
    "AsyncClient",
    "Client",
    "DeferredTools",
    "ServiceError",
    "ToolPage",
    "langgraph_bigtool_retrievers",
]
