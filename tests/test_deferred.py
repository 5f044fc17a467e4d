"""Deferred loading: payloads checked against the anthropic and openai SDKs' own types, the constant
tools array (GET /deferred), search answers (tool_reference, tool_search_output) with sessions and
rules, the Python client against a real `toolsift serve`, and both agent loops end to end against
a local stand-in of each provider that answers with the SDK's own response types."""

from __future__ import annotations

import collections.abc
import json
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import anthropic
import httpx
import httpx2
import openai
import pytest
from anthropic.types import Message, TextBlock, ToolParam, ToolReferenceBlockParam, ToolUseBlock, Usage
from anthropic.types.tool_result_block_param import Content as ToolResultContent
from fastapi.testclient import TestClient
from google import genai
from google.genai import interactions
from google.genai import types as genai_types
from openai.types.responses import (
    FunctionToolParam,
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseToolSearchCall,
    ToolSearchToolParam,
)
from openai.types.responses import ToolParam as ResponsesToolParam
from openai.types.responses.response_tool_search_output_item_param_param import ResponseToolSearchOutputItemParamParam
from pydantic import TypeAdapter, ValidationError
from typing_extensions import is_typeddict

from toolsift import Router
from toolsift.catalog import parse_catalog
from toolsift.client import SEARCH_TOOL_NAME, AsyncClient, Client, is_search_call
from toolsift.errors import InvalidQuery, UnknownTag
from toolsift.service import create_app
from toolsift.settings import Settings
from toolsift.tenants import parse_tenants

from conftest import free_port, wait_until_serving

ADMIN = {"Authorization": "Bearer admin-token-0123456789"}
WEATHER_TOOLS = {"get_weather", "get_forecast", "get_weather_forecast"}


def conforms(kind: Any, payload: Any) -> bool:
    """``payload`` is a valid ``kind``, an SDK type: a TypedDict has every required key and no
    unknown one, and each value conforms to its field's type; lists are checked item by item
    (pydantic validates ``Iterable`` fields lazily, so they are walked here); anything else is
    validated by pydantic and must come back unchanged."""
    if is_typeddict(kind):
        hints = get_type_hints(kind)
        return (
            isinstance(payload, dict)
            and set(payload) <= set(hints)
            and set(kind.__required_keys__) <= set(payload)
            and all(conforms(hints[key], value) for key, value in payload.items())
        )
    if get_origin(kind) in (Union, UnionType):
        return any(conforms(option, payload) for option in get_args(kind))
    if get_origin(kind) in (Iterable, list, collections.abc.Sequence) and isinstance(payload, list):
        (item,) = get_args(kind) or (Any,)
        return all(conforms(item, value) for value in payload)
    try:
        return bool(TypeAdapter(kind).validate_python(payload) == payload)
    except ValidationError:
        return False


def gemini_conforms(kind: Any, payload: Any) -> bool:
    """``payload`` is a valid ``kind`` of google-genai's Interactions types (pydantic models): no
    part of it read as an unknown variant, and it dumps back unchanged. (The SDK's ``...Param``
    TypedDicts mark every key required on Python 3.11, so they cannot judge a payload.)"""
    try:
        parsed = TypeAdapter(kind).validate_python(payload)
    except ValidationError:
        return False
    dumped = TypeAdapter(kind).dump_python(parsed, mode="json", by_alias=True, exclude_none=True)
    return dumped == payload and not _has_unknown(parsed)


def _has_unknown(value: Any) -> bool:
    if type(value).__name__.startswith("Unknown"):
        return True
    if isinstance(value, list):
        return any(_has_unknown(item) for item in value)
    fields: dict[str, Any] = getattr(type(value), "model_fields", None) or {}
    return any(_has_unknown(getattr(value, name)) for name in fields)


@pytest.fixture
def client(tiny_router: Router) -> Iterator[TestClient]:
    settings = Settings(admin_token=ADMIN["Authorization"][7:])
    with TestClient(create_app(tiny_router, settings=settings)) as test_client:
        yield test_client


def test_the_deferred_tools_are_sdk_tool_params(client: TestClient, tiny_router: Router) -> None:
    claude = client.get("/deferred", params={"format": "anthropic"}).json()
    assert claude["count"] == len(tiny_router.catalog) and claude["tools"][0]["name"] == SEARCH_TOOL_NAME
    assert all(conforms(ToolParam, tool) for tool in claude["tools"])
    assert (
        all(tool["defer_loading"] is True for tool in claude["tools"][1:]) and "defer_loading" not in claude["tools"][0]
    )
    names = [tool["name"] for tool in claude["tools"][1:]]
    assert names == sorted(names)

    gpt = client.get("/deferred", params={"format": "openai"}).json()
    assert conforms(ToolSearchToolParam, gpt["tools"][0]) and gpt["tools"][0]["execution"] == "client"
    assert all(conforms(FunctionToolParam, tool) and tool["defer_loading"] for tool in gpt["tools"][1:])
    assert conforms(list[ResponsesToolParam], gpt["tools"])


def test_the_gemini_deferred_tools_are_sdk_tools(client: TestClient, tiny_router: Router) -> None:
    body = client.get("/deferred", params={"format": "gemini"}).json()
    search, *deferred = body["tools"]
    assert body["count"] == len(tiny_router.catalog) == len(deferred)
    assert gemini_conforms(interactions.ToolSearch, search)
    assert search["execution"] == "client" and search["name"] == SEARCH_TOOL_NAME  # the function_result's name
    assert all(gemini_conforms(interactions.Function, tool) and tool["defer_loading"] is True for tool in deferred)
    assert gemini_conforms(list[interactions.Tool], body["tools"])
    assert [tool["name"] for tool in deferred] == sorted(tool.name for tool in tiny_router.catalog)
    again = client.get("/deferred", params={"format": "gemini"})
    assert again.json() == body and again.headers["etag"] == f'"{body["fingerprint"]}"'
    subset = client.post("/route", json={"query": "weather in Paris", "k": 2, "format": "gemini"}).json()
    assert subset["tools"] and all(gemini_conforms(interactions.Function, tool) for tool in subset["tools"])
    refused = client.get("/deferred", params={"format": "gemini", "namespaces": "true"})
    assert refused.status_code == 400 and "OpenAI" in refused.json()["error"]["message"]


def test_a_function_result_is_an_sdk_step_and_a_session_sends_each_function_once(client: TestClient) -> None:
    request = {"query": "weather forecast", "k": 2, "delivery": "function_result", "format": "gemini"}
    missing = client.post("/route", json=request)
    assert missing.status_code == 400 and "call_id" in missing.json()["error"]["message"]
    body = client.post("/route", json={**request, "call_id": "call_7", "session_id": "g1"}).json()
    step = body["output_item"]
    assert gemini_conforms(interactions.Step, step)
    assert step["type"] == "function_result" and step["name"] == SEARCH_TOOL_NAME and step["call_id"] == "call_7"
    assert isinstance(TypeAdapter(interactions.Step).validate_python(step), interactions.FunctionResultStep)
    assert [f["name"] for f in step["result"]] == [m["name"] for m in body["matches"]]
    parsed = interactions.FunctionResultStep.model_validate(step).result
    assert isinstance(parsed, list) and all(isinstance(f, interactions.Function) for f in parsed)
    again = client.post("/route", json={**request, "call_id": "call_8", "session_id": "g1"}).json()
    assert again["output_item"]["result"] == []  # the model holds them already
    nothing = client.post("/route", json={**request, "query": "zzz qqq", "call_id": "c9", "min_confidence": 1.0}).json()
    assert nothing["abstained"] and gemini_conforms(interactions.Step, nothing["output_item"])
    assert (
        nothing["output_item"]["result"][0]["type"] == "text"
        and "No tool found" in nothing["output_item"]["result"][0]["text"]
    )


def test_deferred_is_byte_stable_with_an_etag_that_follows_the_visible_catalog(client: TestClient) -> None:
    first = client.get("/deferred", params={"format": "anthropic"})
    again = client.get("/deferred", params={"format": "anthropic"})
    assert first.content == again.content and first.headers["etag"] == f'"{first.json()["fingerprint"]}"'
    unchanged = client.get(
        "/deferred", params={"format": "anthropic"}, headers={"If-None-Match": first.headers["etag"]}
    )
    assert unchanged.status_code == 304 and unchanged.content == b""
    for header in (f'"other", W/{first.headers["etag"]}', "*"):  # a weak match, or any: 304 too (RFC 9110)
        assert (
            client.get("/deferred", params={"format": "anthropic"}, headers={"If-None-Match": header}).status_code
            == 304
        )
    assert (
        client.get("/deferred", params={"format": "anthropic"}, headers={"If-None-Match": '"other"'}).status_code == 200
    )
    tool = {"name": "send_fax", "description": "Send a fax to a phone number."}
    assert client.post("/admin/tools", json={"tools": [tool]}, headers=ADMIN).status_code == 200
    changed = client.get("/deferred", params={"format": "anthropic"}, headers={"If-None-Match": first.headers["etag"]})
    assert changed.status_code == 200 and changed.headers["etag"] != first.headers["etag"]
    assert client.get("/deferred", params={"format": "cohere"}).status_code == 422


def test_each_tenant_gets_its_own_deferred_list(tiny_router: Router) -> None:
    tenants = parse_tenants(
        {"tenants": {"wx": {"key": "wx-key-0123456789abcdef", "tags": ["weather"]}, "mail": {"key": "mail-key-0123456789ab", "tags": ["email"]}}}
    )  # fmt: skip
    with TestClient(create_app(tiny_router, settings=Settings(), tenants=tenants)) as client:
        weather = client.get(
            "/deferred", params={"format": "anthropic"}, headers={"X-API-Key": "wx-key-0123456789abcdef"}
        )
        mail = client.get("/deferred", params={"format": "anthropic"}, headers={"X-API-Key": "mail-key-0123456789ab"})
        assert [t["name"] for t in weather.json()["tools"][1:]] == ["get_forecast", "get_weather"]
        assert [t["name"] for t in mail.json()["tools"][1:]] == ["search_emails", "send_email"]
        assert weather.headers["etag"] != mail.headers["etag"]
        assert client.get("/deferred", params={"format": "anthropic"}).status_code == 401
        gemini = client.get("/deferred", params={"format": "gemini"}, headers={"X-API-Key": "wx-key-0123456789abcdef"})
        assert [t["name"] for t in gemini.json()["tools"][1:]] == ["get_forecast", "get_weather"]
        found = client.post(
            "/route", headers={"X-API-Key": "mail-key-0123456789ab"},
            json={"query": "weather", "k": 8, "delivery": "function_result", "format": "gemini", "call_id": "c1"},
        ).json()  # fmt: skip
        assert {f["name"] for f in found["output_item"]["result"]} <= {"search_emails", "send_email"}


def test_tool_reference_answers_are_sdk_tool_results_and_a_session_references_once(client: TestClient) -> None:
    request = {
        "query": "weather forecast",
        "k": 2,
        "delivery": "tool_reference",
        "format": "anthropic",
        "session_id": "s1",
    }
    first = client.post("/route", json=request).json()
    referenced = [block["tool_name"] for block in first["content"]]
    assert referenced and set(referenced) == {m["name"] for m in first["matches"]}
    # each block is the SDK's ToolReferenceBlockParam, which a tool_result's content may hold
    assert all(conforms(ToolReferenceBlockParam, block) for block in first["content"])
    assert ToolReferenceBlockParam in get_args(ToolResultContent)
    again = client.post("/route", json=request).json()
    assert again["content"] == []  # the model holds them already
    repeated = client.post("/route", json={**request, "repeat_references": True}).json()
    assert [block["tool_name"] for block in repeated["content"]] == referenced
    other = client.post("/route", json={**request, "query": "send an email"}).json()
    assert {b["tool_name"] for b in other["content"]} == {m["name"] for m in other["matches"]} - set(referenced)


def test_tool_search_output_is_an_sdk_item_and_needs_the_call_id(client: TestClient) -> None:
    request = {"query": "weather forecast", "k": 2, "delivery": "tool_search_output", "format": "responses"}
    missing = client.post("/route", json=request)
    assert missing.status_code == 400 and "call_id" in missing.json()["error"]["message"]
    body = client.post("/route", json={**request, "call_id": "call_7"}).json()
    item = body["output_item"]
    assert conforms(ResponseToolSearchOutputItemParamParam, item)
    assert item["call_id"] == "call_7" and item["execution"] == "client" and item["status"] == "completed"
    assert [tool["name"] for tool in item["tools"]] == sorted(m["name"] for m in body["matches"])
    assert all(conforms(FunctionToolParam, tool) for tool in item["tools"])


def test_deferred_answers_obey_the_requests_rules(client: TestClient) -> None:
    base = {"query": "delete the file and check the weather", "k": 8, "session_id": "rules"}
    everything = client.post("/route", json={**base, "delivery": "tool_reference"}).json()
    assert "delete_file" in {block["tool_name"] for block in everything["content"]}
    safe = client.post(
        "/route", json={**base, "delivery": "tool_search_output", "call_id": "c1", "tags": {"exclude": ["admin"]}}
    ).json()
    assert "delete_file" not in {t["name"] for t in safe["output_item"]["tools"]} | {t["name"] for t in safe["tools"]}
    assert safe["session"]["withheld"] == ["delete_file"]
    gemini = client.post(
        "/route", json={**base, "session_id": "rules-g", "delivery": "function_result", "format": "gemini",
                        "call_id": "c2", "access": "non_destructive"},
    ).json()  # fmt: skip
    assert gemini["output_item"]["result"] == []  # no tiny tool is annotated non-destructive
    after = client.post(
        "/route", json={**base, "session_id": "rules-g", "delivery": "function_result", "format": "gemini",
                        "call_id": "c3", "tags": {"exclude": ["admin"]}},
    ).json()  # fmt: skip
    assert "delete_file" not in {f["name"] for f in after["output_item"]["result"]} and after["output_item"]["result"]
    pinned = client.post(
        "/route", json={"query": "x", "delivery": "tool_reference", "pinned": ["delete_file"], "access": "read_only"}
    )
    assert pinned.status_code == 400 and "'delete_file' is pinned" in pinned.json()["error"]["message"]


def test_the_cli_prints_what_get_deferred_returns(client: TestClient, tiny_router: Router, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from toolsift.cli import main

    folder = tiny_router.save(tmp_path / "index")
    printed = CliRunner().invoke(main, ["deferred", "--index", str(folder), "--format", "openai"])
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output) == client.get("/deferred", params={"format": "openai"}).json()


# -- the client against a real server, and both agent loops ------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from toolsift.embeddings import HashingEmbedder

    from conftest import TINY_TOOLS

    tools = [
        *TINY_TOOLS,
        {"name": "get_weather_forecast", "description": "Weather forecast: rain, sun, wind for a city."},
    ]
    folder = Router.build(parse_catalog(tools, source="tiny"), HashingEmbedder(64)).save(
        tmp_path_factory.mktemp("served") / "index"
    )
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "toolsift", "serve", "--index", str(folder), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.mark.slow
def test_the_client_routes_lists_and_maps_errors(served: str) -> None:
    with Client(served) as toolsift:
        assert toolsift.health()["status"] == "ok" and toolsift.tools(tag=["weather"]).total == 2
        result = toolsift.route("weather forecast for Paris", k=2, format="anthropic")
        assert len(result.matches) == 2 and all("input_schema" in tool for tool in result.tools)
        with pytest.raises(UnknownTag, match="Did you mean 'weather'"):
            toolsift.route("x", tags=["wether"])
        with pytest.raises(InvalidQuery) as caught:
            toolsift.route("weather", delivery="tool_search_output")
        assert getattr(caught.value, "status", None) == 400
    with Client(f"http://127.0.0.1:{free_port()}", retries=1) as nobody, pytest.raises(httpx.ConnectError):
        nobody.health()


@pytest.mark.slow
def test_the_async_client_answers_like_the_blocking_one(served: str) -> None:
    import anyio

    async def scenario() -> None:
        async with AsyncClient(served) as toolsift:
            deferred = await toolsift.deferred("openai")
            with Client(served) as blocking:
                assert deferred.tools == blocking.deferred("openai").tools
            call = ResponseToolSearchCall(
                id="ts_1", call_id="call_1", arguments={"query": "rain in Lisbon"}, execution="client",
                status="completed", type="tool_search_call",
            )  # fmt: skip
            item = await toolsift.openai_tool_search_output(call)
            assert item["call_id"] == "call_1" and conforms(ResponseToolSearchOutputItemParamParam, item)

    anyio.run(scenario)


Pick = Callable[[list[str]], tuple[str, dict[str, Any]]]


def weather_pick(found: list[str]) -> tuple[str, dict[str, Any]]:
    return found[0], {"city": "Lisbon"}


def echo_pick(found: list[str]) -> tuple[str, dict[str, Any]]:
    """The model picks server-everything's echo if the search found it, else the first tool."""
    return ("echo" if "echo" in found else found[0]), {"message": "rain in Lisbon"}


def anthropic_stand_in(seen_tools: list[Any], pick: Pick = weather_pick) -> httpx2.MockTransport:
    """The Messages API, as far as the loop needs it: search first, then call what was referenced."""

    def reply(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        seen_tools.append(body["tools"])
        last = body["messages"][-1]["content"]
        results = [block for block in last if isinstance(block, dict) and block.get("type") == "tool_result"]
        if not results:
            blocks: list[Any] = [
                ToolUseBlock(id="toolu_1", type="tool_use", name=SEARCH_TOOL_NAME, input={"query": last})
            ]
        elif any(isinstance(b, dict) and b.get("type") == "tool_reference" for b in results[0]["content"]):
            name, arguments = pick([b["tool_name"] for b in results[0]["content"]])
            blocks = [ToolUseBlock(id="toolu_2", type="tool_use", name=name, input=arguments)]
        else:
            blocks = [TextBlock(type="text", text="Rain on Saturday.")]
        stop: Literal["tool_use", "end_turn"] = "tool_use" if isinstance(blocks[0], ToolUseBlock) else "end_turn"
        message = Message(
            id="msg", type="message", role="assistant", model="stand-in", content=blocks, stop_reason=stop,
            stop_sequence=None, usage=Usage(input_tokens=10, output_tokens=5),
        )  # fmt: skip
        return httpx2.Response(200, json=message.model_dump(mode="json"))

    return httpx2.MockTransport(reply)


@pytest.mark.slow
def test_the_anthropic_agent_loop_runs_end_to_end(served: str) -> None:
    seen_tools: list[Any] = []
    claude = anthropic.Anthropic(
        api_key="test", base_url="http://stand-in", http_client=httpx2.Client(transport=anthropic_stand_in(seen_tools))
    )
    called: list[str] = []
    # -- the loop, with a tool runner of the test's own --
    toolsift = Client(served)
    tools = toolsift.deferred("anthropic").tools  # the same on every turn
    messages: list[Any] = [{"role": "user", "content": "Will it rain in Lisbon this weekend?"}]
    while True:
        reply = claude.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=tools, messages=messages)  # type: ignore[arg-type]
        messages.append({"role": "assistant", "content": [block.model_dump() for block in reply.content]})
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            break
        results = [
            toolsift.anthropic_tool_result(c) if c.name == SEARCH_TOOL_NAME else run_tool(c, called) for c in calls
        ]
        messages.append({"role": "user", "content": results})
    # --
    toolsift.close()
    assert len(seen_tools) == 3 and all(tools == seen_tools[0] for tools in seen_tools)  # the prefix never changed
    assert called and called[0] in WEATHER_TOOLS and reply.content[0].type == "text"


def run_tool(call: Any, called: list[str]) -> dict[str, Any]:
    called.append(call.name)
    return {"type": "tool_result", "tool_use_id": call.id, "content": "rain on Saturday"}


def openai_stand_in(seen_tools: list[Any], pick: Pick = weather_pick) -> httpx2.MockTransport:
    """The Responses API: a client tool search first, then a call of the first tool found."""

    def reply(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        seen_tools.append(body["tools"])
        items = body["input"]
        outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "tool_search_output"]
        answered = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        output: list[Any]
        if answered:
            text = ResponseOutputText(type="output_text", text="Rain on Saturday.", annotations=[])
            output = [
                ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
            ]
        elif outputs:
            name, arguments = pick([tool["name"] for tool in outputs[-1]["tools"]])
            output = [
                ResponseFunctionToolCall(
                    type="function_call", call_id="fc_1", name=name, arguments=json.dumps(arguments)
                )
            ]
        else:
            query = items[0]["content"]
            output = [
                ResponseToolSearchCall(
                    id="ts_1", call_id="call_1", arguments={"query": query}, execution="client", status="completed",
                    type="tool_search_call",
                )
            ]  # fmt: skip
        response = Response(
            id="resp", object="response", created_at=0, model="stand-in", output=output, parallel_tool_calls=True,
            tool_choice="auto", tools=[], status="completed",
        )  # fmt: skip
        return httpx2.Response(200, json=response.model_dump(mode="json"))

    return httpx2.MockTransport(reply)


@pytest.mark.slow
def test_the_openai_agent_loop_runs_end_to_end(served: str) -> None:
    seen_tools: list[Any] = []
    gpt = openai.OpenAI(
        api_key="test", base_url="http://stand-in/v1", http_client=httpx2.Client(transport=openai_stand_in(seen_tools))
    )
    called: list[str] = []
    # -- the loop, with a tool runner of the test's own --
    toolsift = Client(served)
    tools = toolsift.deferred("openai").tools  # the same on every turn
    items: list[Any] = [{"role": "user", "content": "Will it rain in Lisbon this weekend?"}]
    while True:
        response = gpt.responses.create(model="gpt-5.1", tools=tools, input=items)  # type: ignore[arg-type]
        items += [item.model_dump(exclude_none=True) for item in response.output]
        searches = [item for item in response.output if item.type == "tool_search_call"]
        calls = [item for item in response.output if item.type == "function_call"]
        if not searches and not calls:
            break
        items += [toolsift.openai_tool_search_output(search) for search in searches]
        items += [{"type": "function_call_output", "call_id": c.call_id, "output": note(c.name, called)} for c in calls]
    # --
    toolsift.close()
    assert len(seen_tools) == 3 and all(tools == seen_tools[0] for tools in seen_tools)
    assert called and called[0] in WEATHER_TOOLS and response.output_text == "Rain on Saturday."


def gemini_stand_in(seen_tools: list[Any], pick: Pick = weather_pick) -> httpx2.MockTransport:
    """Gemini's Interactions API: a call of the client-side search tool first, then a call of the
    first function found, then text; each answer an SDK ``Interaction``."""

    def reply(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        seen_tools.append(body["tools"])
        steps = TypeAdapter(list[interactions.Step]).validate_python(body["input"])  # as the API would read them
        results = [step for step in steps if isinstance(step, interactions.FunctionResultStep)]
        answer: interactions.Step
        if not results:
            text = steps[0].content[0].text  # type: ignore[union-attr, index]
            answer = interactions.FunctionCallStep(id="call_1", name=SEARCH_TOOL_NAME, arguments={"query": text})
        elif results[-1].name == SEARCH_TOOL_NAME:
            found = [item.name for item in results[-1].result if isinstance(item, interactions.Function)]
            name, arguments = pick([str(name) for name in found])
            answer = interactions.FunctionCallStep(id="call_2", name=name, arguments=arguments)
        else:
            answer = interactions.ModelOutputStep(content=[interactions.TextContent(text="Rain on Saturday.")])
        done = isinstance(answer, interactions.ModelOutputStep)
        interaction = interactions.Interaction(
            id="i_1", status="completed" if done else "requires_action", steps=[answer]
        )
        return httpx2.Response(200, json=interaction.model_dump(mode="json", by_alias=True, exclude_none=True))

    return httpx2.MockTransport(reply)


def gemini_client(transport: httpx2.MockTransport) -> genai.Client:
    options = genai_types.HttpOptions(base_url="http://stand-in", httpx_client=httpx2.Client(transport=transport))
    return genai.Client(api_key="test", http_options=options)


@pytest.mark.slow
def test_the_gemini_agent_loop_runs_end_to_end(served: str) -> None:
    seen_tools: list[Any] = []
    gemini = gemini_client(gemini_stand_in(seen_tools))
    toolsift = Client(served)
    tools = toolsift.deferred("gemini").tools  # the same on every turn
    steps: list[Any] = [{"type": "user_input", "content": [{"type": "text", "text": "Will it rain in Lisbon?"}]}]
    called: list[str] = []
    while True:
        interaction: Any = gemini.interactions.create(model="gemini-3-flash", tools=tools, input=steps)
        steps += [step.model_dump(mode="json", by_alias=True, exclude_none=True) for step in interaction.steps or []]
        calls = [step for step in interaction.steps or [] if step.type == "function_call"]
        if not calls:
            break
        steps += [
            toolsift.gemini_function_result(c) if is_search_call(c)
            else {"type": "function_result", "name": c.name, "call_id": c.id, "result": note(c.name, called)}
            for c in calls
        ]  # fmt: skip
    toolsift.close()
    assert len(seen_tools) == 3 and all(tools == seen_tools[0] for tools in seen_tools)
    assert called and called[0] in WEATHER_TOOLS and interaction.output_text in (None, "Rain on Saturday.")
    assert steps[-1]["content"][0]["text"] == "Rain on Saturday."


def note(name: str, called: list[str]) -> str:
    called.append(name)
    return "rain on Saturday"


@pytest.fixture(scope="module")
def gatewayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``toolsift serve --mcp-servers`` in front of server-everything (npm, ``make mcp-servers``)."""
    from gateway_kit import everything, write_servers

    folder = tmp_path_factory.mktemp("gatewayed")
    servers = write_servers(folder / "servers.json", {"everything": everything()})
    port = free_port()
    command = [sys.executable, "-m", "toolsift", "serve", "--mcp-servers", str(servers), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.mark.slow
@pytest.mark.model
def test_the_anthropic_loop_runs_the_chosen_tool_through_the_gateway(gatewayed: str) -> None:
    from anthropic.types import ToolResultBlockParam

    seen_tools: list[Any] = []
    transport = anthropic_stand_in(seen_tools, pick=echo_pick)
    claude = anthropic.Anthropic(
        api_key="test", base_url="http://stand-in", http_client=httpx2.Client(transport=transport)
    )
    toolsift = Client(gatewayed)
    # -- the loop as the README shows it --
    tools = toolsift.deferred("anthropic").tools  # the same on every turn
    messages: list[Any] = [{"role": "user", "content": "Echo 'rain in Lisbon' back to me"}]
    while True:
        reply = claude.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=tools, messages=messages)  # type: ignore[arg-type]
        messages.append({"role": "assistant", "content": [block.model_dump() for block in reply.content]})
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            break
        results = [
            toolsift.anthropic_tool_result(c) if c.name == SEARCH_TOOL_NAME else toolsift.anthropic_call_result(c)
            for c in calls
        ]
        messages.append({"role": "user", "content": results})
    # --
    toolsift.close()
    assert len(seen_tools) == 3 and all(tools == seen_tools[0] for tools in seen_tools)
    ran = messages[-2]["content"][0]  # the answer to the model's call of the tool it found
    assert conforms(ToolResultBlockParam, ran) and "is_error" not in ran
    assert ran["content"] == [{"type": "text", "text": "Echo: rain in Lisbon"}]  # server-everything's own answer


@pytest.mark.slow
@pytest.mark.model
def test_the_openai_loop_runs_the_chosen_tool_through_the_gateway(gatewayed: str) -> None:
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    seen_tools: list[Any] = []
    transport = openai_stand_in(seen_tools, pick=echo_pick)
    gpt = openai.OpenAI(api_key="test", base_url="http://stand-in/v1", http_client=httpx2.Client(transport=transport))
    toolsift = Client(gatewayed)
    # -- the loop as the README shows it --
    tools = toolsift.deferred("openai").tools  # the same on every turn
    items: list[Any] = [{"role": "user", "content": "Echo 'rain in Lisbon' back to me"}]
    while True:
        response = gpt.responses.create(model="gpt-5.1", tools=tools, input=items)  # type: ignore[arg-type]
        items += [item.model_dump(exclude_none=True) for item in response.output]
        searches = [item for item in response.output if item.type == "tool_search_call"]
        calls = [item for item in response.output if item.type == "function_call"]
        if not searches and not calls:
            break
        items += [toolsift.openai_tool_search_output(search) for search in searches]
        items += [toolsift.openai_call_output(c) for c in calls]
    # --
    ran = items[-2]
    assert conforms(FunctionCallOutput, ran) and ran["output"] == "Echo: rain in Lisbon"
    assert len(seen_tools) == 3 and all(tools == seen_tools[0] for tools in seen_tools)
    garbled = ResponseFunctionToolCall(type="function_call", call_id="fc_9", name="echo", arguments="{not json")
    refused = toolsift.openai_call_output(garbled)
    assert refused["call_id"] == "fc_9" and "not JSON" in refused["output"]  # never sent; the model reads why
    toolsift.close()


@pytest.mark.slow
@pytest.mark.model
def test_the_gemini_loop_runs_the_chosen_tool_through_the_gateway(gatewayed: str) -> None:
    seen_tools: list[Any] = []
    gemini = gemini_client(gemini_stand_in(seen_tools, pick=echo_pick))
    toolsift = Client(gatewayed)
    # -- the loop as the README shows it --
    tools = toolsift.deferred("gemini").tools  # the same on every turn
    steps: list[Any] = [
        {"type": "user_input", "content": [{"type": "text", "text": "Echo 'rain in Lisbon' back to me"}]}
    ]
    while True:
        interaction: Any = gemini.interactions.create(model="gemini-3-flash", tools=tools, input=steps)
        steps += [step.model_dump(mode="json", by_alias=True, exclude_none=True) for step in interaction.steps]
        calls = [step for step in interaction.steps if step.type == "function_call"]
        if not calls:
            break
        steps += [
            toolsift.gemini_function_result(c) if is_search_call(c) else toolsift.gemini_call_result(c) for c in calls
        ]
    # --
    ran = steps[-2]  # the answer to the model's call of the tool it found
    assert gemini_conforms(interactions.Step, ran) and ran["name"] == "echo" and "is_error" not in ran
    assert ran["result"] == [{"type": "text", "text": "Echo: rain in Lisbon"}]  # server-everything's own answer
    assert len(seen_tools) == 3 and all(tools == seen_tools[0] for tools in seen_tools)
    garbled = interactions.FunctionCallStep(id="g_9", name="no_such_tool", arguments={})
    refused = toolsift.gemini_call_result(garbled)
    assert refused["is_error"] is True and refused["call_id"] == "g_9" and gemini_conforms(interactions.Step, refused)
    toolsift.close()


@pytest.mark.slow
def test_langgraph_bigtool_retrieves_with_toolsift(served: str) -> None:
    """langgraph-bigtool's own agent graph, its retrieval hook answered by toolsift; the model is
    a scripted fake (no LLM): it asks to retrieve tools, then stops."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool as as_tool
    from langgraph.store.memory import InMemoryStore
    from langgraph_bigtool import create_agent

    from toolsift.client import langgraph_bigtool_retrievers

    class ScriptedModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # the script ignores the tools it is given
            return self

    def registry_tool(name: str) -> Any:
        return as_tool(name, description=f"The catalog tool {name}.")(lambda: "done")

    script = iter(
        [
            AIMessage(
                content="", tool_calls=[{"name": "retrieve_tools", "args": {"query": "weather forecast"}, "id": "r1"}]
            ),
            AIMessage(content="Here is the forecast."),
        ]
    )
    with Client(served) as toolsift:
        names = [tool["name"] for tool in toolsift.tools(limit=100).tools]
        retrieve, aretrieve = langgraph_bigtool_retrievers(toolsift, k=2)
        graph = create_agent(
            ScriptedModel(messages=script),
            {name: registry_tool(name) for name in names},
            retrieve_tools_function=retrieve,
            retrieve_tools_coroutine=aretrieve,
        ).compile(store=InMemoryStore())
        state = graph.invoke({"messages": [("user", "Will it rain in Lisbon?")]})
        expected = [match.name for match in toolsift.route("weather forecast", k=2).matches]
    assert state["selected_tool_ids"] == expected and set(expected) <= WEATHER_TOOLS
    assert state["messages"][-1].content == "Here is the forecast."


def test_the_deferred_glue_holds_the_operators_rules_whatever_the_model_asks(tiny_router: Router) -> None:
    """The model may narrow its search (its tags), never widen it past the operator's tags, access
    rule and pinned tools."""
    import json as json_module

    from toolsift.client import Client

    sent: list[dict[str, Any]] = []
    with TestClient(create_app(tiny_router)) as service:

        def forward(request: httpx.Request) -> httpx.Response:
            sent.append(json_module.loads(request.content))
            answer = service.post(
                request.url.path, content=request.content, headers={"content-type": "application/json"}
            )
            return httpx.Response(
                answer.status_code, content=answer.content, headers={"content-type": "application/json"}
            )

        with Client("http://toolsift", transport=httpx.MockTransport(forward)) as client:
            tool_use = {
                "type": "tool_use",
                "id": "toolu_1",
                "name": SEARCH_TOOL_NAME,
                "input": {"query": "delete a file", "tags": ["files"], "k": 8},
            }
            narrowed = client.anthropic_tool_result(tool_use, tags={"exclude": ["admin"]})
            pinned = client.anthropic_tool_result(tool_use, tags={"exclude": ["admin"]}, pinned=["search_emails"])
            call = {"type": "tool_search_call", "call_id": "call_1", "arguments": {"query": "delete a file", "k": 8}}
            item = client.openai_tool_search_output(call, access="non_destructive")
            gemini_call = interactions.FunctionCallStep(
                id="g_1", name=SEARCH_TOOL_NAME, arguments={"query": "delete a file", "tags": ["files"], "k": 8}
            )
            step = client.gemini_function_result(gemini_call, tags={"exclude": ["admin"]})
    assert sent[3]["tags"] == {"exclude": ["admin"], "any": ["files"]} and sent[3]["call_id"] == "g_1"
    assert step["call_id"] == "g_1" and "delete_file" not in [f["name"] for f in step["result"]]
    assert sent[0]["tags"] == {"exclude": ["admin"], "any": ["files"]}  # the model narrows within the operator's
    assert "delete_file" not in [block["tool_name"] for block in narrowed["content"]]
    assert sent[1]["tags"] == {"exclude": ["admin"]} and sent[1]["pinned"] == ["search_emails"]
    referenced = [block["tool_name"] for block in pinned["content"]]
    assert "delete_file" not in referenced and "search_emails" in referenced
    assert sent[2]["access"] == "non_destructive" and "delete_file" not in [tool["name"] for tool in item["tools"]]


def test_the_operator_narrows_the_deferred_list_with_the_routes_rules(client: TestClient) -> None:
    def names(**params: Any) -> tuple[list[str], str]:
        response = client.get("/deferred", params={"format": "anthropic", **params})
        assert response.status_code == 200, response.text
        return [tool["name"] for tool in response.json()["tools"][1:]], response.headers["etag"]

    every, every_tag = names()
    no_admin, no_admin_tag = names(exclude_tag=["admin"])
    assert "delete_file" in every and "delete_file" not in no_admin and no_admin_tag != every_tag
    assert names(tag=["weather", "calendar"])[0] == ["create_event", "get_forecast", "get_weather", "list_events"]
    assert "delete_file" not in names(access="non_destructive")[0]
    unchanged = client.get(
        "/deferred", params={"format": "anthropic", "exclude_tag": "admin"}, headers={"If-None-Match": no_admin_tag}
    )
    assert unchanged.status_code == 304
    typo = client.get("/deferred", params={"format": "anthropic", "tag": "wether"})
    assert typo.status_code == 400 and "weather" in typo.json()["error"]["message"]


def test_the_client_asks_for_a_narrowed_deferred_list(client: TestClient) -> None:
    from toolsift.client import Client

    def forward(request: httpx.Request) -> httpx.Response:
        answer = client.get(request.url.path, params=request.url.params)
        return httpx.Response(answer.status_code, content=answer.content, headers={"content-type": "application/json"})

    with Client("http://toolsift", transport=httpx.MockTransport(forward)) as toolsift:
        narrowed = toolsift.deferred("openai", exclude_tag=["admin"])
        nothing = toolsift.deferred("openai", access="non_destructive")  # no tiny tool is annotated so
    assert "delete_file" not in [tool.get("name") for tool in narrowed.tools] and narrowed.count == 7
    assert nothing.count == 0 and len(nothing.tools) == 1  # the search tool alone


def test_a_tool_result_of_every_block_kind_is_valid_for_each_provider() -> None:
    from anthropic.types import ToolResultBlockParam
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    from toolsift.client import _call_output, _call_result, _gemini_result
    from toolsift.wire import CallResult

    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    result = CallResult.model_validate(
        {
            "content": [
                {"type": "text", "text": "a chart"},
                {"type": "image", "data": pixel, "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///tmp/chart.csv", "name": "chart.csv"},
            ],
            "isError": True,
        }
    )
    claude = _call_result({"id": "toolu_1"}, result)
    assert conforms(ToolResultBlockParam, claude) and claude["is_error"] is True
    assert [block["type"] for block in claude["content"]] == ["text", "image", "text"]
    assert "file:///tmp/chart.csv" in claude["content"][2]["text"]
    gpt = _call_output({"call_id": "fc_1"}, result)
    assert conforms(FunctionCallOutput, gpt)
    assert [item["type"] for item in gpt["output"]] == ["input_text", "input_image", "input_text"]
    gemini = _gemini_result({"id": "call_1", "name": "chart"}, result)
    assert gemini_conforms(interactions.Step, gemini) and gemini["is_error"] is True
    assert [item["type"] for item in gemini["result"]] == ["text", "image", "text"]
    structured = CallResult.model_validate({"content": [], "structuredContent": {"sum": 5}})
    assert _gemini_result({"id": "c2", "name": "add"}, structured)["result"] == [{"type": "text", "text": '{"sum":5}'}]
    assert _call_output({"call_id": "fc_2"}, structured)["output"] == '{"sum":5}'
    assert _call_result({"id": "toolu_2"}, structured)["content"] == [{"type": "text", "text": '{"sum":5}'}]
