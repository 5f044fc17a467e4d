"""What changed between two catalog versions: tools added, removed and changed (and in what), the
labelled requests that now route differently — in the library, `toolsift diff` and
`GET /admin/changes`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from fastapi.testclient import TestClient

from toolsift import Router
from toolsift.catalog import Catalog, parse_catalog
from toolsift.cli import main
from toolsift.curation.changes import compare, tool_changes
from toolsift.embeddings import HashingEmbedder
from toolsift.service import create_app
from toolsift.settings import Settings

from conftest import TINY_TOOLS

ADMIN = {"Authorization": "Bearer admin-token-0123456789"}
QUERIES = [
    ("send an email to Bob", ("send_email",)),
    ("delete the file from storage", ("delete_file",)),
    ("fax the contract to the lawyer", ("send_fax",)),
    ("weather forecast for the next days", ("get_forecast",)),
]


def versions() -> tuple[Catalog, Catalog]:
    before = parse_catalog(TINY_TOOLS, source="v1")
    edited = [
        {**tool, "description": "Send an email message, with attachments, to one or more recipients."}
        if tool["name"] == "send_email" else tool
        for tool in TINY_TOOLS if tool["name"] != "delete_file"
    ]  # fmt: skip
    after = parse_catalog([*edited, {"name": "send_fax", "description": "Send a fax to a phone number."}], source="v2")
    return before, after


def test_tool_changes_name_what_was_added_removed_and_changed() -> None:
    before, after = versions()
    changes = tool_changes(before, after)
    assert (changes["added"], changes["removed"]) == (["send_fax"], ["delete_file"])
    assert changes["changed"] == {"send_email": ["description"]}
    assert changes["before"] == before.fingerprint and changes["after"] == after.fingerprint
    same = tool_changes(before, before)
    assert same["added"] == same["removed"] == [] and same["changed"] == {}


def test_the_requests_that_now_route_differently_say_better_or_worse() -> None:
    before, after = versions()
    old = Router.build(before, HashingEmbedder(64))
    changes = compare(old, old.rebuilt(after), QUERIES, k=1)
    moved = {entry["query"]: entry for entry in changes["rerouted"]}
    assert (
        moved["delete the file from storage"]["hit_before"] and not moved["delete the file from storage"]["hit_after"]
    )
    assert (
        moved["fax the contract to the lawyer"]["hit_after"]
        and not moved["fax the contract to the lawyer"]["hit_before"]
    )
    assert "weather forecast for the next days" not in moved  # untouched tools route as before
    assert changes["broken"] >= 1 and changes["fixed"] >= 1 and changes["queries"] == 4


def test_toolsift_diff_prints_and_writes_json(tmp_path: Path) -> None:
    before, after = versions()
    for name, catalog in (("v1.json", before), ("v2.json", after)):
        (tmp_path / name).write_text(json.dumps(catalog.to_records()))
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "\n".join(json.dumps({"id": str(i), "query": q, "relevant": list(r)}) for i, (q, r) in enumerate(QUERIES))
    )
    env = {"TOOLSIFT_MODEL": "hashing-64", "TOOLSIFT_CACHE_DIR": str(tmp_path / "cache")}
    arguments = ["diff", str(tmp_path / "v1.json"), str(tmp_path / "v2.json"), "--queries", str(queries), "-k", "1"]
    printed = CliRunner().invoke(main, arguments, env=env)
    assert printed.exit_code == 0, printed.output
    assert "1 added, 1 removed, 1 changed" in printed.output and "~ send_email (description)" in printed.output
    assert "no longer do" in printed.output and "worse: 'delete the file from storage'" in printed.output
    document = json.loads(CliRunner().invoke(main, [*arguments, "--json"], env=env).output)
    assert document["added"] == ["send_fax"] and document["broken"] >= 1


def test_admin_changes_compares_the_serving_catalog_with_an_earlier_one(tiny_router: Router, tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "1", "query": "send an email to Bob", "relevant": ["send_email"]}))
    settings = Settings(admin_token=ADMIN["Authorization"][7:], lint_queries=queries)
    with TestClient(create_app(tiny_router, settings=settings)) as client:
        assert client.get("/admin/changes").status_code == 401
        first: list[dict[str, Any]] = client.get("/admin/changes", headers=ADMIN).json()["versions"]
        assert len(first) == 1 and first[0]["tools"] == len(tiny_router.catalog)
        added = {"name": "send_fax", "description": "Send a fax to a phone number."}
        assert client.post("/admin/tools", json={"tools": [added]}, headers=ADMIN).status_code == 200
        assert client.delete("/admin/tools/convert_currency", headers=ADMIN).status_code == 200
        listed = client.get("/admin/changes", headers=ADMIN).json()["versions"]
        assert len(listed) == 3 and listed[0] == first[0]
        since = first[0]["fingerprint"][:20]
        body = client.get("/admin/changes", params={"since": since}, headers=ADMIN).json()
        assert body["added"] == ["send_fax"] and body["removed"] == ["convert_currency"] and body["changed"] == {}
        assert body["queries"] == 1 and body["after"] == listed[-1]["fingerprint"]
        unknown = client.get("/admin/changes", params={"since": "sha256:nope"}, headers=ADMIN)
        assert unknown.status_code == 400 and "names no version" in unknown.json()["error"]["message"]
