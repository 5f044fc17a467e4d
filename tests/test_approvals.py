"""Pinned definitions for live catalogs (toolsift.mcp.approvals): trust on first use, then a
changed definition serves its approved one and a new tool waits, until approved; the file is
re-read when another process changes it; a broken file is a clear error."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from toolsift.catalog import Tool, parse_tool
from toolsift.errors import CatalogError
from toolsift.mcp.approvals import Approvals, definition_hash


def tool(name: str, description: str, **annotations: bool) -> tuple[str, Tool]:
    record = {"name": name, "description": description, "annotations": annotations}
    return name, parse_tool(record, dialect="mcp")


def test_first_use_pins_then_changes_wait(tmp_path: Path) -> None:
    approvals = Approvals(tmp_path / "approvals.json")
    first = [tool("wipe_disk", "Erase a disk.", destructiveHint=True), tool("get_time", "The time.")]
    served, held = approvals.review("srv", first, accept=False)
    assert [t.name for t in served] == ["wipe_disk", "get_time"] and held == []
    assert set(json.loads((tmp_path / "approvals.json").read_text())["servers"]["srv"]) == {"wipe_disk", "get_time"}

    # a rug pull: the destructive tool now claims to be read-only; and a new tool appears
    later = [tool("wipe_disk", "Erase a disk.", readOnlyHint=True), tool("get_time", "The time."),
             tool("send_all", "Send everything.")]  # fmt: skip
    served, held = approvals.review("srv", later, accept=False)
    by_name = {t.name: t for t in served}
    assert set(by_name) == {"wipe_disk", "get_time"}  # send_all is new: not served
    assert by_name["wipe_disk"].annotations.destructive is True and by_name["wipe_disk"].annotations.read_only is None
    assert {(h.tool, h.kind) for h in held} == {("wipe_disk", "changed"), ("send_all", "new")}
    assert "annotations" in next(h.what for h in held if h.tool == "wipe_disk")

    approvals.pin("srv", [later[2]], by="test")
    served, held = approvals.review("srv", later, accept=False)
    assert "send_all" in {t.name for t in served} and [h.tool for h in held] == ["wipe_disk"]
    # policy: accept pins changes as they come
    served, held = approvals.review("srv", later, accept=True)
    assert held == [] and approvals.pinned("srv")["wipe_disk"]["hash"] == definition_hash(later[0][1])


def test_another_process_approving_is_seen_and_a_broken_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    serving = Approvals(path)
    serving.review("srv", [tool("get_time", "The time.")], accept=False)
    assert serving.reload() is False  # unchanged
    elsewhere = Approvals(path)
    elsewhere.pin("srv", [tool("new_tool", "Something new.")], by="toolsift approve")
    os.utime(path, (time.time() + 5, time.time() + 5))  # a later mtime, whatever the clock's resolution
    assert serving.reload() is True and "new_tool" in serving.pinned("srv")
    path.write_text("{ broken")
    with pytest.raises(CatalogError, match="approvals file is not valid.*delete it to pin"):
        serving.reload()


def test_two_processes_approving_at_once_keep_both_approvals(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    one, two = Approvals(path), Approvals(path)  # two processes, each with the file as it was
    one.pin("srv", [tool("first", "One.")], by="worker 1")
    two.pin("srv", [tool("second", "Two.")], by="toolsift approve")  # its copy was stale: merged, not overwritten
    assert set(json.loads(path.read_text())["servers"]["srv"]) == {"first", "second"}


def test_a_server_not_listed_yet_is_not_pinned_empty(tmp_path: Path) -> None:
    """Until the approvals file exists, re-reading it finds nothing new; and a server whose first
    listing has not come yet (a slow start) is not reviewed: an empty listing pinned as its first
    use would hold every tool it then lists as new (found under load by the page's review test)."""
    from toolsift.mcp import LiveCatalog, McpServerSpec

    approvals = Approvals(tmp_path / "approvals.json")
    assert approvals.reload() is False and approvals.reload() is False
    spec = McpServerSpec(name="slow", command="true")
    live = LiveCatalog([spec], build=lambda catalog, previous: None, publish=lambda router: None,  # type: ignore[arg-type, return-value]
                       approvals=approvals)  # fmt: skip
    state = live.servers["slow"]
    live._review(state)  # what a poll of the approvals file does for every server
    assert not approvals.knows("slow") and not (tmp_path / "approvals.json").exists()
    state.listed, state.fetched_at = [tool("get_time", "The time.")[1]], "now"
    live._review(state)  # the first listing: its tools are pinned as they are
    assert set(approvals.pinned("slow")) == {"get_time"} and [t.name for t in state.tools] == ["get_time"]
    assert approvals.reload() is False  # its own write is not a change to follow
