from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolsift import load_catalog
from toolsift.catalog import parse_catalog, parse_tool
from toolsift.errors import CatalogError
from toolsift.settings import BUNDLED_CATALOG

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_bundled_catalog_is_large_and_tagged() -> None:
    catalog = load_catalog(BUNDLED_CATALOG)
    assert len(catalog) >= 200
    assert all(tool.tags for tool in catalog)
    assert len(catalog.tags) >= 40
    assert all(tool.description for tool in catalog)


def test_native_json_yaml_and_jsonl_give_the_same_catalog(tmp_path: Path) -> None:
    tools = [
        {"name": "get_weather", "description": "Weather now", "parameters": WEATHER_SCHEMA, "tags": ["weather"]},
        {"name": "send_email", "description": "Send mail", "tags": ["email"]},
    ]
    as_json = load_catalog(write(tmp_path / "c.json", json.dumps(tools)))
    as_wrapped = load_catalog(write(tmp_path / "w.json", json.dumps({"tools": tools})))
    as_jsonl = load_catalog(write(tmp_path / "c.jsonl", "\n".join(json.dumps(t) for t in tools) + "\n\n"))
    import yaml

    as_yaml = load_catalog(write(tmp_path / "c.yaml", yaml.safe_dump({"tools": tools})))
    assert as_json.names == ["get_weather", "send_email"]
    assert {c.fingerprint for c in (as_json, as_wrapped, as_jsonl, as_yaml)} == {as_json.fingerprint}
    assert as_json.get("get_weather").parameters == WEATHER_SCHEMA  # type: ignore[union-attr]


def test_openai_chat_and_responses_forms() -> None:
    chat = parse_tool(
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather", "parameters": WEATHER_SCHEMA},
        }
    )
    responses = parse_tool(
        {"type": "function", "name": "get_weather", "description": "Weather", "parameters": WEATHER_SCHEMA}
    )
    assert chat == responses
    assert chat.parameter_names() == ["city"]


def test_anthropic_form() -> None:
    tool = parse_tool(
        {
            "name": "get_weather",
            "description": "Weather",
            "input_schema": WEATHER_SCHEMA,
            "cache_control": {"type": "ephemeral"},
        }
    )
    assert tool.name == "get_weather" and tool.parameters == WEATHER_SCHEMA


def test_mcp_tools_list_result_and_jsonrpc_response(tmp_path: Path) -> None:
    listed = {
        "tools": [
            {
                "name": "delete_repo",
                "title": "Delete repository",
                "description": "Delete a repository",
                "inputSchema": {"type": "object", "properties": {"repo": {"type": "string"}}},
                "annotations": {"destructiveHint": True, "readOnlyHint": False},
            }
        ],
        "nextCursor": None,
    }
    direct = load_catalog(write(tmp_path / "list.json", json.dumps(listed)))
    rpc = load_catalog(write(tmp_path / "rpc.json", json.dumps({"jsonrpc": "2.0", "id": 1, "result": listed})))
    tool = direct[0]
    assert tool.annotations.destructive is True and tool.annotations.read_only is False
    assert tool.annotations.title == "Delete repository"
    assert rpc.fingerprint == direct.fingerprint


def test_mixed_dialects_in_one_file() -> None:
    catalog = parse_catalog(
        [
            {"name": "a_tool", "description": "A"},
            {"type": "function", "function": {"name": "b_tool", "description": "B"}},
            {"name": "c_tool", "description": "C", "input_schema": {"type": "object"}},
            {"name": "d_tool", "inputSchema": {"type": "object"}},
        ]
    )
    assert catalog.names == ["a_tool", "b_tool", "c_tool", "d_tool"]
    assert catalog.get("d_tool").description == ""  # type: ignore[union-attr]


def test_duplicate_names_name_both_entries(tmp_path: Path) -> None:
    path = write(
        tmp_path / "dup.jsonl",
        '{"name": "x", "description": "one"}\n{"name": "y", "description": "two"}\n{"name": "x", "description": "three"}\n',
    )
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    message = str(caught.value)
    assert "dup.jsonl" in message and "entry 3" in message and "first defined at entry 1" in message
    assert caught.value.field == "name"


def test_missing_field_names_file_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.jsonl", '{"name": "ok", "description": "fine"}\n\n{"name": "broken"}\n')
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    message = str(caught.value)
    assert "bad.jsonl" in message and "line 3" in message and "'broken'" in message
    assert "field 'description'" in message and "required field is missing" in message


def test_invalid_json_line_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.jsonl", '{"name": "ok", "description": "fine"}\n{"name": \n')
    with pytest.raises(CatalogError, match="line 2.*invalid JSON"):
        load_catalog(path)


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        ({"type": "array"}, "type 'object'"),
        ({"type": "object", "properties": {"a": {"type": "strin"}}}, "not a valid JSON schema at properties/a/type"),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
            "'b', which is not in 'properties'",
        ),
        ({"type": "object", "properties": []}, "not a valid JSON schema"),
    ],
)
def test_bad_parameter_schemas(parameters: dict[str, object], expected: str) -> None:
    with pytest.raises(CatalogError) as caught:
        parse_catalog([{"name": "t", "description": "d", "parameters": parameters}], source="cat.json")
    assert expected in str(caught.value)
    assert caught.value.field == "parameters"
    assert "cat.json" in str(caught.value) and "entry 1 (tool 't')" in str(caught.value)


def test_yaml_non_string_keys_are_caught(tmp_path: Path) -> None:
    """YAML 1.2 reads ``on`` as a string (below); a number used as a key is still caught."""
    path = write(
        tmp_path / "c.yaml",
        "- name: lights\n  description: Lights\n  parameters: {type: object, properties: {200: {type: boolean}}}\n",
    )
    with pytest.raises(CatalogError, match='quote keys such as "on", "off", "yes", "no" and numbers'):
        load_catalog(path)


def test_yaml_keeps_on_off_yes_no_as_strings(tmp_path: Path) -> None:
    path = write(
        tmp_path / "c.yaml",
        "- name: set_lights\n  description: Switch the lights on or off.\n"
        "  parameters: {type: object, properties: {on: {type: string, enum: [on, off, yes, no]}, dim: {type: boolean,"
        " default: true}}}\n",
    )
    properties = load_catalog(path)[0].parameters["properties"]
    assert properties["on"]["enum"] == ["on", "off", "yes", "no"] and properties["dim"]["default"] is True


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".yaml"])
def test_an_empty_catalog_file_is_refused_whatever_its_type(tmp_path: Path, suffix: str) -> None:
    path = write(tmp_path / f"empty{suffix}", "\n" if suffix == ".jsonl" else ("[]" if suffix == ".json" else "[]\n"))
    with pytest.raises(CatalogError, match="has no tools"):
        load_catalog(path)


def test_a_file_that_is_not_utf8_names_the_byte_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"name": "ok", "description": "fine"}\n{"name": "caf\xe9", "description": "x"}\n')
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    message = str(caught.value)
    assert "is not UTF-8 text: byte 0xe9 at line 2" in message and "Save the file as UTF-8" in message


def test_unknown_field_is_a_typo_error() -> None:
    with pytest.raises(CatalogError, match="field 'descripton'.*unknown field"):
        parse_catalog([{"name": "t", "description": "d", "descripton": "typo"}])


@pytest.mark.parametrize("name", ["", " padded", "trailing ", "tab\tname", "new\nline"])
def test_bad_names(name: str) -> None:
    with pytest.raises(CatalogError, match="field 'name'"):
        parse_catalog([{"name": name, "description": "d"}])


def test_names_from_real_catalogs_are_accepted() -> None:
    names = ["hf:YituTech/conv-bert-base", "requestFirst Aid Assistance", "PDF&URLTool", "ns.tool/v2"]
    assert parse_catalog([{"name": n, "description": "d"} for n in names]).names == names


def test_file_level_errors(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="file not found"):
        load_catalog(tmp_path / "missing.json")
    with pytest.raises(CatalogError, match="unsupported file type '.txt'"):
        load_catalog(write(tmp_path / "c.txt", "[]"))
    with pytest.raises(CatalogError, match="needs a 'tools' list"):
        load_catalog(write(tmp_path / "o.json", '{"functions": []}'))
    with pytest.raises(CatalogError, match="expected a JSON object, got str"):
        load_catalog(write(tmp_path / "s.json", '["just a name"]'))


def test_fingerprint_ignores_order_and_key_order_but_not_content() -> None:
    a = {"name": "a", "description": "A", "tags": ["x"]}
    b = {"tags": ["y"], "description": "B", "name": "b"}
    first = parse_catalog([a, b])
    assert parse_catalog([b, a]).fingerprint == first.fingerprint
    changed = parse_catalog([a, {**b, "description": "B, changed"}])
    assert changed.fingerprint != first.fingerprint
    assert first.fingerprint.startswith("sha256:") and len(first.fingerprint) == 71


def test_tags_are_cleaned_and_counted() -> None:
    catalog = parse_catalog(
        [{"name": "a", "description": "A", "tags": [" x ", "x", "y"]}, {"name": "b", "description": "B", "tags": ["y"]}]
    )
    assert catalog[0].tags == ("x", "y")
    assert catalog.tag_counts() == {"x": 1, "y": 2}
