"""The README keeps up with the CLI and the HTTP API."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from toolsift import Router
from toolsift.cli import main
from toolsift.service import create_app

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_command_is_documented(command: str) -> None:
    assert f"toolsift {command}" in README


def test_every_route_is_documented(tiny_router: Router) -> None:
    every = route_paths(create_app(tiny_router).routes)
    paths = {path for path in every if not path.startswith(("/docs", "/redoc", "/openapi"))}
    assert paths == {
        "/",
        "/route",
        "/tools",
        "/healthz",
        "/lint",
        "/metrics",
        "/admin/reload",
        "/admin/status",
        "/admin/tools",
        "/admin/tools/{name}",
    }
    for path in paths:
        assert f" {path}`" in README, path


def route_paths(routes: list[Any]) -> set[str]:
    """Every path served, parameters without their converters (``{name:path}`` as ``{name}``).
    FastAPI (0.165) keeps an included APIRouter as one entry whose ``effective_route_contexts()``
    lists its routes with their full paths."""
    paths: set[str] = set()
    for route in routes:
        contexts = getattr(route, "effective_route_contexts", None)
        paths |= {str(c.path) for c in contexts()} if contexts else {str(getattr(route, "path", ""))}
    return {re.sub(r":\w+}", "}", path) for path in paths}


def test_readme_gives_the_two_commands() -> None:
    assert "make serve" in README and "make test" in README
