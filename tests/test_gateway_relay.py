"""The upstream servers' resources and prompts through the gateway: listed under the servers'
prefixes, read and got from the server that owns them (the answer is the upstream's own, checked
against the same server called directly), only from servers the caller's key reaches, and a
server that hangs gives an error naming it while the others serve on. Also: a client of the
2026-07-28 protocol (stateless HTTP) searches and calls in search mode."""

from __future__ import annotations

import re
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_kit import (
    connect,
    everything,
    faults,
    filesystem,
    found_names,
    gateway,
    http_gateway,
    seen_by,
    text_of,
    write_servers,
)
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

pytestmark = [pytest.mark.slow, pytest.mark.model]

FILES_ONLY_KEY = "files-only-key-0123456789abcdef"
ALL_KEY = "all-servers-key-0123456789abcdef"
STATIC = "demo://resource/static/document/architecture.md"
TEMPLATED = "demo://resource/dynamic/text/7"


def setup(work: Path) -> Path:
    (work / "tenants.yaml").write_text(
        f"tenants:\n  files-only:\n    key: {FILES_ONLY_KEY}\n    tags: [mcp:files]\n  all:\n    key: {ALL_KEY}\n"
    )
    return write_servers(
        work / "servers.json",
        {
            "ev": {**everything(), "prefix": "ev_"},
            "files": filesystem(work / "files"),
            "faults": {**faults(work / "faults.log"), "call_timeout": 2},
        },
    )


@asynccontextmanager
async def direct_everything() -> Any:
    """server-everything called directly with the same SDK client: what the gateway must pass on."""
    spec = everything()
    params = StdioServerParameters(command=spec["command"], args=spec["args"])
    with open("/dev/null", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            yield client


def untimed(text: str) -> str:
    return re.sub(r"\d{1,2}:\d{2}:\d{2}( [AP]M)?", "<time>", text)


def dumped(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def everything_is_relayed(client: Client, work: Path) -> None:
    assert client.server_capabilities.resources is not None and client.server_capabilities.prompts is not None
    async with direct_everything() as upstream:
        theirs = (await upstream.list_resources()).resources
        listed = (await client.list_resources(cache_mode="refresh")).resources
        by_uri = {resource.uri: resource for resource in listed}
        for resource in theirs:  # every one, its URI kept, its name under the server's prefix
            assert by_uri[resource.uri].name == "ev_" + resource.name
        assert by_uri["faults://notes/hello"].name == "hello"  # no prefix for that server
        assert len(listed) == len(theirs) + 2  # the filesystem server offers none
        assert dumped(await client.read_resource(STATIC)) == dumped(await upstream.read_resource(STATIC))
        templated = str(dumped(await client.read_resource(TEMPLATED)))  # made at read time: "created at 5:25:27 PM"
        assert untimed(templated) == untimed(str(dumped(await upstream.read_resource(TEMPLATED))))
        assert "Resource 7" in templated
        note = await client.read_resource("faults://notes/bye")  # through the server's template
        assert note.contents[0].text == "bye from faults"  # type: ignore[union-attr]
        templates = (await client.list_resource_templates(cache_mode="refresh")).resource_templates
        assert {"ev_Dynamic Text Resource", "note"} <= {template.name for template in templates}

        prompts = {prompt.name for prompt in (await client.list_prompts(cache_mode="refresh")).prompts}
        theirs_prompts = {prompt.name for prompt in (await upstream.list_prompts()).prompts}
        assert prompts == {"ev_" + name for name in theirs_prompts} and "ev_args-prompt" in prompts
        arguments = {"city": "Lisbon", "state": "Lisboa"}
        got = await client.get_prompt("ev_args-prompt", arguments)
        assert dumped(got) == dumped(await upstream.get_prompt("args-prompt", arguments))
        assert "Lisbon" in str(dumped(got))

    with pytest.raises(MCPError, match="no MCP server behind this gateway offers the prompt 'args-prompt'"):
        await client.get_prompt("args-prompt", arguments)  # only under its prefix
    with pytest.raises(MCPError, match="offers the resource 'nope://x'"):
        await client.read_resource("nope://x")
    started = time.monotonic()
    with pytest.raises(MCPError, match="server 'faults' did not answer .* within 2 s"):
        await client.read_resource("faults://slow")
    assert time.monotonic() - started < 20
    assert "read:faults://slow" in seen_by(work / "faults.log")
    assert (await client.read_resource(STATIC)).contents  # the others serve on
    echoed = await client.call_tool("call_tool", {"name": "ev_echo", "arguments": {"message": "still here"}})
    assert not echoed.is_error and "still here" in text_of(echoed)


def test_resources_and_prompts_are_listed_and_forwarded_over_stdio(tmp_path: Path) -> None:
    servers = setup(tmp_path)

    async def scenario() -> None:
        async with gateway(servers) as client:
            await everything_is_relayed(client, tmp_path)

    anyio.run(scenario)


def test_a_key_sees_the_resources_and_prompts_of_the_servers_it_reaches_only(tmp_path: Path) -> None:
    """Over HTTP with tenants, and a client of the 2026-07-28 protocol (stateless requests)."""
    servers = setup(tmp_path)

    async def scenario() -> None:
        async with http_gateway(servers, "--tenants", str(tmp_path / "tenants.yaml")) as url:
            async with connect(url, key=ALL_KEY, mode="auto") as client:
                assert client.protocol_version == "2026-07-28"
                await everything_is_relayed(client, tmp_path)
                found = found_names(await client.call_tool("search_tools", {"query": "echo a message back", "k": 5}))
                assert found[0] == "ev_echo"
                echoed = await client.call_tool("call_tool", {"name": "ev_echo", "arguments": {"message": "modern"}})
                assert not echoed.is_error and "modern" in text_of(echoed)
            async with connect(url, key=FILES_ONLY_KEY) as client:
                assert (await client.list_resources(cache_mode="refresh")).resources == []
                assert (await client.list_prompts(cache_mode="refresh")).prompts == []
                before = seen_by(tmp_path / "faults.log")
                for uri in (STATIC, "faults://notes/hello", "faults://notes/other"):
                    with pytest.raises(MCPError, match="no MCP server behind this gateway offers the resource"):
                        await client.read_resource(uri)
                with pytest.raises(MCPError, match="no MCP server behind this gateway offers the prompt"):
                    await client.get_prompt("ev_simple-prompt")
                assert seen_by(tmp_path / "faults.log") == before  # the upstream saw nothing

    anyio.run(scenario)


def test_perf_gateway_measures_added_latency_and_tokens_per_expose_mode(tmp_path: Path) -> None:
    """``toolsift perf --gateway``: a small run, for the shape and sense of its figures (the
    figures themselves are RESULTS.md's, from `make bench`)."""
    import json
    import subprocess
    import sys

    servers = write_servers(
        tmp_path / "servers.json", {"everything": everything(), "files": filesystem(tmp_path / "files")}
    )
    out = tmp_path / "gateway.json"
    command = [sys.executable, "-m", "toolsift", "perf", "--gateway", str(servers), "--calls", "20"]
    run = subprocess.run([*command, "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "added by the gateway" in run.stdout and "every upstream tool" in run.stdout
    document = json.loads(out.read_text())
    latency = document["latency_ms"]
    assert document["server"] == "everything" and document["calls"] == 20
    assert latency["direct"]["p50"] > 0 and latency["gateway"]["p50"] > 0
    assert latency["added"]["p50"] == round(latency["gateway"]["p50"] - latency["direct"]["p50"], 3)
    low, high = latency["added"]["p50_ci95"]
    assert low <= high
    tokens = document["tokens"]
    assert tokens["all_upstream"]["tools"] > 20  # server-everything's and server-filesystem's
    assert tokens["search"]["tools"] == 3 and tokens["search"]["tokens"] < tokens["all_upstream"]["tokens"]
    grown = [row["tools"] for row in tokens["dynamic"]]
    assert grown == sorted(grown) and grown[0] > 3  # appended to, search after search
