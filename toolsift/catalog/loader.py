"""Read catalogs from files or parsed data, in toolsift, OpenAI, Anthropic or MCP form.

Files: ``.json`` (a list of tools, or an object with a ``tools`` list such as an MCP
``tools/list`` result or its JSON-RPC response), ``.jsonl`` (one tool a line) and ``.yaml``.
Each entry's dialect is detected on its own unless ``dialect`` is given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import ValidationError

from toolsift.catalog.models import Catalog, Tool
from toolsift.errors import CatalogError, InputFileError
from toolsift.wire import DIALECTS as DIALECTS
from toolsift.wire import Dialect as Dialect

_NATIVE_HELP = (
    "A tool needs at least 'name' and 'description'; 'parameters' (a JSON schema of type "
    "'object'), 'tags' (list of strings), 'group' (a name), 'examples' (requests it answers) and 'annotations' "
    "are optional"
)


def load_catalog(path: str | Path, *, dialect: Dialect = "auto") -> Catalog:
    """Load and validate a catalog file. Raises CatalogError naming file, entry and field."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise CatalogError("file not found", source=source, fix="Pass the path of a .json, .jsonl or .yaml catalog")
    suffix = path.suffix.lower()
    text = utf8_text(path.read_bytes(), source).encode()
    groups: dict[str, str] = {}
    if suffix in (".jsonl", ".ndjson"):
        entries = list(_jsonl_entries(text, source))
    elif suffix in (".yaml", ".yml"):
        document = _parse_yaml(text, source)
        entries, groups = _entries_from_document(document, source, "entry"), _groups_section(document, source)
    elif suffix == ".json":
        document = _parse_json(text, source)
        entries, groups = _entries_from_document(document, source, "entry"), _groups_section(document, source)
    else:
        raise CatalogError(
            f"unsupported file type '{suffix or '(none)'}'",
            source=source,
            fix="Use .json, .jsonl or .yaml (.yml)",
        )
    if not entries:
        raise CatalogError("has no tools", source=source, fix="Add at least one tool, or pass the catalog you meant")
    return Catalog(_tools_from_entries(entries, source, dialect), source=source, groups=groups)


def parse_catalog(data: Any, *, source: str = "<data>", dialect: Dialect = "auto") -> Catalog:
    """Build a catalog from already-parsed data: a list of tool dicts or ``{"tools": [...],
    "groups": {...}}``."""
    entries = _entries_from_document(data, source, "entry")
    return Catalog(_tools_from_entries(entries, source, dialect), source=source, groups=_groups_section(data, source))


def _groups_section(document: Any, source: str) -> dict[str, str]:
    """A catalog's ``groups``: a mapping of name to description, or a list of ``{name,
    description}``; absent, no descriptions."""
    section = document.get("groups") if isinstance(document, dict) else None
    if section is None:
        return {}
    if isinstance(section, list):
        try:
            section = {entry["name"]: entry.get("description", "") for entry in section}
        except (TypeError, KeyError):
            raise CatalogError(
                "each entry of a 'groups' list needs a 'name'", source=source, field="groups",
                fix="Write groups as {name: description} or [{name, description}]",
            ) from None  # fmt: skip
    if not isinstance(section, dict):
        raise CatalogError(
            f"'groups' must be a mapping, not {type(section).__name__}", source=source, field="groups",
            fix="Write groups as {name: description} or [{name, description}]",
        )  # fmt: skip
    return {name: "" if description is None else description for name, description in section.items()}


def catalog_document(catalog: Catalog) -> dict[str, Any]:
    """``catalog`` as a toolsift-form document: its groups' descriptions (when any), then its tools."""
    groups = {"groups": dict(catalog.group_descriptions)} if catalog.group_descriptions else {}
    return {**groups, "tools": catalog.to_records()}


def save_catalog(catalog: Catalog, path: str | Path) -> list[str]:
    """Write ``catalog`` as ``.json`` (``{"groups", "tools"}``), ``.yaml`` or ``.jsonl`` (one tool
    a line; a groups section has no place there: said in the notes returned)."""
    target = Path(path)
    suffix = target.suffix.lower()
    document = catalog_document(catalog)
    if suffix in (".jsonl", ".ndjson"):
        target.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in document["tools"]))
        return (
            ["the groups' descriptions are not in a .jsonl catalog: write .json or .yaml to keep them"]
            if (catalog.group_descriptions)
            else []
        )
    if suffix in (".yaml", ".yml"):
        target.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    elif suffix == ".json":
        target.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    else:
        raise CatalogError(
            f"unsupported file type '{suffix or '(none)'}'", source=str(target), fix="Use .json, .jsonl or .yaml"
        )
    return []


def read_document(path: str | Path, what: str, error: type[InputFileError] = CatalogError) -> tuple[Any, str]:
    """A YAML or JSON settings file (``.json`` is JSON, anything else YAML), and its name for
    error messages; ``what`` names the file in the fix ("MCP servers file", "tenants file") and
    ``error`` is the class raised when it cannot be read."""
    file = Path(path)
    if not file.is_file():
        raise error("file not found", source=str(file), fix=f"Pass the path of your {what}")
    text = utf8_text(file.read_bytes(), str(file), error)
    try:
        return (orjson.loads(text) if file.suffix == ".json" else load_yaml(text)), str(file)
    except (orjson.JSONDecodeError, yaml.YAMLError) as problem:
        raise error(f"cannot parse ({problem})", source=str(file)) from None


def utf8_text(raw: bytes, source: str, error: type[InputFileError] = CatalogError) -> str:
    """The file's text; a file that is not UTF-8 is an error naming the first bad byte and its line."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        line = raw[: problem.start].count(b"\n") + 1
        raise error(
            f"is not UTF-8 text: byte 0x{raw[problem.start]:02x} at line {line}, byte {problem.start}",
            source=source,
            fix="Save the file as UTF-8 (most editors offer it under 'Save with encoding')",
        ) from None


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 booleans: only true and false (any case) are booleans;
    on, off, yes, no, y and n stay strings, so ``enum: [on, off]`` keeps its values."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_yaml(text: str | bytes) -> Any:
    return yaml.load(text, Loader=Yaml12Loader)  # noqa: S506 - a SafeLoader subclass


def parse_tool(entry: Mapping[str, Any], *, dialect: Dialect = "auto") -> Tool:
    """Convert one tool definition in any supported dialect to a Tool."""
    return _tool_from_entry(entry, "<data>", "entry 1", dialect)


def detect_dialect(entry: Mapping[str, Any]) -> str:
    if entry.get("type") == "function":
        return "openai"
    if "input_schema" in entry:
        return "anthropic"
    if "inputSchema" in entry:
        return "mcp"
    return "toolsift"


# -- reading documents ---------------------------------------------------------------------


def _parse_json(text: bytes, source: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise CatalogError(
            f"invalid JSON ({error})", source=source, fix="Fix the syntax at the position shown"
        ) from None


def _parse_yaml(text: bytes, source: str) -> Any:
    try:
        return load_yaml(text)
    except yaml.YAMLError as error:
        raise CatalogError(f"invalid YAML ({error})", source=source) from None


def _jsonl_entries(text: bytes, source: str) -> Iterator[tuple[str, Any]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise CatalogError(
                f"invalid JSON ({error})",
                source=source,
                entry=f"line {number}",
                fix="Each line of a .jsonl catalog must be one complete JSON object",
            ) from None


def _entries_from_document(document: Any, source: str, label: str) -> list[tuple[str, Any]]:
    if isinstance(document, dict):
        if isinstance(document.get("result"), dict):  # a JSON-RPC response to tools/list
            document = document["result"]
        if "tools" not in document:
            raise CatalogError(
                "an object catalog needs a 'tools' list",
                source=source,
                field="tools",
                fix='Write {"tools": [...]} or a plain list of tools',
            )
        document = document["tools"]
    if not isinstance(document, list):
        raise CatalogError(
            f"expected a list of tools, got {type(document).__name__}",
            source=source,
            fix='Write a list of tools or {"tools": [...]}',
        )
    return [(f"{label} {position}", entry) for position, entry in enumerate(document, start=1)]


# -- converting entries --------------------------------------------------------------------


def _tools_from_entries(entries: Iterable[tuple[str, Any]], source: str, dialect: Dialect) -> Iterator[Tool]:
    if dialect not in DIALECTS:
        raise CatalogError(f"unknown dialect '{dialect}'", fix=f"Use one of {', '.join(DIALECTS)}")
    for where, entry in entries:
        yield _tool_from_entry(entry, source, where, dialect)


def _tool_from_entry(entry: Any, source: str, where: str, dialect: Dialect) -> Tool:
    if not isinstance(entry, Mapping):
        raise CatalogError(f"expected a JSON object, got {type(entry).__name__}", source=source, entry=where)
    name = entry.get("name") or (entry.get("function") or {}).get("name")
    if name:
        where = f"{where} (tool '{name}')"
    chosen = detect_dialect(entry) if dialect == "auto" else dialect
    converted = _CONVERTERS[chosen](entry, source, where)
    fields = {key: value for key, value in converted.items() if value is not None}
    try:
        return Tool.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        problem = first["msg"]
        if first["type"] == "missing":
            problem = "required field is missing"
        elif first["type"] == "extra_forbidden":
            problem = "unknown field"
        raise CatalogError(problem, source=source, entry=where, field=field, fix=_NATIVE_HELP) from None


EXAMPLES_FIELD = "x-examples"
"""Where a provider-format entry (OpenAI, Anthropic) carries example requests."""
TAGS_FIELD = "x-tags"
GROUP_FIELD = "x-group"
"""Where a provider-format entry carries its tags and its group."""
MCP_EXAMPLES_KEY = "toolsift/examples"
MCP_TAGS_KEY = "toolsift/tags"
MCP_GROUP_KEY = "toolsift/group"
"""Where an MCP tool carries them: ``_meta: {"toolsift/examples": [...], "toolsift/tags": [...],
"toolsift/group": "..."}``."""


def _extension(entry: Mapping[str, Any], field: str) -> Any:
    """An ``x-`` field of a provider-format entry (or the same without ``x-``: ``tags``, as many
    files write it): on the entry, or on its ``function``."""
    function = entry.get("function")
    for key in (field, field.removeprefix("x-")):
        if isinstance(function, Mapping) and key in function:
            return function[key]
        if key in entry:
            return entry[key]
    return None


def _from_toolsift(entry: Mapping[str, Any], source: str, where: str) -> dict[str, Any]:
    return dict(entry)


def _from_openai(entry: Mapping[str, Any], source: str, where: str) -> dict[str, Any]:
    function = entry.get("function", entry)  # chat-completions nest it; the Responses API does not
    if not isinstance(function, Mapping):
        raise CatalogError("'function' must be an object", source=source, entry=where, field="function")
    return {
        "name": function.get("name"),
        "description": function.get("description", ""),
        "parameters": function.get("parameters") or {},
        "examples": _extension(entry, EXAMPLES_FIELD),
        "tags": _extension(entry, TAGS_FIELD),
        "group": _extension(entry, GROUP_FIELD),
    }


def _from_anthropic(entry: Mapping[str, Any], source: str, where: str) -> dict[str, Any]:
    return {
        "name": entry.get("name"),
        "description": entry.get("description", ""),
        "parameters": entry.get("input_schema") or {},
        "examples": _extension(entry, EXAMPLES_FIELD),
        "tags": _extension(entry, TAGS_FIELD),
        "group": _extension(entry, GROUP_FIELD),
    }


def _from_mcp(entry: Mapping[str, Any], source: str, where: str) -> dict[str, Any]:
    annotations = dict(entry.get("annotations") or {})
    if entry.get("title") and not annotations.get("title"):
        annotations["title"] = entry["title"]
    found = entry.get("_meta")
    meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    return {
        "name": entry.get("name"),
        "description": entry.get("description", ""),
        "parameters": entry.get("inputSchema") or {},
        "annotations": annotations,
        "examples": meta.get(MCP_EXAMPLES_KEY),
        "tags": meta.get(MCP_TAGS_KEY),
        "group": meta.get(MCP_GROUP_KEY),
    }


_CONVERTERS = {
    "toolsift": _from_toolsift,
    "openai": _from_openai,
    "anthropic": _from_anthropic,
    "mcp": _from_mcp,
}
