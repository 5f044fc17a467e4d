"""``toolsift import``: catalogs from where tools already live — an OpenAPI document, the MCP
servers of a servers file (a snapshot) — written as a catalog file ``build`` and ``serve`` take."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import orjson

from toolsift.catalog import Catalog
from toolsift.catalog.loader import catalog_document, save_catalog

out_option = click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the catalog here (.json, .yaml or .jsonl) [default: JSON on standard output].",
)


@click.group("import")
def import_commands() -> None:
    """Make a catalog from an OpenAPI document or from MCP servers."""


@import_commands.command("openapi")
@click.argument("spec", type=click.Path(path_type=Path, dir_okay=False))
@out_option
def import_openapi(spec: Path, out: Path | None) -> None:
    """One tool per operation of SPEC (OpenAPI 3.0 or 3.1, JSON or YAML; local $refs resolved)."""
    from toolsift.catalog.openapi import load_openapi

    catalog, notes = load_openapi(spec)
    _write(catalog, out, notes)


@import_commands.command("mcp")
@click.argument("servers", type=click.Path(path_type=Path, dir_okay=False))
@out_option
def import_mcp(servers: Path, out: Path | None) -> None:
    """The tools the MCP servers of SERVERS list now, grouped by server (a snapshot)."""
    import anyio

    from toolsift.mcp import load_sources, snapshot_catalog

    catalog, notes = anyio.run(snapshot_catalog, load_sources(servers), None)
    _write(catalog, out, notes)


def _write(catalog: Catalog, out: Path | None, notes: list[str]) -> None:
    if out is None:
        sys.stdout.write(orjson.dumps(catalog_document(catalog), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        notes = [*notes, *save_catalog(catalog, out)]
    for note in notes:
        click.echo(f"note: {note}", err=True)
    groups = len(catalog.groups())
    where = f" into {out}" if out is not None else ""
    click.echo(f"imported {len(catalog)} tools in {groups} groups{where} ({len(notes)} notes)", err=True)
