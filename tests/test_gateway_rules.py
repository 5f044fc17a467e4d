"""Rules hold at call time, not only in listings: every rule (a tenant's key, the operator's tags,
the operator's access) x both expose modes x stdio and HTTP. The call of a forbidden tool is an MCP
tool error that says why, and the upstream never sees it: the file is not written, the fault
server's call log (what it was asked to run) does not have it."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from gateway_kit import (
    connect,
    faults,
    filesystem,
    found_names,
    gateway,
    http_gateway,
    names,
    seen_by,
    text_of,
    write_servers,
)
from mcp import Client

pytestmark = [pytest.mark.slow, pytest.mark.model]

FILES_ONLY_KEY = "files-only-key-0123456789abcdef"
EVERYTHING_KEY = "everything-key-0123456789abcdef"
RULES = ("--exclude-tags", "blocked", "--access", "read_only")


def setup(work: Path) -> Path:
    (work / "files").mkdir()
    (work / "files" / "kept.txt").write_text("kept\n")
    (work / "tenants.yaml").write_text(
        "tenants:\n"
        f"  files-only:\n    key: {FILES_ONLY_KEY}\n    tags: [mcp:files]\n"
        f"  everything:\n    key: {EVERYTHING_KEY}\n"
    )
    return write_servers(
        work / "servers.json",
        {
            "files": {**filesystem(work / "files"), "trusted": True},  # its readOnlyHint counts
            "faults": {**faults(work / "faults.log"), "tags": ["open"], "trusted": True},
            "vault": {**faults(work / "vault.log"), "tags": ["blocked"], "prefix": "vault_", "trusted": True},
        },
    )


async def call(client: Client, expose: str, name: str, arguments: dict[str, object]) -> types.CallToolResult:
    """As the client would call in this mode: by name in dynamic mode, through call_tool otherwise
    (and, either way, both: a client that knows a name can try it directly)."""
    if expose == "dynamic":
        return await client.call_tool(name, arguments)
    return await client.call_tool("call_tool", {"name": name, "arguments": arguments})


async def refused(client: Client, expose: str, name: str, arguments: dict[str, object], why: str) -> None:
    for result in (await call(client, expose, name, arguments), await client.call_tool(name, arguments)):
        assert result.is_error, f"{name} was not refused: {text_of(result)}"
        assert why in text_of(result), text_of(result)


async def operator_rules_hold(client: Client, expose: str, work: Path) -> None:
    """No tenant key (stdio, or HTTP with the everything key): the operator's rules say why."""
    target = str(work / "files" / "written.txt")
    await refused(client, expose, "write_file", {"path": target, "content": "x"}, "access read_only")
    assert not Path(target).exists()
    await refused(client, expose, "add_tool", {}, "access read_only")
    await refused(client, expose, "vault_sleep_for", {"seconds": 0}, "tags.exclude")
    assert "add_tool" not in seen_by(work / "faults.log") and seen_by(work / "vault.log") == []
    # what the rules allow goes through, found and called
    found = found_names(await client.call_tool("search_tools", {"query": "wait a number of seconds", "k": 5}))
    assert "sleep_for" in found and "vault_sleep_for" not in found
    found = found_names(await client.call_tool("search_tools", {"query": "write a file", "k": 10}))
    assert "write_file" not in found
    ok = await call(client, expose, "sleep_for", {"seconds": 0})
    assert not ok.is_error and "sleep_for" in seen_by(work / "faults.log")
    read = await call(client, expose, "read_text_file", {"path": str(work / "files" / "kept.txt")})
    assert not read.is_error and "kept" in text_of(read)
    listed = names(await client.list_tools(cache_mode="refresh"))
    assert not {"write_file", "add_tool", "vault_sleep_for"} & set(listed)


async def tenant_rules_hold(client: Client, expose: str, work: Path) -> None:
    """The files-only key: the faults server's tools do not exist for it, whatever the operator allows."""
    before = seen_by(work / "faults.log")
    await refused(client, expose, "sleep_for", {"seconds": 0}, "no tool named 'sleep_for'")
    assert seen_by(work / "faults.log") == before
    found = found_names(await client.call_tool("search_tools", {"query": "wait a number of seconds", "k": 5}))
    assert "sleep_for" not in found
    read = await call(client, expose, "read_text_file", {"path": str(work / "files" / "kept.txt")})
    assert not read.is_error and "kept" in text_of(read)
    target = str(work / "files" / "tenant.txt")
    await refused(
        client, expose, "write_file", {"path": target, "content": "x"}, "access read_only"
    )  # its key reaches it
    assert not Path(target).exists()


@pytest.mark.parametrize("expose", ["search", "dynamic"])
def test_rules_hold_at_call_time_over_stdio(tmp_path: Path, expose: str) -> None:
    servers = setup(tmp_path)

    async def scenario() -> None:
        async with gateway(servers, *RULES, "--expose", expose) as client:
            await operator_rules_hold(client, expose, tmp_path)

    anyio.run(scenario)


@pytest.mark.parametrize("expose", ["search", "dynamic"])
def test_rules_hold_at_call_time_over_http_for_each_key(tmp_path: Path, expose: str) -> None:
    servers = setup(tmp_path)
    options = (*RULES, "--expose", expose, "--tenants", str(tmp_path / "tenants.yaml"))

    async def scenario() -> None:
        async with http_gateway(servers, *options) as url:
            async with connect(url, key=EVERYTHING_KEY) as client:
                await operator_rules_hold(client, expose, tmp_path)
            async with connect(url, key=FILES_ONLY_KEY) as client:
                await tenant_rules_hold(client, expose, tmp_path)

    anyio.run(scenario)


def test_an_exact_name_is_found_first_and_called_without_a_search(tmp_path: Path) -> None:
    servers = setup(tmp_path)

    async def scenario() -> None:
        async with gateway(servers) as client:
            for name in ("read_text_file", "list_allowed_directories", "vault_sleep_for"):
                found = found_names(await client.call_tool("search_tools", {"query": name, "k": 3}))
                assert found[0] == name and len(found) == 3
            direct = await client.call_tool("call_tool", {"name": "list_allowed_directories", "arguments": {}})
            assert not direct.is_error and "files" in text_of(direct)
            unknown = await client.call_tool("call_tool", {"name": "read_txt_file", "arguments": {}})
            assert unknown.is_error and "Did you mean 'read_text_file'" in text_of(unknown)

    anyio.run(scenario)


def test_an_untrusted_servers_claims_do_not_pass_the_rules_and_poison_never_reaches_the_model(tmp_path: Path) -> None:
    """Annotations are claims: an untrusted server's ``readOnlyHint`` does not satisfy ``--access
    read_only`` (the operator's ``read_only`` list does). A tool whose definition turns poisoned
    mid-session (a rug pull) is withheld: not found, not callable, never sent upstream."""
    servers = write_servers(
        tmp_path / "servers.json",
        {
            # says sleep_for is read-only, not trusted; changes apply as they come (policy: accept), so
            # the poisoned tool it adds reaches the security screen rather than the quarantine
            "claims": faults(tmp_path / "claims.log", protocol="legacy", policy="accept"),
            "vouched": {
                **faults(tmp_path / "vouched.log", protocol="legacy"),
                "prefix": "v_",
                "read_only": ["sleep_for"],
            },
        },
    )
    log = tmp_path / "gateway.log"

    async def scenario() -> None:
        async with gateway(servers, "--access", "read_only", log=log) as client:
            await refused(client, "search", "sleep_for", {"seconds": 0}, "server 'claims''s own hints count only")
            assert seen_by(tmp_path / "claims.log") == []
            for _ in range(300):  # a server that took long to start joins the catalog a moment later
                searched = await client.call_tool("search_tools", {"query": "v_sleep_for", "k": 3})
                if "v_sleep_for" in found_names(searched):
                    break
                await anyio.sleep(0.1)
            ok = await call(client, "search", "v_sleep_for", {"seconds": 0})
            assert not ok.is_error, text_of(ok)
            assert seen_by(tmp_path / "vouched.log") == ["sleep_for"]
        async with gateway(servers, log=log) as client:
            assert not (await call(client, "search", "add_poison", {})).is_error
            for _ in range(100):  # the gateway follows the change (list_changed, then a rebuild)
                if "ssh_helper" in log.read_text():
                    break
                await anyio.sleep(0.1)
            found = found_names(await client.call_tool("search_tools", {"query": "check an SSH connection", "k": 5}))
            assert "ssh_helper" not in found
            result = await call(client, "search", "ssh_helper", {"note": "x"})
            assert result.is_error and "no tool named 'ssh_helper'" in text_of(result)
            assert "ssh_helper" not in seen_by(tmp_path / "claims.log")
        assert "tool 'ssh_helper' withheld, its definition looks poisoned" in log.read_text()

    anyio.run(scenario)
