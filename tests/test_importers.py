"""Bringing your own tools: OpenAPI documents (real public ones from npm: the petstore in 3.0 and
3.1, JSON and YAML, ReadMe's edge cases, GitHub's REST API), a snapshot of MCP servers, and
LangChain, LlamaIndex and plain Python functions (the libraries' real classes).

No ``from __future__ import annotations`` here: LlamaIndex builds a tool's schema from the
function's annotations as objects, and a string annotation breaks it (its limitation, not ours:
``from_functions`` resolves them)."""

import json
import re
from pathlib import Path
from typing import Annotated, Any

import pytest
from click.testing import CliRunner
from pydantic import Field

from toolsift import Router
from toolsift.catalog import load_catalog
from toolsift.catalog.loader import save_catalog
from toolsift.catalog.openapi import catalog_from_openapi, load_openapi
from toolsift.catalog.python import from_functions, from_langchain, from_llamaindex
from toolsift.cli import main
from toolsift.curation.lint import lint_catalog
from toolsift.embeddings import HashingEmbedder
from toolsift.errors import CatalogError

SPECS = Path(__file__).parent / "openapi_specs" / "node_modules"
EXAMPLES = SPECS / "@readme" / "oas-examples"
GITHUB = SPECS / "@octokit" / "openapi" / "generated" / "api.github.com.json"
PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def spec(path: str) -> Path:
    found = EXAMPLES / path
    if not found.is_file():
        raise AssertionError(f"{found} is missing: run `make openapi-specs` (npm installs the pinned documents)")
    return found


# -- OpenAPI: real documents ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("path", ["3.0/json/petstore.json", "3.0/yaml/petstore.yaml", "3.1/json/petstore.json"])
def test_the_petstore_is_one_tool_per_operation(path: str) -> None:
    catalog, notes = load_openapi(spec(path))
    assert notes == [] and len(catalog) == 20
    assert {"addPet", "getPetById", "deletePet", "loginUser", "uploadFile"} <= set(catalog.names)
    pet = catalog.get("getPetById")
    assert pet is not None and pet.parameters["required"] == ["petId"] and pet.annotations.read_only is True
    assert pet.tags == ("pet",) and pet.group == "pet" and "Returns a single pet" in pet.description
    added = catalog.get("addPet")
    assert added is not None and {"name", "photoUrls", "status"} <= set(added.parameters["properties"])
    assert "id" not in added.parameters["properties"]  # readOnly: the server sets it
    assert set(added.parameters["required"]) == {"name", "photoUrls"}
    assert catalog.get("deletePet").annotations.destructive is True  # type: ignore[union-attr]
    assert catalog.group_descriptions == {"pet": "Everything about your Pets", "store": "Access to Petstore orders",
                                          "user": "Operations about user"}  # fmt: skip
    form = catalog.get("updatePetWithForm")
    assert form is not None and {"petId", "name", "status"} == set(form.parameters["properties"])
    array = catalog.get("createUsersWithArrayInput")
    assert array is not None and array.parameters["properties"]["body"]["type"] == "array"  # not an object: body


@pytest.mark.slow
def test_recursive_schemas_are_cut_where_they_recur_and_extensions_kept() -> None:
    catalog, _ = load_openapi(spec("3.0/json/schema-circular.json"))
    text = json.dumps([tool.parameters for tool in catalog])
    assert "(recursive: the same shape as" in text
    extended, _ = load_openapi(spec("3.0/json/readme-extensions.json"))
    assert any(tool.extensions for tool in extended)
    assert all(key.startswith("x-") for tool in extended for key in tool.extensions)
    common, _ = load_openapi(spec("3.0/json/parameters-common.json"))  # path-level parameters apply to each operation
    assert all(
        "id" in tool.parameters["properties"] for tool in common if "{id}" in tool.description or "id" in tool.name
    )


@pytest.mark.slow
def test_githubs_rest_api_imports_whole_and_routes() -> None:
    if not GITHUB.is_file():
        raise AssertionError(f"{GITHUB} is missing: run `make openapi-specs`")
    catalog, notes = load_openapi(GITHUB)
    assert len(catalog) > 1000 and notes == []
    assert all(PROVIDER_NAME.match(name) for name in catalog.names)  # 'repos/get' -> 'repos_get'
    assert "repos_get" in catalog and "issues_create" in catalog
    groups = catalog.groups()
    assert len(groups) > 30 and "repos" in catalog.group_descriptions
    codes = {finding.code for finding in lint_catalog(catalog).findings}
    assert "group-too-large" in codes  # repos holds ~200 operations: split it before sending namespaces
    router = Router.build(catalog, HashingEmbedder(64))
    assert router.route("create an issue", k=5, min_confidence=0.0).matches


# -- OpenAPI: what the importer does with odd documents ---------------------------------------


def document(paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths, **extra}


def test_names_are_made_provider_valid_and_unique() -> None:
    long = "x" * 80
    paths = {
        "/a/{id}": {"get": {"summary": "A."}, "post": {"operationId": "do/thing", "summary": "B."}},
        "/b": {"get": {"operationId": "do thing", "summary": "C."}, "put": {"operationId": long, "summary": "D."}},
    }
    catalog, _ = catalog_from_openapi(document(paths))
    assert catalog.names[:2] == ["get_a_id", "do_thing"]
    assert re.fullmatch(r"do_thing_[0-9a-f]{8}", catalog.names[2])  # taken: the operation's hash tells it apart
    assert re.fullmatch(r"x{55}_[0-9a-f]{8}", catalog.names[3])  # too long: cut, with the hash
    assert all(PROVIDER_NAME.match(name) for name in catalog.names) and len(set(catalog.names)) == 4


def test_openapi_30_keywords_become_json_schema_and_bad_operations_are_noted() -> None:
    schema = {"type": "integer", "nullable": True, "minimum": 0, "exclusiveMinimum": True, "example": 3}
    paths = {
        "/n": {"get": {"operationId": "n", "parameters": [{"name": "count", "in": "query", "schema": schema}]}},
        "/x": {"get": {"operationId": "x", "parameters": [{"$ref": "other.yaml#/components/parameters/P"}]}},
    }
    catalog, notes = catalog_from_openapi(document(paths))
    count = catalog.get("n").parameters["properties"]["count"]  # type: ignore[union-attr]
    assert count == {"type": ["integer", "null"], "exclusiveMinimum": 0}
    assert catalog.names == ["n"] and len(notes) == 1 and "GET /x" in notes[0] and "bundle it first" in notes[0]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"swagger": "2.0", "paths": {}}, "Swagger 2.0, not OpenAPI 3"),
        ({"openapi": "4.0", "paths": {}}, "reads OpenAPI 3.0 and 3.1"),
        ({"openapi": "3.1.0"}, "no 'paths'"),
        ({"openapi": "3.1.0", "paths": {}}, "no operation"),
    ],
)
def test_a_document_toolsift_cannot_read_says_why(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        catalog_from_openapi(bad, source="spec.json")


@pytest.mark.slow
def test_import_openapi_writes_a_catalog_build_and_serve_take(tmp_path: Path) -> None:
    for suffix in (".yaml", ".json", ".jsonl"):
        out = tmp_path / f"petstore{suffix}"
        done = CliRunner().invoke(main, ["import", "openapi", str(spec("3.1/json/petstore.json")), "--out", str(out)])
        assert done.exit_code == 0, done.output
        assert "imported 20 tools in 3 groups" in done.output
        loaded = load_catalog(out)
        assert loaded.names == load_openapi(spec("3.1/json/petstore.json"))[0].names
        assert loaded.group_descriptions == ({} if suffix == ".jsonl" else {"pet": "Everything about your Pets",
                                             "store": "Access to Petstore orders", "user": "Operations about user"})  # fmt: skip
        if suffix == ".jsonl":
            assert "not in a .jsonl catalog" in done.output
    printed = CliRunner().invoke(main, ["import", "openapi", str(spec("3.0/json/petstore.json"))])
    assert json.loads(printed.stdout)["tools"][0]["name"] == "addPet"


# -- Python tools -------------------------------------------------------------------------------


def get_weather(city: Annotated[str, Field(description="The city")], days: int = 1) -> str:
    """Weather forecast for a city, for the next days."""
    return "sun"


def test_plain_functions_langchain_and_llamaindex_tools_become_catalogs(tmp_path: Path) -> None:
    from langchain_core.tools import StructuredTool, tool
    from llama_index.core.tools import FunctionTool

    @tool
    def search_web(query: str, limit: int = 5) -> str:
        """Search the web for pages about a query."""
        return ""

    functions = from_functions([get_weather], tags=["weather"], group="forecast",
                               examples={"get_weather": ["will it rain in Lisbon"]})  # fmt: skip
    [mine] = functions
    assert mine.description == "Weather forecast for a city, for the next days."
    assert mine.parameters == {"type": "object", "required": ["city"], "properties": {
        "city": {"type": "string", "description": "The city"}, "days": {"type": "integer", "default": 1}}}  # fmt: skip
    assert (mine.tags, mine.group, mine.examples) == (("weather",), "forecast", ("will it rain in Lisbon",))

    structured = StructuredTool.from_function(get_weather)
    chain = from_langchain([search_web, structured], tags={"search_web": ["web"]})
    assert chain.names == ["search_web", "get_weather"] and chain.get("search_web").tags == ("web",)  # type: ignore[union-attr]
    assert chain.get("get_weather").parameters["properties"]["city"]["description"] == "The city"  # type: ignore[union-attr]
    llama = from_llamaindex([FunctionTool.from_defaults(fn=get_weather)])
    assert llama.names == ["get_weather"] and llama.get("get_weather").parameters["required"] == ["city"]  # type: ignore[union-attr]
    save_catalog(chain, tmp_path / "mine.json")
    assert load_catalog(tmp_path / "mine.json").names == chain.names

    def untyped(city):  # type: ignore[no-untyped-def]
        return city

    with pytest.raises(TypeError, match="'city' has no type hint"):
        from_functions([untyped])


# -- MCP servers ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_import_mcp_snapshots_the_servers_tools_grouped_by_server(tmp_path: Path) -> None:
    from gateway_kit import memory, write_servers

    servers = write_servers(tmp_path / "servers.json", {"notes": {**memory(tmp_path / "memory.jsonl"),
                            "description": "A knowledge graph of what the user told us", "prefix": "kg_"}})  # fmt: skip
    out = tmp_path / "snapshot.yaml"
    done = CliRunner().invoke(main, ["import", "mcp", str(servers), "--out", str(out)])
    assert done.exit_code == 0, done.output
    catalog = load_catalog(out)
    assert len(catalog) >= 5 and all(name.startswith("kg_") for name in catalog.names)
    assert "kg_create_entities" in catalog and {tool.group for tool in catalog} == {"notes"}
    assert catalog.group_descriptions == {"notes": "A knowledge graph of what the user told us"}
    assert all("mcp:notes" in tool.tags for tool in catalog)
