"""The tool model and the catalog that holds tools in a fixed order."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

import jsonschema_rs
import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolsift.catalog.names import PROVIDER_NAME_RULE, wire_name
from toolsift.errors import CatalogError
from toolsift.types import JSONSchema

MAX_EXAMPLE_CHARS = 8192
MAX_GROUP_DESCRIPTION_CHARS = 1024
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
GROUP_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
"""A group's name: what providers take as a namespace's name (after ``wire_name``), and safe in
a comma-separated rule."""
GROUP_TAG_PREFIX = "group:"
"""Rules name a group as a tag: ``group:github`` (every tool carries its group's tag)."""


class ToolAnnotations(BaseModel):
    """Behaviour hints, named as in MCP (`readOnlyHint` ...) with snake_case aliases accepted."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    title: str | None = None
    read_only: bool | None = Field(default=None, alias="readOnlyHint")
    destructive: bool | None = Field(default=None, alias="destructiveHint")
    idempotent: bool | None = Field(default=None, alias="idempotentHint")
    open_world: bool | None = Field(default=None, alias="openWorldHint")

    def is_empty(self) -> bool:
        return all(value is None for value in self.model_dump().values())

    def to_mcp(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


class Tool(BaseModel):
    """One tool: what an LLM needs to call it, plus tags used by routing rules."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=256)
    description: str
    parameters: JSONSchema = Field(default_factory=dict)
    tags: tuple[str, ...] = ()
    annotations: ToolAnnotations = Field(default_factory=ToolAnnotations)
    examples: tuple[str, ...] = ()
    """Example requests this tool answers: part of its embedding text, and each one a view of
    the tool in the ranking (``toolsift.router.usage``)."""
    group: str | None = Field(default=None, pattern=GROUP_PATTERN)
    """The group the tool belongs to (one job, one service: an MCP server's tools are grouped by
    server). Rules name it as the tag ``group:<name>``; OpenAI's deferred loading can send each
    group as a namespace."""
    extensions: dict[str, Any] = Field(default_factory=dict)
    """``x-`` fields a source carried (an OpenAPI operation's): kept for the catalog's owner,
    never sent to a model."""
    source: str | None = None

    @field_validator("extensions")
    @classmethod
    def _check_extensions(cls, extensions: dict[str, Any]) -> dict[str, Any]:
        wrong = [key for key in extensions if not key.startswith("x-")]
        if wrong:
            raise ValueError(f"extension keys start with 'x-': {', '.join(wrong[:3])}")
        return extensions

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if name != name.strip() or _CONTROL_CHARS.search(name):
            raise ValueError("must not start or end with whitespace, nor contain control characters")
        return name

    @field_validator("tags")
    @classmethod
    def _normalise_tags(cls, tags: tuple[str, ...]) -> tuple[str, ...]:
        cleaned: list[str] = []
        for tag in tags:
            tag = tag.strip()
            if not tag:
                raise ValueError("tags must be non-empty strings")
            if tag.startswith(GROUP_TAG_PREFIX):
                raise ValueError(f"the tag {tag!r} is reserved for groups: set the tool's 'group' field instead")
            if tag not in cleaned:
                cleaned.append(tag)
        return tuple(cleaned)

    @field_validator("examples")
    @classmethod
    def _check_examples(cls, examples: tuple[str, ...]) -> tuple[str, ...]:
        cleaned = tuple(dict.fromkeys(example.strip() for example in examples))
        if any(not example for example in cleaned):
            raise ValueError("examples must be non-empty requests")
        if any(len(example) > MAX_EXAMPLE_CHARS for example in cleaned):
            raise ValueError(f"an example is over {MAX_EXAMPLE_CHARS} characters; write it as a user would ask")
        return cleaned

    @field_validator("parameters")
    @classmethod
    def _check_parameters(cls, schema: JSONSchema) -> JSONSchema:
        if not schema:
            return schema
        _check_keys_are_strings(schema, "parameters")
        declared_type = schema.get("type", "object")
        if declared_type != "object":
            raise ValueError(f"the top-level schema must have type 'object', not {declared_type!r}")
        try:  # against the JSON Schema meta-schema (2020-12 unless "$schema" says otherwise)
            jsonschema_rs.meta.validate(schema)
        except jsonschema_rs.ValidationError as error:
            path = "/".join(str(p) for p in error.instance_path) or "(root)"
            raise ValueError(f"not a valid JSON schema at {path}: {error.message.splitlines()[0]}") from None
        properties = schema.get("properties", {})
        for required in schema.get("required", []):
            if required not in properties:
                raise ValueError(f"'required' lists {required!r}, which is not in 'properties'")
        return schema

    @property
    def rule_tags(self) -> tuple[str, ...]:
        """The tags rules see: the tool's own, and ``group:<name>`` for its group."""
        return self.tags if self.group is None else (*self.tags, GROUP_TAG_PREFIX + self.group)

    def parameter_names(self) -> list[str]:
        properties = self.parameters.get("properties", {})
        return list(properties) if isinstance(properties, dict) else []

    def parameter_descriptions(self) -> list[str]:
        """The ``description`` of each parameter and its allowed (``enum``) values, nested
        objects and array items included, in schema order."""
        found: list[str] = []
        _collect_descriptions(self.parameters, found)
        return found

    def canonical_json(self) -> bytes:
        """Bytes that are identical for identical tools, whatever order their keys came in."""
        return orjson.dumps(self.model_dump(mode="json", exclude_defaults=True), option=orjson.OPT_SORT_KEYS)


class Catalog:
    """An ordered, name-unique collection of tools, and what its groups are for. Immutable once
    built."""

    def __init__(
        self, tools: Iterable[Tool], *, source: str = "<memory>", groups: Mapping[str, str] | None = None
    ) -> None:
        self.source = source
        self._tools: tuple[Tool, ...] = tuple(tools)
        self._group_descriptions = check_groups(groups or {}, source)
        self._positions: dict[str, int] = {}
        self._digests: dict[str, str] = {}
        for position, tool in enumerate(self._tools):
            if tool.name in self._positions:
                first = self._positions[tool.name]
                raise CatalogError(
                    f"duplicate tool name (first defined at entry {first + 1})",
                    source=source,
                    entry=f"entry {position + 1} (tool '{tool.name}')",
                    field="name",
                    fix="Tool names must be unique; rename or remove one of them",
                )
            self._positions[tool.name] = position
        self._real_names = self._check_wire_names()

    def _check_wire_names(self) -> dict[str, str]:
        """Wire name -> real name, for the tools whose names providers would refuse (see
        ``catalog.names``); a wire name that another tool has, as its own or as its wire name, is
        an error, so every wire name maps back to one tool."""
        real_names: dict[str, str] = {}
        for position, tool in enumerate(self._tools):
            wire = wire_name(tool.name)
            if wire == tool.name:
                continue
            other = real_names.get(wire) or (wire if wire in self._positions else None)
            if other is not None:
                raise CatalogError(
                    f"is sent to providers as '{wire}', which is also the name sent for '{other}'",
                    source=self.source,
                    entry=f"entry {position + 1} (tool '{tool.name}')",
                    field="name",
                    fix=f"Rename one of them to match {PROVIDER_NAME_RULE}",
                )
            real_names[wire] = tool.name
        return real_names

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __getitem__(self, position: int) -> Tool:
        return self._tools[position]

    def __contains__(self, name: object) -> bool:
        return name in self._positions

    def __repr__(self) -> str:
        return f"Catalog({len(self)} tools from {self.source}, {self.fingerprint[:19]})"

    @property
    def tools(self) -> tuple[Tool, ...]:
        return self._tools

    @property
    def names(self) -> list[str]:
        return [tool.name for tool in self._tools]

    def get(self, name: str) -> Tool | None:
        position = self._positions.get(name)
        return None if position is None else self._tools[position]

    def position(self, name: str) -> int:
        return self._positions[name]

    def resolve(self, name: str) -> str:
        """The catalog name for ``name``, which may be a tool's own name or its wire name (the
        name sent to providers); an unknown name comes back as it is."""
        return name if name in self._positions else self._real_names.get(name, name)

    @property
    def renamed(self) -> Mapping[str, str]:
        """Wire name -> catalog name, for the tools whose names providers would refuse."""
        return self._real_names

    @cached_property
    def tags(self) -> frozenset[str]:
        return frozenset(tag for tool in self._tools for tag in tool.tags)

    @cached_property
    def rule_tags(self) -> frozenset[str]:
        """Every tag a rule may name: the tools' tags and ``group:<name>`` for each group."""
        return frozenset(tag for tool in self._tools for tag in tool.rule_tags)

    @property
    def group_descriptions(self) -> Mapping[str, str]:
        """What each group is for, as the catalog's ``groups`` section says (sorted by name)."""
        return self._group_descriptions

    def groups(self) -> dict[str, tuple[Tool, ...]]:
        """Each group's tools, groups by name and tools in catalog order (ungrouped tools left out)."""
        found: dict[str, list[Tool]] = {}
        for tool in self._tools:
            if tool.group is not None:
                found.setdefault(tool.group, []).append(tool)
        return {name: tuple(found[name]) for name in sorted(found)}

    def describe_group(self, name: str, members: Sequence[str]) -> str:
        """The group's description; without one, a line naming ``members`` (the group's tools the
        reader may see: never name one beyond them)."""
        described = self._group_descriptions.get(name)
        if described:
            return described
        shown = ", ".join(members[:8]) + (f" and {len(members) - 8} more" if len(members) > 8 else "")
        return f"Tools of {name}: {shown}"

    def tag_counts(self) -> Mapping[str, int]:
        counts: dict[str, int] = {}
        for tool in self._tools:
            for tag in tool.tags:
                counts[tag] = counts.get(tag, 0) + 1
        return dict(sorted(counts.items()))

    def digest(self, name: str) -> str:
        """sha256 of one tool's canonical JSON (remembered): equal digests, equal definitions."""
        found = self._digests.get(name)
        if found is None:
            found = hashlib.sha256(self._tools[self._positions[name]].canonical_json()).hexdigest()
            self._digests[name] = found
        return found

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the tools' canonical JSON, in name order (load order does not change it), and
        of the groups' descriptions when there are any."""
        tools = fingerprint_tools(self._tools)
        if not self._group_descriptions:
            return tools
        described = orjson.dumps(self._group_descriptions, option=orjson.OPT_SORT_KEYS)
        return "sha256:" + hashlib.sha256(tools.encode() + b"\n" + described).hexdigest()

    def to_records(self) -> list[dict[str, Any]]:
        return [tool.model_dump(mode="json", exclude_defaults=True) for tool in self._tools]

    def with_tools(self, tools: Iterable[Tool]) -> Catalog:
        """A catalog of ``tools`` from the same source, keeping the groups' descriptions."""
        return Catalog(tools, source=self.source, groups=self._group_descriptions)


def check_groups(groups: Mapping[str, str], source: str) -> dict[str, str]:
    """The ``groups`` section, checked: valid names, descriptions that are plain text."""
    checked: dict[str, str] = {}
    for name, description in sorted(groups.items()):
        if not isinstance(name, str) or not re.fullmatch(GROUP_PATTERN, name):
            raise CatalogError(
                "is not a valid group name", source=source, entry=f"group {name!r}", field="groups",
                fix="Use 1 to 64 letters, digits, '_', '.' or '-'",
            )  # fmt: skip
        if not isinstance(description, str) or len(description) > MAX_GROUP_DESCRIPTION_CHARS:
            raise CatalogError(
                f"needs a description of at most {MAX_GROUP_DESCRIPTION_CHARS} characters",
                source=source, entry=f"group '{name}'", field="groups",
                fix="Write what the group's tools are for in a sentence or two",
            )  # fmt: skip
        checked[name] = description.strip()
    return checked


def _check_keys_are_strings(value: Any, path: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(
                    f"key {key!r} under {path} is a {type(key).__name__}, not a string; in YAML, "
                    'quote keys such as "on", "off", "yes", "no" and numbers'
                )
            _check_keys_are_strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for position, item in enumerate(value):
            _check_keys_are_strings(item, f"{path}[{position}]")


def fingerprint_tools(tools: Iterable[Tool]) -> str:
    """sha256 of a set of tools: the order they come in does not matter."""
    return fingerprint_sequence(sorted(tools, key=lambda t: t.name))


def fingerprint_sequence(tools: Iterable[Tool]) -> str:
    """sha256 of a list of tools in the order given: equal values mean an identical tools array."""
    digest = hashlib.sha256()
    for tool in tools:
        digest.update(tool.canonical_json())
        digest.update(b"\n")
    return f"sha256:{digest.hexdigest()}"


def _collect_descriptions(schema: Any, found: list[str], depth: int = 0) -> None:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or depth > 8:
        return
    for spec in properties.values():
        if not isinstance(spec, dict):
            continue
        description = spec.get("description")
        if isinstance(description, str) and description.strip():
            found.append(description.strip())
        choices = spec.get("enum")
        if isinstance(choices, list) and choices:
            found.append(", ".join(str(choice) for choice in choices))
        _collect_descriptions(spec, found, depth + 1)
        _collect_descriptions(spec.get("items"), found, depth + 1)
