"""The gateway end to end: ``toolsift mcp --mcp-servers`` in front of real MCP servers from npm
(server-everything, server-filesystem, server-memory, pinned in tests/mcp_servers), padded with 300
generated static tools, driven by a scripted agent (no LLM) through the official SDK client, over
stdio and streamable HTTP, in both expose modes. What the agent did is checked on the upstream's
side: the file is on disk, the memory is in the memory server's store."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway_kit import (
    everything,
    filesystem,
    found_names,
    gateway,
    memory,
    names,
    padding_catalog,
    text_of,
    write_servers,
)

pytestmark = [pytest.mark.slow, pytest.mark.model]

CLIENT_LIMIT = 40
"""The most tools the agent's client shows (Cursor complains past about 40)."""


@dataclass(frozen=True)
class Task:
    query: str
    tool: str
    arguments: Callable[[Path], dict[str, Any]]
    check: Callable[[types.CallToolResult, Path], None]


def file_has(name: str, text: str) -> Callable[[types.CallToolResult, Path], None]:
    def check(result: types.CallToolResult, work: Path) -> None:
        assert text in (work / "files" / name).read_text()

    return check


def says(text: str) -> Callable[[types.CallToolResult, Path], None]:
    def check(result: types.CallToolResult, work: Path) -> None:
        assert text in text_of(result), text_of(result)

    return check


def remembers(text: str) -> Callable[[types.CallToolResult, Path], None]:
    def check(result: types.CallToolResult, work: Path) -> None:
        assert text in (work / "memory.jsonl").read_text()  # in the memory server's own store

    return check


def has_block(kind: str) -> Callable[[types.CallToolResult, Path], None]:
    def check(result: types.CallToolResult, work: Path) -> None:
        assert kind in {block.type for block in result.content}, result.content

    return check


def moved(result: types.CallToolResult, work: Path) -> None:
    assert (work / "files" / "archive" / "summary.txt").is_file()
    assert not (work / "files" / "summary.txt").exists()


def made_directory(result: types.CallToolResult, work: Path) -> None:
    assert (work / "files" / "archive").is_dir()


def in_files(*parts: str) -> Callable[[Path], str]:
    return lambda work: str(work / "files" / Path(*parts))


TASKS = [
    Task(
        "save the text 'quarterly numbers look good' into a new file called summary.txt",
        "write_file",
        lambda w: {"path": in_files("summary.txt")(w), "content": "quarterly numbers look good\n"},
        file_has("summary.txt", "quarterly numbers look good"),
    ),
    Task(
        "read the text file summary.txt",
        "read_text_file",
        lambda w: {"path": in_files("summary.txt")(w)},
        says("quarterly"),
    ),
    Task(
        "replace some text inside an existing file with an edit",
        "edit_file",
        lambda w: {"path": in_files("summary.txt")(w), "edits": [{"oldText": "good", "newText": "great"}]},
        file_has("summary.txt", "look great"),
    ),
    Task(
        "create a new directory named archive",
        "create_directory",
        lambda w: {"path": in_files("archive")(w)},
        made_directory,
    ),
    Task(
        "move the file summary.txt into the archive folder",
        "move_file",
        lambda w: {"source": in_files("summary.txt")(w), "destination": in_files("archive", "summary.txt")(w)},
        moved,
    ),
    Task(
        "list the contents of the archive directory",
        "list_directory",
        lambda w: {"path": in_files("archive")(w)},
        says("summary.txt"),
    ),
    Task(
        "get the size and modification time of a file",
        "get_file_info",
        lambda w: {"path": in_files("archive", "summary.txt")(w)},
        says("size"),
    ),
    Task(
        "search for files whose names match a pattern",
        "search_files",
        lambda w: {"path": in_files()(w), "pattern": "**/*.txt"},
        says("summary.txt"),
    ),
    Task("which directories am I allowed to access", "list_allowed_directories", lambda w: {}, says("files")),
    Task(
        "write a markdown file notes.md with a heading",
        "write_file",
        lambda w: {"path": in_files("notes.md")(w), "content": "# Notes\n"},
        file_has("notes.md", "# Notes"),
    ),
    Task(
        "create a new entity in the knowledge graph: Ada Lovelace, a mathematician",
        "memory_create_entities",
        lambda w: {"entities": [{"name": "Ada Lovelace", "entityType": "person", "observations": ["mathematician"]}]},
        remembers("Ada Lovelace"),
    ),
    Task(
        "add an observation to an existing entity: Ada Lovelace wrote the first program",
        "memory_add_observations",
        lambda w: {"observations": [{"entityName": "Ada Lovelace", "contents": ["wrote the first program"]}]},
        remembers("wrote the first program"),
    ),
    Task(
        "create a relation between two entities: Ada Lovelace worked with Charles Babbage",
        "memory_create_relations",
        lambda w: {"relations": [{"from": "Ada Lovelace", "to": "Charles Babbage", "relationType": "worked with"}]},
        remembers("worked with"),
    ),
    Task(
        "search the knowledge graph nodes for Ada",
        "memory_search_nodes",
        lambda w: {"query": "Ada"},
        says("mathematician"),
    ),
    Task("read the entire knowledge graph", "memory_read_graph", lambda w: {}, says("Ada Lovelace")),
    Task(
        "open specific knowledge graph nodes by their names",
        "memory_open_nodes",
        lambda w: {"names": ["Ada Lovelace"]},
        says("first program"),
    ),
    Task(
        "echo back the message 'hello gateway'", "echo", lambda w: {"message": "hello gateway"}, says("hello gateway")
    ),
    Task("add two numbers: 17 plus 25", "get-sum", lambda w: {"a": 17, "b": 25}, says("42")),
    Task("return a tiny test image", "get-tiny-image", lambda w: {}, has_block("image")),
    Task(
        "get a message with annotations for an error",
        "get-annotated-message",
        lambda w: {"messageType": "error"},
        has_block("text"),
    ),
    Task("return a few resource links", "get-resource-links", lambda w: {"count": 2}, has_block("resource_link")),
    Task(
        "get structured weather content for Chicago",
        "get-structured-content",
        lambda w: {"location": "Chicago"},
        lambda result, work: None if result.structured_content else pytest.fail("no structuredContent came through"),
    ),
]


def servers_file(work: Path) -> Path:
    return write_servers(
        work / "servers.json",
        {
            "everything": everything(),
            "files": filesystem(work / "files"),
            "memory": {**memory(work / "memory.jsonl"), "prefix": "memory_"},
        },
    )


async def run_agent(client: Any, expose: str, work: Path, changes: list[str]) -> None:
    """Each task: search, check the wanted tool was found, call it as the client would in this
    mode (call_tool, or by name once it is listed), check the result and the upstream's side."""
    first = names(await client.list_tools())
    assert first == ["search_tools", "list_tags", "call_tool"]
    for task in TASKS:
        found = found_names(await client.call_tool("search_tools", {"query": task.query, "k": 5}))
        assert task.tool in found, f"{task.query!r} found {found}"
        arguments = task.arguments(work)
        if expose == "dynamic":
            listed = names(await client.list_tools(cache_mode="refresh"))
            assert listed[:3] == first and task.tool in listed and len(listed) <= CLIENT_LIMIT
            result = await client.call_tool(task.tool, arguments)
        else:
            assert names(await client.list_tools(cache_mode="refresh")) == first  # never changes: caches stay whole
            result = await client.call_tool("call_tool", {"name": task.tool, "arguments": arguments})
        assert not result.is_error, f"{task.tool}: {text_of(result)}"
        task.check(result, work)
    assert (expose == "dynamic") == bool(changes)
    # a request no tool serves: no tools, abstained, and in dynamic mode nothing new listed or announced
    announced, listed = len(changes), names(await client.list_tools(cache_mode="refresh"))
    chat = await client.call_tool("search_tools", {"query": "lovely, thanks a bunch, that was all I needed"})
    assert chat.structured_content is not None and chat.structured_content["abstained"] is True
    assert chat.structured_content["tools"] == [] and "confidence" in chat.structured_content["reason"]
    assert names(await client.list_tools(cache_mode="refresh")) == listed and len(changes) == announced


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("expose", ["search", "dynamic"])
def test_an_agent_searches_then_calls_through_the_gateway(tmp_path: Path, transport: str, expose: str) -> None:
    servers = servers_file(tmp_path)
    pad = padding_catalog(tmp_path / "pad.json", 300)
    changes: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.append("tools")

    async def scenario() -> None:
        options = ("--catalog", str(pad), "--expose", expose)
        async with gateway(servers, *options, transport=transport, on_message=on_message) as client:
            tags = (await client.call_tool("list_tags", {})).structured_content
            assert tags is not None and tags["tags"]["pad"] == 300  # padded: 300 static tools beside ~36 real ones
            await run_agent(client, expose, tmp_path, changes)

    anyio.run(scenario)
    assert len(TASKS) >= 20
    graph = [json.loads(line) for line in (tmp_path / "memory.jsonl").read_text().splitlines()]
    assert any(item.get("name") == "Ada Lovelace" for item in graph)
