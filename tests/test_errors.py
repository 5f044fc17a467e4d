"""One error path: every error toolsift raises is a ToolsiftError whose message says the fix; the
service maps classes to HTTP statuses, the error classes know nothing of HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from toolsift import Router
from toolsift import errors as errors_module
from toolsift.cli import main
from toolsift.embeddings import HashingEmbedder
from toolsift.errors import (
    CatalogError,
    IndexMismatch,
    InputFileError,
    McpServersFileError,
    NotReady,
    TenantsFileError,
    ToolsiftError,
    UnknownTool,
)
from toolsift.mcp import load_sources
from toolsift.service.responses import STATUS_CODES, status_for
from toolsift.tenants import load_tenants

ERROR_CLASSES = [
    value for value in vars(errors_module).values() if isinstance(value, type) and issubclass(value, ToolsiftError)
]


@pytest.mark.parametrize("error_class", ERROR_CLASSES, ids=lambda kind: kind.__name__)
def test_error_classes_know_nothing_of_http(error_class: type[ToolsiftError]) -> None:
    assert "status_code" not in vars(error_class)


def test_every_mapped_status_is_an_error_status() -> None:
    assert set(STATUS_CODES) <= set(ERROR_CLASSES)
    assert all(400 <= status < 600 for status in STATUS_CODES.values())
    assert status_for(NotReady()) == 503 and status_for(CatalogError("bad")) == 400
    assert status_for(UnknownTool("x", ["y"])) == 400  # unlisted subclasses take their base's


def test_a_mismatched_in_memory_index_says_what_to_do(tiny_router: Router) -> None:
    with pytest.raises(IndexMismatch) as caught:
        Router(tiny_router.index, HashingEmbedder(32))
    message = str(caught.value)
    assert "in memory" in message and "--out" not in message and "Router.build(catalog, embedder)" in message


def test_unknown_tool_points_at_a_command_that_lists_names(tmp_path: Path, tiny_router: Router) -> None:
    message = str(UnknownTool("send_emial", tiny_router.catalog.names))
    assert "`toolsift tools`" in message and "tools" in main.commands
    folder = tiny_router.save(tmp_path / "index")
    listed = CliRunner().invoke(main, ["tools", "--index", str(folder)])
    assert listed.exit_code == 0 and "send_email  [email, write]" in listed.output.splitlines()
    only_weather = CliRunner().invoke(main, ["tools", "--index", str(folder), "--tag", "weather"])
    assert only_weather.output.splitlines() == ["get_forecast  [weather, read]", "get_weather  [weather, read]"]


def test_the_tenants_and_servers_files_have_their_own_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("tenants: [unclosed\n")
    with pytest.raises(TenantsFileError, match="broken.yaml: cannot parse"):
        load_tenants(broken)
    with pytest.raises(McpServersFileError, match="broken.yaml: cannot parse"):
        load_sources(broken)
    with pytest.raises(TenantsFileError, match="file not found.*tenants file"):
        load_tenants(tmp_path / "missing.yaml")
    for kind in (CatalogError, TenantsFileError, McpServersFileError):
        assert issubclass(kind, InputFileError) and kind is not InputFileError
    assert not issubclass(TenantsFileError, CatalogError) and not issubclass(McpServersFileError, CatalogError)
