"""Catalogs from tools that live in Python: LangChain tools, LlamaIndex tools, plain functions.

    from toolsift.catalog.python import from_functions, from_langchain, from_llamaindex

    catalog = from_langchain([search, calculator], group="research")
    catalog = from_functions([get_weather, convert_currency])   # type hints + docstring

Each library turns its own tools into OpenAI function definitions (``convert_to_openai_tool``,
``ToolMetadata.to_openai_tool``), which toolsift reads like any catalog; a plain function's
parameters are the JSON schema pydantic builds from its signature (``Annotated[int, Field(...)]``
descriptions included), its description its docstring. ``tags``, ``group`` and ``examples`` are
toolsift's own: pass them (for every tool, or per name).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, get_type_hints

from pydantic import create_model

from toolsift.catalog.loader import parse_tool
from toolsift.catalog.models import Catalog, Tool

Extras = Mapping[str, Sequence[str]] | Sequence[str] | None


def from_langchain(tools: Iterable[Any], *, tags: Extras = None, group: str | None = None,
                   examples: Mapping[str, Sequence[str]] | None = None) -> Catalog:  # fmt: skip
    """LangChain tools (``BaseTool``, ``@tool`` functions) as a catalog."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return _catalog([convert_to_openai_tool(tool) for tool in tools], "langchain", tags, group, examples)


def from_llamaindex(tools: Iterable[Any], *, tags: Extras = None, group: str | None = None,
                    examples: Mapping[str, Sequence[str]] | None = None) -> Catalog:  # fmt: skip
    """LlamaIndex tools (``FunctionTool``, any tool with ``metadata``) as a catalog."""
    return _catalog([tool.metadata.to_openai_tool() for tool in tools], "llamaindex", tags, group, examples)


def from_functions(functions: Iterable[Callable[..., Any]], *, tags: Extras = None, group: str | None = None,
                   examples: Mapping[str, Sequence[str]] | None = None) -> Catalog:  # fmt: skip
    """Plain typed functions as a catalog: name, docstring, and a parameters schema from the
    signature (every parameter needs a type hint)."""
    return _catalog([function_definition(function) for function in functions], "functions", tags, group, examples)


def function_definition(function: Callable[..., Any]) -> dict[str, Any]:
    """An OpenAI function definition of ``function``, its schema built by pydantic."""
    hints = get_type_hints(function, include_extras=True)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if name not in hints:
            raise TypeError(
                f"{function.__name__}: parameter '{name}' has no type hint; toolsift needs one to describe it"
            )
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (hints[name], default)
    schema = create_model(f"{function.__name__}_parameters", **fields).model_json_schema()
    schema.pop("title", None)
    for spec in schema.get("properties", {}).values():
        spec.pop("title", None)
    description = inspect.cleandoc(function.__doc__ or "") or function.__name__.replace("_", " ")
    return {
        "type": "function",
        "function": {"name": function.__name__, "description": description, "parameters": schema},
    }


def _catalog(
    definitions: list[dict[str, Any]], source: str, tags: Extras, group: str | None,
    examples: Mapping[str, Sequence[str]] | None,
) -> Catalog:  # fmt: skip
    tools: list[Tool] = []
    for definition in definitions:
        tool = parse_tool(definition, dialect="openai")
        own = tags.get(tool.name, ()) if isinstance(tags, Mapping) else tags or ()
        update: dict[str, Any] = {
            "tags": tuple(own),
            "group": group,
            "examples": tuple((examples or {}).get(tool.name, ())),
        }
        tools.append(Tool.model_validate({**tool.model_dump(), **update}))
    return Catalog(tools, source=source)
