"""Upstream faults, through the gateway: a server that hangs past its call_timeout, is killed in
the middle of a call, returns 10 MB, lies (a result that is not MCP), or changes its tools during
a session. Each gives a clear tool error or the right result, the other servers keep working and
the gateway never crashes. Also: progress and cancellation pass through, and the dynamic list is
only ever appended to, one list_changed per change, with eviction at the cap announced."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway_kit import everything, faults, found_names, gateway, liar, names, seen_by, text_of, write_servers
from mcp import Client

pytestmark = [pytest.mark.slow, pytest.mark.model]


async def echo_works(client: Client) -> None:
    result = await client.call_tool("call_tool", {"name": "echo", "arguments": {"message": "still here"}})
    assert not result.is_error and "still here" in text_of(result), text_of(result)


async def forward(client: Client, name: str, arguments: dict[str, Any], **options: Any) -> types.CallToolResult:
    return await client.call_tool("call_tool", {"name": name, "arguments": arguments}, **options)


async def eventually(check: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "not within the time"
        await anyio.sleep(0.25)


def test_upstream_faults_give_clear_errors_and_the_gateway_serves_on(tmp_path: Path) -> None:
    log = tmp_path / "faults.log"
    servers = write_servers(
        tmp_path / "servers.json",
        {
            "everything": everything(),
            "faults": faults(log, call_timeout=2, protocol="legacy"),
            "liar": liar(),
        },
    )

    async def scenario() -> None:
        async with gateway(servers, log=tmp_path / "gateway.log") as client:
            # hangs past its call_timeout: a timeout error within it, not a hang
            started = time.monotonic()
            slow = await forward(client, "sleep_for", {"seconds": 30})
            assert slow.is_error and "MCP server 'faults'" in text_of(slow) and "no answer within 2 s" in text_of(slow)
            assert time.monotonic() - started < 10
            await echo_works(client)

            # progress passes through
            reported: list[float] = []

            async def progress(done: float, total: float | None, message: str | None) -> None:
                reported.append(done)

            ok = await forward(client, "sleep_for", {"seconds": 0.6}, progress_callback=progress)
            assert not ok.is_error and "slept" in text_of(ok)
            assert len(reported) >= 3 and reported == sorted(reported)

            # the client's cancellation reaches the server
            with anyio.move_on_after(0.5):
                await forward(client, "sleep_for", {"seconds": 20})
            await eventually(lambda: _true("cancelled:sleep_for" in seen_by(log)), 10)

            # 10 MB comes back cut to the limit, with a note
            huge = await forward(client, "huge", {"megabytes": 10})
            assert not huge.is_error
            assert len(huge.model_dump_json(by_alias=True, exclude_none=True)) <= 1_000_000
            assert "over the gateway's limit of 1000000" in text_of(huge)

            # a server that lies
            lie = await forward(client, "lie", {})
            assert lie.is_error and "MCP server 'liar'" in text_of(lie) and "not an MCP tool result" in text_of(lie)
            await echo_works(client)

            # tools that change during the session: a new one waits for approval (quarantine, the
            # default), then is found and called
            assert not (await forward(client, "add_tool", {})).is_error

            async def late_tool_held() -> bool:
                return "waits for an operator's approval" in text_of(await forward(client, "late_tool", {}))

            await eventually(late_tool_held)
            assert "late_tool" not in seen_by(log)  # never forwarded while held
            approve = [sys.executable, "-m", "toolsift", "approve", "--mcp-servers", str(servers), "--server", "faults"]
            approve += ["--tool", "late_tool"]
            done = subprocess.run(approve, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0 and "faults: pinned late_tool" in done.stdout, done.stderr

            async def late_tool_found() -> bool:
                found = await client.call_tool("search_tools", {"query": "late_tool", "k": 3})
                return found_names(found)[0] == "late_tool"

            await eventually(late_tool_found)
            assert text_of(await forward(client, "late_tool", {})) == "late_tool ran"

            # killed in the middle of a call: an error naming it; the others serve on; it comes back
            crash = await forward(client, "crash", {})
            assert crash.is_error and "MCP server 'faults'" in text_of(crash), text_of(crash)
            await echo_works(client)

            async def faults_back() -> bool:
                return not (await forward(client, "sleep_for", {"seconds": 0})).is_error

            await eventually(faults_back)
            await echo_works(client)  # the gateway is alive and answering after all of it

    anyio.run(scenario)
    lines = (tmp_path / "gateway.log").read_text()
    assert '"outcome":"timeout"' in lines and '"server":"faults"' in lines  # one JSON line per call
    assert "Traceback" not in lines


async def _true(value: bool) -> bool:
    return value


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_dynamic_list_is_appended_to_and_each_change_announced(tmp_path: Path, transport: str) -> None:
    servers = write_servers(tmp_path / "servers.json", {"everything": everything()})
    announced: list[int] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            announced.append(1)

    async def scenario() -> None:
        options = ("--expose", "dynamic")
        env = {"TOOLSIFT_DYNAMIC_CAP": "3"}
        async with gateway(servers, *options, transport=transport, env=env, on_message=on_message) as client:

            async def search(name: str) -> list[types.Tool]:
                assert found_names(await client.call_tool("search_tools", {"query": name, "k": 1})) == [name]
                await anyio.sleep(0.2)
                return list((await client.list_tools(cache_mode="refresh")).tools)

            own = list((await client.list_tools()).tools)
            assert [tool.name for tool in own] == ["search_tools", "list_tags", "call_tool"]
            first = await search("echo")
            assert first[:3] == own and [t.name for t in first[3:]] == ["echo"] and len(announced) == 1
            second = await search("get-sum")
            assert second[:4] == first and [t.name for t in second[3:]] == [
                "echo",
                "get-sum",
            ]  # appended, byte for byte
            assert len(announced) == 2
            assert await search("echo") == second and len(announced) == 2  # found again: no change, no notice
            third = await search("get-tiny-image")
            assert third[:5] == second and len(announced) == 3
            assert not (await client.call_tool("get-sum", {"a": 1, "b": 2})).is_error  # used: recent
            fourth = await search("get-env")  # over the cap: echo, the least recently used, goes
            assert [t.name for t in fourth[3:]] == ["get-sum", "get-tiny-image", "get-env"]
            assert len(announced) == 4

    anyio.run(scenario)
    assert names(types.ListToolsResult(tools=[])) == []


def test_post_call_is_the_http_twin_with_the_same_checks_and_every_call_observed(tmp_path: Path) -> None:
    """``toolsift serve --mcp-servers``: ``POST /call`` through ``Client`` and ``AsyncClient``,
    the same refusals and errors as the MCP gateway, a JSON log line per call, the metrics and the
    per-server counts in /admin/status."""
    import os
    import subprocess
    import sys

    import httpx

    from toolsift.client import AsyncClient, Client

    from conftest import free_port, wait_until_serving

    (tmp_path / "files").mkdir()
    servers = write_servers(
        tmp_path / "servers.json",
        {
            "everything": {**everything(), "trusted": True},
            "files": {**faults(tmp_path / "faults.log"), "prefix": "f_", "trusted": True},
        },
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "toolsift", "serve", "--mcp-servers", str(servers), "--port", str(port)]
    command += ["--access", "read_only"]
    env = {**os.environ, "TOOLSIFT_ADMIN_TOKEN": "admin-token-0123456789", "HF_HUB_OFFLINE": "1"}
    with open(tmp_path / "serve.log", "w") as log:
        process = subprocess.Popen(command, env=env, stderr=log)
        try:
            wait_until_serving(url, process)
            with Client(url) as client:
                echoed = client.call("echo", {"message": "over http"})
                assert not echoed.is_error and echoed.text == "Echo: over http"
                summed = client.call("get-sum", {"a": 2, "b": 3}, session_id="conversation-1")
                assert "5" in summed.text
                refused = client.call("f_add_tool", {})
                assert refused.is_error and "access read_only" in refused.text
                invalid = client.call("f_sleep_for", {"seconds": "soon"})
                assert invalid.is_error and "arguments.seconds" in invalid.text
                assert seen_by(tmp_path / "faults.log") == []  # neither reached the server
                unknown = client.call("ech", {})
                assert unknown.is_error and "Did you mean 'echo'" in unknown.text
                raw = httpx.post(url + "/call", json={"tool": "f_add_tool"}, timeout=30)
                assert raw.status_code == 200 and raw.headers["x-toolsift-call-outcome"] == "refused"

            async def twin() -> None:
                async with AsyncClient(url) as client:
                    image = await client.call("get-tiny-image")
                    assert not image.is_error and "image" in {block["type"] for block in image.content}

            anyio.run(twin)
            metrics = httpx.get(url + "/metrics", timeout=10).text
            assert 'toolsift_tool_calls_total{outcome="ok",server="everything"} 3.0' in metrics
            assert 'toolsift_tool_calls_total{outcome="refused",server="files"} 2.0' in metrics
            assert "toolsift_tool_call_seconds_bucket" in metrics
            status = httpx.get(
                url + "/admin/status", headers={"Authorization": "Bearer admin-token-0123456789"}, timeout=10
            ).json()
            calls = status["live"]["servers"]["everything"]["calls"]
            assert calls["calls"] == 3 and calls["outcomes"] == {"ok": 3}
            assert status["live"]["servers"]["files"]["calls"]["outcomes"] == {"invalid_arguments": 1, "refused": 2}
        finally:
            process.terminate()
            process.wait(timeout=60)
    lines = [line for line in (tmp_path / "serve.log").read_text().splitlines() if '"toolsift.calls"' in line]
    import json

    sums = [json.loads(line) for line in lines if '"get-sum"' in line]
    assert sums and sums[0]["server"] == "everything" and sums[0]["outcome"] == "ok"
    assert sums[0]["session_id"] == "conversation-1" and sums[0]["result_bytes"] > 0 and sums[0]["ms"] >= 0
