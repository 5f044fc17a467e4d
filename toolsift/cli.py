"""Command line: ``toolsift build``, ``toolsift route``, ``toolsift serve``, ``toolsift validate``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click
import orjson

from toolsift._version import __version__
from toolsift.catalog import Catalog, load_catalog
from toolsift.catalog.loader import DIALECTS
from toolsift.errors import ToolsiftError
from toolsift.index import INDEX_KINDS
from toolsift.router import MAX_K, OUTPUT_FORMATS, Router, TagRules
from toolsift.settings import BUNDLED_CATALOG, Settings


class ToolsiftGroup(click.Group):
    """Turns ToolsiftError into a one-line message and exit code 2, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ToolsiftError as error:
            raise click.ClickException(str(error)) from None


def _settings() -> Settings:
    return Settings.from_env()


def _load_catalog(path: Path | None, dialect: str) -> Catalog:
    return load_catalog(path or BUNDLED_CATALOG, dialect=dialect)  # type: ignore[arg-type]


def _open_cache(settings: Settings, no_cache: bool) -> Any:
    cache_file = None if no_cache else settings.cache_file()
    if cache_file is None:
        return None
    from toolsift.embeddings import EmbeddingCache

    return EmbeddingCache(cache_file)


@click.group(cls=ToolsiftGroup)
@click.version_option(__version__, prog_name="toolsift")
def main() -> None:
    """toolsift: pick the few tools an LLM should see for each query."""


@main.command()
@click.argument("catalog", type=click.Path(path_type=Path), required=False)
@click.option("--out", "out", type=click.Path(path_type=Path), help="Index folder to write [default: TOOLSIFT_INDEX_PATH or var/index].")
@click.option("--model", help="Embedding model name or local model folder [default: all-MiniLM-L6-v2].")
@click.option("--kind", type=click.Choice(INDEX_KINDS), help="flat (exact) or hnsw (approximate, for very large catalogs).")
@click.option("--dialect", type=click.Choice(DIALECTS), default="auto", show_default=True, help="Tool format of the catalog entries.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the on-disk embedding cache.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def build(catalog: Path | None, out: Path | None, model: str | None, kind: str | None, dialect: str, no_cache: bool, quiet: bool) -> None:
    """Embed CATALOG (default: the bundled catalog) and save a searchable index folder."""
    settings = Settings.from_env(None, index_path=out, model=model, index_kind=kind)
    tools = _load_catalog(catalog, dialect)
    from toolsift.embeddings import get_embedder

    started = time.perf_counter()
    embedder = get_embedder(settings.model)
    load_seconds = time.perf_counter() - started
    router = Router.build(
        tools, embedder, kind=settings.index_kind,  # type: ignore[arg-type]
        cache=_open_cache(settings, no_cache), progress=not quiet,
    )
    router.save(settings.index_path)
    stats = router.last_build
    assert stats is not None
    click.echo(
        f"indexed {stats.tools} tools from {tools.source} into {settings.index_path} "
        f"({stats.embedded} embedded, {stats.cached} from cache) in {stats.seconds:.2f}s "
        f"(+{load_seconds:.2f}s model load); catalog {tools.fingerprint}"
    )


@main.command()
@click.argument("query")
@click.option("--index", "index_path", type=click.Path(path_type=Path), help="Index folder [default: TOOLSIFT_INDEX_PATH or var/index].")
@click.option("-k", "--k", "k", type=click.IntRange(1, MAX_K), default=5, show_default=True, help="How many tools at most.")
@click.option("--tags", help="Comma-separated tags; a tool needs at least one of them.")
@click.option("--all-tags", help="Comma-separated tags; a tool needs all of them.")
@click.option("--exclude-tags", help="Comma-separated tags; a tool must have none of them.")
@click.option("--min-score", type=float, help="Drop tools scoring below this cosine similarity.")
@click.option("--format", "output_format", type=click.Choice(OUTPUT_FORMATS), help="Print the tool definitions in this form, as JSON.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON.")
def route(query: str, index_path: Path | None, k: int, tags: str | None, all_tags: str | None, exclude_tags: str | None, min_score: float | None, output_format: str | None, as_json: bool) -> None:
    """Print the tools that best fit QUERY."""
    settings = Settings.from_env(None, index_path=index_path)
    router = Router.load(settings.index_path)
    result = router.route(query, k, TagRules.parse(tags, all_tags, exclude_tags), min_score=min_score)
    if output_format or as_json:
        payload: Any = result.definitions(output_format or "toolsift")  # type: ignore[arg-type]
        if as_json:
            payload = {
                "tools": payload,
                "matches": [{"name": m.name, "score": m.score, "rank": m.rank} for m in result.matches],
                "fingerprint": result.fingerprint,
                "eligible": result.eligible,
            }
        sys.stdout.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")
        return
    if not result.matches:
        click.echo(f"no tool fits (of {result.eligible} eligible)")
        return
    width = max(len(m.name) for m in result.matches)
    for match in result.matches:
        click.echo(f"{match.rank:>3}  {match.score:6.3f}  {match.name:<{width}}  {match.tool.description}")
    click.echo(f"subset {result.fingerprint[:23]}  ({result.eligible} eligible, {result.took_ms:.1f} ms)")


@main.command()
@click.option("--index", "index_path", type=click.Path(path_type=Path), help="Index folder [default: TOOLSIFT_INDEX_PATH or var/index].")
@click.option("--catalog", type=click.Path(path_type=Path), help="Build the index from this catalog first if the folder has none.")
@click.option("--host", help="Interface to bind [default: 127.0.0.1].")
@click.option("--port", type=int, help="Port [default: 8000].")
@click.option("--workers", type=int, default=1, show_default=True, help="Worker processes, all serving the same index folder.")
def serve(index_path: Path | None, catalog: Path | None, host: str | None, port: int | None, workers: int) -> None:
    """Serve the HTTP API (docs at /docs)."""
    import os

    import uvicorn

    settings = Settings.from_env(None, index_path=index_path, host=host, port=port)
    if catalog is not None and not (settings.index_path / "manifest.json").is_file():
        router = Router.build(_load_catalog(catalog, "auto"), cache=_open_cache(settings, False))
        router.save(settings.index_path)
    os.environ["TOOLSIFT_INDEX_PATH"] = str(settings.index_path)
    uvicorn.run(
        "toolsift.service:create_app", factory=True, host=settings.host, port=settings.port,
        workers=workers, log_level=settings.log_level,
    )


@main.command()
@click.argument("catalog", type=click.Path(path_type=Path))
@click.option("--dialect", type=click.Choice(DIALECTS), default="auto", show_default=True)
def validate(catalog: Path, dialect: str) -> None:
    """Check CATALOG and print its size, tags and fingerprint (exit 1 and the problem if invalid)."""
    tools = _load_catalog(catalog, dialect)
    tag_counts = tools.tag_counts()
    click.echo(f"{tools.source}: {len(tools)} valid tools, {len(tag_counts)} tags, {tools.fingerprint}")
    for tag, count in tag_counts.items():
        click.echo(f"  {tag}: {count}")
