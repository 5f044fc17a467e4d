"""A catalog from an OpenAPI document (3.0 or 3.1, JSON or YAML): one tool per operation.

- **name**: the ``operationId``, or ``<method>_<path>``, made a name every provider takes
  (``^[a-zA-Z0-9_-]{1,64}$``; a name that had to be cut or that two operations would share gets 8
  hex digits of a hash).
- **description**: the summary, then the description (cut at a sentence end past 1,500
  characters); ``METHOD /path`` when the operation has neither.
- **parameters**: one JSON schema object: the path, query, header and cookie parameters (path-level
  ones included; a name two locations share is prefixed with its location), and the request
  body's properties (its ``application/json`` schema, else its first) beside them, or under
  ``body`` when they clash or the body is not an object (``readOnly`` properties left out: the
  server sets them). Local ``$ref``s are resolved (a schema
  that contains itself is cut where it recurs, said in a description); OpenAPI 3.0's ``nullable``
  and boolean ``exclusiveMinimum`` / ``exclusiveMaximum`` become JSON Schema.
- **tags**: the operation's tags (and ``deprecated``); its first tag is its **group**, described
  by the document's ``tags`` section; ``x-`` extensions of the operation are kept
  (``Tool.extensions``).
- **annotations**: what HTTP says of the method: ``GET`` / ``HEAD`` / ``OPTIONS`` read only,
  ``DELETE`` destructive, ``PUT`` / ``DELETE`` idempotent (the document is the operator's own).

An operation that cannot be read (a ``$ref`` to another file, a malformed parameter) is left out
and named in the notes returned beside the catalog.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from toolsift.catalog.loader import read_document
from toolsift.catalog.models import Catalog, Tool
from toolsift.errors import CatalogError

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
MAX_DESCRIPTION = 1500
MAX_DEPTH = 24
"""Schemas nested deeper than this are cut (a guard against runaway documents)."""
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
"""Header parameters OpenAPI says are ignored (the media type and security set them)."""
_BODY_TYPES = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")


class _Unreadable(Exception):
    """An operation that cannot be imported, and why."""


def load_openapi(path: str | Path) -> tuple[Catalog, list[str]]:
    """The catalog of an OpenAPI file, and notes on what was left out."""
    document, source = read_document(path, "OpenAPI document", CatalogError)
    return catalog_from_openapi(document, source=source)


def catalog_from_openapi(document: Any, *, source: str = "<openapi>") -> tuple[Catalog, list[str]]:
    """The catalog of a parsed OpenAPI document, and notes on what was left out."""
    _check_version(document, source)
    notes: list[str] = []
    tools: list[Tool] = []
    names: set[str] = set()
    for path, method, operation, shared in _operations(document, source):
        where = f"{method.upper()} {path}"
        try:
            tool = _tool(document, path, method, operation, shared, names)
        except _Unreadable as problem:
            notes.append(f"{where}: left out ({problem})")
            continue
        except CatalogError as problem:
            notes.append(f"{where}: left out ({problem})")
            continue
        names.add(tool.name)
        tools.append(tool)
    if not tools:
        raise CatalogError(
            "has no operation toolsift could read", source=source, fix="Check its 'paths'; " + "; ".join(notes[:3])
        )
    described = {tag["name"]: str(tag.get("description") or "")[:1024] for tag in _list(document.get("tags"))
                 if isinstance(tag, Mapping) and isinstance(tag.get("name"), str)}  # fmt: skip
    used = {tool.group for tool in tools}
    groups = {_group(name): text for name, text in described.items() if _group(name) in used and text.strip()}
    return Catalog(tools, source=source, groups=groups), notes


def _check_version(document: Any, source: str) -> None:
    if not isinstance(document, Mapping):
        raise CatalogError("is not an OpenAPI document (expected an object)", source=source)
    if "swagger" in document:
        raise CatalogError(
            f"is Swagger {document['swagger']}, not OpenAPI 3", source=source,
            fix="Convert it first (e.g. npx swagger2openapi spec.json -o openapi.json)",
        )  # fmt: skip
    version = str(document.get("openapi", ""))
    if not version.startswith(("3.0", "3.1")):
        raise CatalogError(
            f"has openapi: {version or '(missing)'}; toolsift reads OpenAPI 3.0 and 3.1", source=source,
            fix="Pass an OpenAPI 3.0 or 3.1 document (its top level has 'openapi' and 'paths')",
        )  # fmt: skip


def _operations(document: Mapping[str, Any], source: str) -> Iterator[tuple[str, str, Mapping[str, Any], list[Any]]]:
    paths = document.get("paths")
    if not isinstance(paths, Mapping):
        raise CatalogError("has no 'paths' object", source=source, field="paths")
    for path, item in paths.items():
        if not isinstance(item, Mapping):
            continue
        if "$ref" in item:
            item = {**_pointer(document, item["$ref"]), **{k: v for k, v in item.items() if k != "$ref"}}
        shared = _list(item.get("parameters"))
        for method, operation in item.items():  # in the document's order
            if method in METHODS and isinstance(operation, Mapping):
                yield str(path), str(method), operation, shared


def _tool(
    document: Mapping[str, Any],
    path: str,
    method: str,
    operation: Mapping[str, Any],
    shared: list[Any],
    taken: set[str],
) -> Tool:
    tags = [str(tag) for tag in _list(operation.get("tags")) if isinstance(tag, str) and tag.strip()]
    if operation.get("deprecated") is True:
        tags.append("deprecated")
    return Tool(
        name=_name(operation.get("operationId"), method, path, taken),
        description=_description(operation, method, path),
        parameters=_parameters(document, operation, shared),
        tags=tuple(tags),
        group=_group(tags[0]) if tags and tags[0] != "deprecated" else None,
        annotations={"read_only": True} if method in ("get", "head", "options")
        else {"destructive": True, "idempotent": True} if method == "delete"
        else {"idempotent": True} if method == "put" else {},  # type: ignore[arg-type]
        extensions={key: value for key, value in operation.items() if isinstance(key, str) and key.startswith("x-")},
    )  # fmt: skip


def _name(operation_id: Any, method: str, path: str, taken: set[str]) -> str:
    wanted = str(operation_id) if isinstance(operation_id, str) and operation_id.strip() else f"{method}_{path}"
    name = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_-]", "_", wanted)).strip("_") or method
    if len(name) > 64 or name in taken:
        name = f"{name[:55]}_{hashlib.sha256(f'{method} {path}'.encode()).hexdigest()[:8]}"
    return name


def _group(tag: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", tag)[:64] or "_"


def _description(operation: Mapping[str, Any], method: str, path: str) -> str:
    parts = [str(operation.get(key) or "").strip() for key in ("summary", "description")]
    text = "\n\n".join(dict.fromkeys(part for part in parts if part)) or f"{method.upper()} {path}"
    if len(text) <= MAX_DESCRIPTION:
        return text
    cut = text[:MAX_DESCRIPTION]
    end = max(cut.rfind(". "), cut.rfind(".\n"))
    return cut[: end + 1] if end > MAX_DESCRIPTION // 2 else cut.rstrip() + "…"


def _parameters(document: Mapping[str, Any], operation: Mapping[str, Any], shared: list[Any]) -> dict[str, Any]:
    declared: dict[tuple[str, str], Mapping[str, Any]] = {}
    for raw in [*shared, *_list(operation.get("parameters"))]:  # the operation's win over the path's
        parameter = _resolve(document, raw, ()) if isinstance(raw, Mapping) else None
        if not isinstance(parameter, Mapping) or not isinstance(parameter.get("name"), str):
            raise _Unreadable("a parameter without a name")
        declared[(str(parameter.get("in", "query")), parameter["name"])] = parameter
    properties: dict[str, Any] = {}
    required: list[str] = []
    for (location, name), parameter in declared.items():
        if location == "header" and name.lower() in _IGNORED_HEADERS:
            continue
        key = name if name not in properties else f"{location}_{name}"
        properties[key] = _parameter_schema(document, parameter)
        if parameter.get("required") is True or location == "path":
            required.append(key)
    _add_body(document, operation.get("requestBody"), properties, required)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(dict.fromkeys(required))
    return schema


def _parameter_schema(document: Mapping[str, Any], parameter: Mapping[str, Any]) -> dict[str, Any]:
    schema: Any = parameter.get("schema")
    content = parameter.get("content")
    if schema is None and isinstance(content, Mapping) and content:  # the content form: one media type
        media = next(iter(content.values()))
        schema = media.get("schema") if isinstance(media, Mapping) else None
    converted = _schema(document, schema or {}, ())
    if not isinstance(converted, dict):
        raise _Unreadable("a parameter whose schema is not an object")
    description = parameter.get("description")
    if isinstance(description, str) and description.strip() and "description" not in converted:
        converted["description"] = description.strip()
    return converted


def _add_body(document: Mapping[str, Any], body: Any, properties: dict[str, Any], required: list[str]) -> None:
    if not isinstance(body, Mapping):
        return
    body = _resolve(document, body, ())
    content = body.get("content") if isinstance(body, Mapping) else None
    if not isinstance(content, Mapping) or not content:
        return
    media = next((t for t in _BODY_TYPES if t in content), None) or next(
        (t for t in content if str(t).endswith("+json")), next(iter(content))
    )
    schema = _writable(_schema(document, (content[media] or {}).get("schema") or {}, ()))
    needed = body.get("required") is True
    own = schema.get("properties")
    if schema.get("type") in (None, "object") and isinstance(own, Mapping) and own and not set(own) & set(properties):
        properties.update(own)
        if needed:
            required += [name for name in _list(schema.get("required")) if name in own]
        return
    key = "body" if "body" not in properties else "request_body"
    if isinstance(body.get("description"), str) and "description" not in schema:
        schema["description"] = body["description"].strip()
    properties[key] = schema
    if needed:
        required.append(key)


def _schema(document: Mapping[str, Any], node: Any, seen: tuple[str, ...]) -> Any:
    """``node`` with local ``$ref``s resolved and OpenAPI 3.0's keywords made JSON Schema."""
    if isinstance(node, list):
        return [_schema(document, item, seen) for item in node]
    if not isinstance(node, Mapping):
        return node
    if len(seen) > MAX_DEPTH:
        return {"description": "(nested too deep to show)"}
    if isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        if ref in seen:  # a schema that contains itself: cut where it recurs
            return {"description": f"(recursive: the same shape as {ref.rsplit('/', 1)[-1]})"}
        target = _schema(document, _pointer(document, ref), (*seen, ref))
        siblings = {key: _schema(document, value, seen) for key, value in node.items() if key != "$ref"}
        return {**target, **siblings} if isinstance(target, dict) else target
    converted: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties", "$defs", "definitions") and isinstance(value, Mapping):
            converted[key] = {name: _schema(document, item, (*seen, f"{key}/{name}")) for name, item in value.items()}
        elif key in ("example", "xml", "discriminator", "externalDocs"):
            continue  # documentation for humans, not a constraint
        else:
            converted[key] = _schema(document, value, seen)
    return _json_schema(converted)


def _writable(schema: Any) -> Any:
    """A request body's schema without its ``readOnly`` properties (the server sets those)."""
    if not isinstance(schema, dict):
        return schema
    if isinstance(schema.get("properties"), dict):
        kept = {name: _writable(spec) for name, spec in schema["properties"].items()
                if not (isinstance(spec, dict) and spec.get("readOnly") is True)}  # fmt: skip
        schema = {**schema, "properties": kept}
        if isinstance(schema.get("required"), list):
            schema["required"] = [name for name in schema["required"] if name in kept]
    if isinstance(schema.get("items"), dict):
        schema = {**schema, "items": _writable(schema["items"])}
    return schema


def _json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.0's ``nullable`` and boolean exclusive bounds, as JSON Schema says them."""
    if schema.pop("nullable", False) is True and isinstance(schema.get("type"), str):
        schema["type"] = [schema["type"], "null"]
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(schema.get(exclusive), bool) and schema.pop(exclusive) and bound in schema:
            schema[exclusive] = schema.pop(bound)  # true: the bound is exclusive; false: dropped
    return schema


def _resolve(document: Mapping[str, Any], node: Mapping[str, Any], seen: tuple[str, ...]) -> Any:
    """A parameter or request body, through its ``$ref`` (which may lead to another ``$ref``)."""
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
        if node["$ref"] in seen:
            raise _Unreadable(f"{node['$ref']} refers to itself")
        seen = (*seen, node["$ref"])
        node = _pointer(document, node["$ref"])
    return node


def _pointer(document: Mapping[str, Any], ref: str) -> Any:
    if not ref.startswith("#/"):
        raise _Unreadable(f"$ref {ref!r} points outside this document; bundle it first (e.g. npx @redocly/cli bundle)")
    node: Any = document
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            raise _Unreadable(f"$ref {ref!r} points at nothing")
        node = node[part]
    return node


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
