"""The ``toolsift`` command line. ``toolsift --help`` lists every command; the benchmark
commands live in ``toolsift.bench.cli`` and are added to this group."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

if TYPE_CHECKING:
    from toolsift.curation.lint import Finding

from toolsift._version import __version__
from toolsift.bench.cli import COMMANDS as BENCH_COMMANDS
from toolsift.catalog import Catalog, load_catalog
from toolsift.catalog.loader import DIALECTS
from toolsift.catalog.names import PROVIDER_NAME_RULE
from toolsift.curation.lint import CONFUSABLE_CLOSENESS
from toolsift.embeddings import embedder_for
from toolsift.errors import TenantsFileError, ToolsiftError
from toolsift.extras import missing_extra
from toolsift.feedback_cli import feedback as feedback_commands
from toolsift.import_cli import import_commands
from toolsift.index import INDEX_KINDS, Manifest, ToolIndex
from toolsift.router import (
    ACCESS_POLICIES,
    MAX_K,
    OUTPUT_FORMATS,
    Access,
    Caller,
    OutputFormat,
    RouteQuery,
    Router,
    TagRules,
    answer,
)
from toolsift.router.deferred import DEFERRED_FORMATS, DeferredFormat, deferred_namespaces, deferred_tools
from toolsift.router.ranking import DEFAULT_LEXICAL_WEIGHT
from toolsift.settings import BUNDLED_CATALOG, Settings
from toolsift.tenants import Tenants, load_tenants
from toolsift.tune_cli import tune_command


class ToolsiftGroup(click.Group):
    """Turns ToolsiftError, and an import that an uninstalled extra would satisfy, into a
    one-line message and exit code 1, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ToolsiftError as error:
            raise click.ClickException(str(error)) from None
        except ImportError as error:
            missing = missing_extra(error, f"toolsift {ctx.invoked_subcommand or ''}".strip())
            if missing is None:
                raise
            raise click.ClickException(str(missing)) from None


def _settings() -> Settings:
    return Settings.from_env()


def _load_catalog(path: Path | None, dialect: str) -> Catalog:
    return load_catalog(path or BUNDLED_CATALOG, dialect=dialect)  # type: ignore[arg-type]


def _open_cache(settings: Settings, no_cache: bool) -> Any:
    return None if no_cache else settings.open_cache()


def _measure_no_tool_floor(router: Router, cache: Any) -> None:
    """The catalog's no-tool floor, measured once by the build and kept with the index (no process
    that loads it pays for it); the no-tool requests' vectors from the embedding cache when it has
    them, so a build whose every vector is cached still never loads the model."""
    from toolsift.embeddings import embed_queries_cached
    from toolsift.router.confidence import calibrated_for, no_tool_vectors

    if calibrated_for(router.embedder.name) and len(router.catalog):
        embedder = router.embedder
        no_tool_vectors(embedder.name, embedder.dimension, lambda texts: embed_queries_cached(embedder, texts, cache))
    router.no_tool_floor()


def rules_options(command: Any) -> Any:
    """The operator's rules, which every caller of a serving process is held to."""
    command = click.option(
        "--access",
        type=click.Choice(["any", "read_only", "non_destructive"]),
        help="read_only: only tools annotated read-only may be found or called [default: any].",
    )(command)
    command = click.option(
        "--exclude-tags", help="No tool with any of these tags (comma-separated), for searches and calls."
    )(command)
    return click.option(
        "--tags", help="Only tools with at least one of these tags (comma-separated), for searches and calls."
    )(command)


index_option = click.option(
    "--index",
    "index_path",
    type=click.Path(path_type=Path),
    help="Index folder [default: TOOLSIFT_INDEX_PATH or var/index].",
)
dialect_option = click.option(
    "--dialect",
    type=click.Choice(DIALECTS),
    default="auto",
    show_default=True,
    help="Tool format of the catalog entries.",
)


@click.group(cls=ToolsiftGroup)
@click.version_option(__version__, prog_name="toolsift")
def main() -> None:
    """toolsift: pick the few tools an LLM should see for each query."""


@main.command()
@click.argument("catalog", type=click.Path(path_type=Path), required=False)
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path),
    help="Index folder to write [default: TOOLSIFT_INDEX_PATH or var/index].",
)
@click.option(
    "--model",
    help="Embedding model name or local model folder [default: auto: all-MiniLM-L6-v2, or with multilingual-e5-small when the catalog is mostly non-Latin text].",
)
@click.option(
    "--kind",
    type=click.Choice(INDEX_KINDS),
    help="auto (default: flat up to 20,000 tools, hnsw above), flat (exact) or hnsw (approximate).",
)
@dialect_option
@click.option("--no-cache", is_flag=True, help="Do not read or write the on-disk embedding cache.")
@click.option(
    "--mcp-servers",
    type=click.Path(path_type=Path),
    help="Also take the tools the MCP servers in this file list now (a snapshot; `serve --mcp-servers` follows changes).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--keep-flagged", is_flag=True, help="Index the tools the security-* screen finds poisoned too.")
def build(
    catalog: Path | None,
    out: Path | None,
    model: str | None,
    kind: str | None,
    dialect: str,
    mcp_servers: Path | None,
    no_cache: bool,
    quiet: bool,
    keep_flagged: bool,
) -> None:
    """Embed CATALOG (default: the bundled catalog, or none with --mcp-servers) and save a searchable index folder."""
    settings = Settings.from_env(None, index_path=out, model=model, index_kind=kind)
    if mcp_servers is not None:
        import anyio

        from toolsift.mcp import load_sources, snapshot_catalog

        base = _load_catalog(catalog, dialect) if catalog is not None else None
        tools, problems = anyio.run(snapshot_catalog, load_sources(mcp_servers), base)
        for problem in problems:
            click.echo(f"skipped: {problem}", err=True)
    else:
        tools = _load_catalog(catalog, dialect)
    source = tools.fingerprint
    if not keep_flagged:
        tools = _screened(tools)
    embedder = embedder_for(settings.model, tools, lazy=True, backend=settings.backend)  # loaded only if needed
    cache = _open_cache(settings, no_cache)
    router = Router.build(
        tools,
        embedder,
        kind=settings.index_kind,
        cache=cache,
        progress=not quiet,
        source=source,
        ranking=settings.ranking(),
    )
    _measure_no_tool_floor(router, cache)
    router.save(settings.index_path)
    stats = router.last_build
    assert stats is not None
    click.echo(
        f"indexed {stats.tools} tools from {tools.source} into {settings.index_path} "
        f"({stats.embedded} embedded, {stats.cached} from cache) in {stats.seconds:.2f}s"
        + (" (model not loaded: every vector came from the cache)" if stats.embedded == 0 else "")
        + f"; catalog {tools.fingerprint}"
    )
    if settings.redis_url:  # replicas load it now instead of at their next poll
        from toolsift.service.replicas import Replicas

        Replicas(settings.redis_url, settings.redis_prefix).announce("index", tools.fingerprint)


@main.command()
@click.argument("query")
@index_option
@click.option(
    "-k", "--k", "k", type=click.IntRange(1, MAX_K), default=5, show_default=True, help="How many tools at most."
)
@click.option("--tags", help="Comma-separated tags; a tool needs at least one of them.")
@click.option("--all-tags", help="Comma-separated tags; a tool needs all of them.")
@click.option("--exclude-tags", help="Comma-separated tags; a tool must have none of them.")
@click.option(
    "--access",
    type=click.Choice(ACCESS_POLICIES),
    default="any",
    show_default=True,
    help="read_only / non_destructive: only tools whose MCP annotations allow it.",
)
@click.option(
    "--pin", "pinned", multiple=True, help="A tool to include whatever the query (repeatable); not counted in k."
)
@click.option("--min-score", type=float, help="Drop tools whose ranking score is below this.")
@click.option(
    "--min-confidence",
    type=click.FloatRange(0, 1),
    help="Print no tools when the best is less likely than this to serve QUERY; 0 never abstains "
    "[default: TOOLSIFT_MIN_CONFIDENCE].",
)
@click.option(
    "--lexical-weight",
    type=click.FloatRange(0, 10),
    help=f"Weight of the standardised BM25 part of the score; 0 = dense only [default: {DEFAULT_LEXICAL_WEIGHT}].",
)
@click.option(
    "--split-intents/--no-split-intents",
    default=None,
    help="Route each part of a multi-part request too [default: TOOLSIFT_SPLIT_INTENTS, on].",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(OUTPUT_FORMATS),
    help="Print the tool definitions in this form, as JSON.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON.")
def route(
    query: str,
    index_path: Path | None,
    k: int,
    tags: str | None,
    all_tags: str | None,
    exclude_tags: str | None,
    access: Access,
    pinned: tuple[str, ...],
    min_score: float | None,
    min_confidence: float | None,
    lexical_weight: float | None,
    split_intents: bool | None,
    output_format: OutputFormat | None,
    as_json: bool,
) -> None:
    """Print the tools that best fit QUERY."""
    settings = Settings.from_env(None, index_path=index_path, lexical_weight=lexical_weight)
    router = Router.load(settings.index_path, ranking=settings.ranking(), backend=settings.backend)
    rules = TagRules.parse(tags, all_tags, exclude_tags, access=access)
    query_ = RouteQuery(
        query, k, rules, output_format=output_format or "toolsift", min_score=min_score,
        min_confidence=min_confidence, pinned=pinned, split_intents=split_intents,
    )  # fmt: skip
    delivered = answer(router, query_, Caller.anyone(router.catalog))
    result = delivered.result
    if as_json:  # the bytes POST /route answers for the same request (indented on a terminal)
        from toolsift.service.schemas import route_body

        indent = orjson.OPT_INDENT_2 if sys.stdout.isatty() else 0
        sys.stdout.write(orjson.dumps(route_body(delivered), option=indent | orjson.OPT_SORT_KEYS).decode() + "\n")
        return
    if output_format:
        definitions = delivered.definitions()
        sys.stdout.write(orjson.dumps(definitions, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")
        return
    if not result.matches:
        click.echo(f"no tool: {result.reason}" if result.abstained else f"no tool fits (of {result.eligible} eligible)")
        for tool in result.pinned:
            click.echo(f"pinned  {tool.name}  {tool.description}")
        return
    for tool in result.pinned:
        click.echo(f"pinned  {tool.name}  {tool.description}")
    width = max(len(m.name) for m in result.matches)
    for match in result.matches:
        click.echo(
            f"{match.rank:>3}  {match.score:6.2f} (dense {match.dense_part:5.2f} + lexical {match.lexical_part:5.2f})  "
            f"{match.name:<{width}}  {match.tool.description}"
        )
        if match.intent:
            click.echo(f"{'':>5}for: {match.intent}")
    click.echo(f"subset {result.fingerprint[:23]}  ({result.eligible} eligible, {result.took_ms:.1f} ms)")


@main.command()
@index_option
@click.option(
    "--catalog",
    type=click.Path(path_type=Path),
    help="Serve this catalog: the index is built from it first, or rebuilt when it was built from another.",
)
@click.option("--host", help="Interface to bind [default: 127.0.0.1].")
@click.option("--port", type=int, help="Port [default: 8000].")
@click.option(
    "--workers", type=int, default=1, show_default=True, help="Worker processes, all serving the same index folder."
)
@click.option(
    "--mcp-servers",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Live catalog: the tools of the MCP servers in this file (plus --catalog), re-indexed when they change.",
)
@click.option(
    "--tenants",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Tenants file: API keys and the tools each tenant may see.",
)
@rules_options
def serve(
    index_path: Path | None,
    catalog: Path | None,
    host: str | None,
    port: int | None,
    workers: int,
    mcp_servers: Path | None,
    tenants: Path | None,
    tags: str | None,
    exclude_tags: str | None,
    access: str | None,
) -> None:
    """Serve the HTTP API (docs at /docs)."""
    import uvicorn

    settings = Settings.from_env(
        None,
        index_path=index_path,
        host=host,
        port=port,
        mcp_servers=mcp_servers,
        tenants=tenants,
        catalog_path=catalog.resolve() if catalog is not None and mcp_servers is not None else None,
        tags=tags,
        exclude_tags=exclude_tags,
        access=access,
    )
    tenant_specs = load_tenants(settings.tenants) if settings.tenants is not None else None  # fail now
    if settings.mcp_servers is not None:
        from toolsift.mcp import load_sources

        load_sources(settings.mcp_servers)  # fail now, with the file's problem, not inside a worker
        if settings.catalog_path is not None:
            _load_catalog(settings.catalog_path, "auto")
    elif catalog is not None:
        _index_of(catalog, settings)
    folder_ready = settings.mcp_servers is None and (settings.index_path / "manifest.json").is_file()
    if tenant_specs is not None and settings.tenants is not None and folder_ready:
        _refuse_tenant_typos(tenant_specs, ToolIndex.load(settings.index_path).catalog, settings.tenants)
    from toolsift.service.http_protocol import MAX_HEADER_BYTES, JsonErrorH11Protocol
    from toolsift.service.observability import logging_config
    from toolsift.service.workers import app_or_factory

    app, factory = app_or_factory(_absolute(settings), workers)
    uvicorn.run(
        app,
        factory=factory,
        host=settings.host,
        port=settings.port,
        workers=workers,
        log_level=settings.log_level,
        access_log=False,
        log_config=logging_config(settings.log_level, settings.log_format),
        http=JsonErrorH11Protocol,  # a request uvicorn cannot read gets a JSON error too
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )


def _screened(tools: Catalog) -> Catalog:
    """``tools`` without the definitions the ``security-*`` screen finds poisoned, each named on
    standard error (a poisoned definition never reaches a model); refused when none is left."""
    from toolsift.catalog.security import without_poisoned

    kept, withheld = without_poisoned(tools)
    for name, problems in withheld.items():
        click.echo(f"withheld '{name}' (its definition looks poisoned): {'; '.join(problems)}", err=True)
    if withheld:
        click.echo(f"{len(withheld)} tools withheld; `toolsift lint` says why; --keep-flagged indexes them", err=True)
    if not len(kept):
        raise click.ClickException("every tool of the catalog looks poisoned: nothing to index (toolsift lint)")
    return kept


def _index_of(catalog: Path, settings: Settings) -> None:
    """Make the index folder serve ``catalog``: build it when there is none; keep it when it was
    built from this catalog (admin edits and tunes since included); rebuild it when it was built
    from another and holds no edits; otherwise refuse, saying how to go on (never serve the wrong
    catalog, never drop an acknowledged edit)."""
    tools = _load_catalog(catalog, "auto")
    manifest = Manifest.read(settings.index_path)
    if manifest is not None and tools.fingerprint in (manifest.catalog_fingerprint, manifest.built_from):
        if manifest.holds_edits:
            click.echo(f"serving {settings.index_path}: built from {catalog}, with the edits made since", err=True)
        return
    if manifest is not None and manifest.holds_edits:
        raise click.ClickException(
            f"{settings.index_path} was built from another catalog than {catalog} and holds edits made since "
            f"(POST /admin/tools); serve it without --catalog to keep them, or replace it: toolsift build "
            f"{catalog} --out {settings.index_path}"
        )
    served = _screened(tools)
    embedder = embedder_for(settings.model, served)
    cache = _open_cache(settings, False)
    ranking = settings.ranking()
    if manifest is not None and manifest.model == embedder.name:  # the unchanged tools keep their vectors
        router = Router.load(settings.index_path, ranking=ranking).rebuilt(
            served, cache=cache, source=tools.fingerprint
        )
    else:
        router = Router.build(served, embedder, cache=cache, source=tools.fingerprint, ranking=ranking)
    _measure_no_tool_floor(router, cache)  # once, here: the serving processes take it from the index
    router.save(settings.index_path)
    what = "rebuilt from" if manifest is not None else "built from"
    click.echo(f"{settings.index_path}: {what} {catalog} ({len(tools)} tools, {tools.fingerprint[:19]}…)", err=True)


def _absolute(settings: Settings) -> Settings:
    """The settings with their files as absolute paths (what the serving processes are given)."""
    paths = ("index_path", "catalog_path", "tenants", "mcp_servers", "lint_queries", "cache_dir")
    return settings.model_copy(update={n: getattr(settings, n).absolute() for n in paths if getattr(settings, n)})


def _refuse_tenant_typos(tenants: Tenants, catalog: Catalog, path: Path) -> None:
    """A tenant naming a tag or tool the catalog lacks would silently see less (or nothing)."""
    problems = tenants.problems(catalog)
    if problems:
        raise TenantsFileError(
            "; ".join(problems),
            source=str(path),
            fix="Fix those names in the tenants file (or add the tools to the catalog), then start again",
        )


@main.command("mcp")
@index_option
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a client that launches toolsift; http serves streamable HTTP on /mcp.",
)
@click.option("--host", help="Interface to bind with --transport http [default: 127.0.0.1].")
@click.option("--port", type=int, help="Port with --transport http [default: 8000].")
@click.option(
    "--mcp-servers",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Gateway: search AND call the tools of the MCP servers in this file (followed live), plus --catalog's.",
)
@click.option(
    "--catalog", type=click.Path(path_type=Path), help="With --mcp-servers: static tools listed beside theirs."
)
@click.option(
    "--expose",
    type=click.Choice(["search", "dynamic"]),
    help="With --mcp-servers: search (search_tools + call_tool, a fixed list) or dynamic (found tools are "
    "added to the session's tools/list) [default: TOOLSIFT_EXPOSE or search].",
)
@rules_options
@click.option(
    "--tenants",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Tenants file (with --transport http): API keys and the tools each may search and call.",
)
def mcp_command(
    index_path: Path | None,
    transport: str,
    host: str | None,
    port: int | None,
    mcp_servers: Path | None,
    catalog: Path | None,
    expose: str | None,
    tags: str | None,
    exclude_tags: str | None,
    access: str | None,
    tenants: Path | None,
) -> None:
    """Serve toolsift itself as an MCP server (search_tools, list_tags). Like `serve`, it follows
    the index folder: a new build there is loaded (TOOLSIFT_RELOAD_INTERVAL). With --mcp-servers it
    is a gateway in front of those servers: the tools it finds can be called through it."""
    import logging.config

    import uvicorn

    from toolsift.service.mcp_server import gateway_over_mcp, mcp_http_app, serve_index_folder_over_mcp
    from toolsift.service.observability import logging_config

    settings = Settings.from_env(
        None, index_path=index_path, host=host, port=port, mcp_servers=mcp_servers, expose=expose, tags=tags,
        exclude_tags=exclude_tags, access=access, tenants=tenants,
        catalog_path=catalog.resolve() if catalog is not None else None,
    )  # fmt: skip
    tenant_specs = load_tenants(settings.tenants) if settings.tenants is not None else None
    logging.config.dictConfig(logging_config(settings.log_level, settings.log_format))  # stderr: never the stdio pipe
    if settings.mcp_servers is not None:
        from toolsift.mcp import load_sources

        load_sources(settings.mcp_servers)  # fail now, with the file's problem
        if settings.catalog_path is not None:
            _load_catalog(settings.catalog_path, "auto")
        server, state = gateway_over_mcp(settings, tenant_specs)
    else:
        # the index is loaded now: a missing one is a one-line error
        server, state = serve_index_folder_over_mcp(settings, tenant_specs)
    if transport == "stdio":
        import anyio

        from toolsift.service.stdio import run_stdio

        anyio.run(run_stdio, server)
    else:
        uvicorn.run(
            mcp_http_app(server, state), host=settings.host, port=settings.port, log_level=settings.log_level,
            log_config=logging_config(settings.log_level, settings.log_format),
        )  # fmt: skip


@main.command()
@click.argument("catalog", type=click.Path(path_type=Path))
@click.option(
    "--queries",
    type=click.Path(path_type=Path),
    help="Labelled queries (benchmark queries.jsonl): adds never-retrieved tools, confusions and per-tool accuracy.",
)
@click.option(
    "-k", "--k", "k", type=click.IntRange(1, MAX_K), default=5, show_default=True, help="Top-K for the query checks."
)
@click.option(
    "--closeness",
    type=click.FloatRange(0, 1),
    default=CONFUSABLE_CLOSENESS,
    show_default=True,
    help="How close two tools must be to be a confusable pair: the share of the gap between the catalog's "
    "mean pair cosine and 1 that their cosine closes (the same meaning whatever the model).",
)
@click.option(
    "--no-embeddings", is_flag=True, help="Static checks only: no model, no confusable pairs, no query checks."
)
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning", "info"]),
    default="error",
    show_default=True,
    help="Exit 1 when a finding is this severe or worse.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--all", "show_all", is_flag=True, help="Print every finding: notes too, and every one of a check.")
@dialect_option
def lint(
    catalog: Path,
    queries: Path | None,
    k: int,
    closeness: float,
    no_embeddings: bool,
    fail_on: str,
    as_json: bool,
    show_all: bool,
    dialect: str,
) -> None:
    """Find what makes CATALOG's tools hard to route or costly to send, each with a fix."""
    from toolsift.curation import lint_catalog

    tools = _load_catalog(catalog, dialect)
    router = None
    labelled: list[tuple[str, tuple[str, ...]]] = []
    if not no_embeddings:
        settings = Settings.from_env()
        router = Router.build(
            tools, embedder_for(settings.model, tools), cache=_open_cache(settings, False), ranking=settings.ranking()
        )
        if queries is not None:
            from toolsift.catalog.queries import load_queries

            labelled = [(q.text, q.relevant) for q in load_queries(queries, tools)]
    report = lint_catalog(tools, router, labelled, k=k, closeness=closeness)
    if as_json:
        sys.stdout.write(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        _print_findings(report.findings, show_all)
        if report.per_tool_accuracy:
            worst = sorted(report.per_tool_accuracy.items(), key=lambda item: (item[1][f"recall@{k}"], item[0]))[:5]
            click.echo(
                f"least accurate tools (recall@{k} over their queries): "
                + ", ".join(
                    f"{name} {scores[f'recall@{k}']:.2f} ({scores['queries']:.0f} queries)" for name, scores in worst
                )
            )
        counts = report.counts()
        costly = sorted(report.schema_tokens.items(), key=lambda item: -item[1])[:3]
        click.echo(
            f"{report.tools} tools: {counts['error']} errors, {counts['warning']} warnings, {counts['info']} notes; "
            f"schema tokens {sum(report.schema_tokens.values())} in all, most: "
            + ", ".join(f"{name} {cost}" for name, cost in costly)
        )
    if report.fails(fail_on):  # type: ignore[arg-type]
        sys.exit(1)


@main.command()
@click.argument("before", type=click.Path(path_type=Path))
@click.argument("after", type=click.Path(path_type=Path))
@click.option(
    "--queries",
    type=click.Path(path_type=Path),
    help="Labelled requests (queries.jsonl): also say which now route differently, and whether better or worse.",
)
@click.option("-k", "--k", "k", type=click.IntRange(1, MAX_K), default=5, show_default=True, help="Top-K compared.")
@click.option("--json", "as_json", is_flag=True, help="Print the changes as JSON.")
@dialect_option
def diff(before: Path, after: Path, queries: Path | None, k: int, as_json: bool, dialect: str) -> None:
    """What changed from catalog BEFORE to catalog AFTER: tools added, removed and changed, and
    (with --queries) the requests that now route differently."""
    from toolsift.curation.changes import compare

    old, new = _load_catalog(before, dialect), _load_catalog(after, dialect)
    settings = Settings.from_env()
    labelled: list[tuple[str, tuple[str, ...]]] = []
    if queries is not None:
        from toolsift.catalog.queries import load_queries

        either = Catalog([*new, *(tool for tool in old if tool.name not in new)], source="both versions")
        labelled = [(q.text, q.relevant) for q in load_queries(queries, either)]
    old_router = Router.build(old, embedder_for(settings.model, new), cache=_open_cache(settings, False))
    changes = compare(old_router, old_router.rebuilt(new), labelled, k)  # unchanged tools keep their vectors
    if as_json:
        sys.stdout.write(orjson.dumps(changes, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    click.echo(f"{len(changes['added'])} added, {len(changes['removed'])} removed, {len(changes['changed'])} changed")
    for name in changes["added"]:
        click.echo(f"  + {name}")
    for name in changes["removed"]:
        click.echo(f"  - {name}")
    for name, fields in changes["changed"].items():
        click.echo(f"  ~ {name} ({', '.join(fields)})")
    if queries is not None:
        click.echo(
            f"{len(changes['rerouted'])} of {changes['queries']} requests route differently (top {k}): "
            f"{changes['fixed']} now find a tool they name, {changes['broken']} no longer do"
        )
        for entry in changes["rerouted"][:20]:
            mark = (
                "better"
                if entry["hit_after"] > entry["hit_before"]
                else "worse"
                if entry["hit_before"] > entry["hit_after"]
                else "moved"
            )
            click.echo(
                f"  {mark}: {entry['query']!r}: {', '.join(entry['before'][:3])} -> {', '.join(entry['after'][:3])}"
            )


FINDINGS_PER_CHECK = 10


def _print_findings(findings: Sequence[Finding], show_all: bool) -> None:
    """Findings grouped by check, worst first: each check once, with its count, its first
    ``FINDINGS_PER_CHECK`` findings and their fixes; notes (info) summed up in one line unless
    ``show_all``."""
    by_check: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        by_check.setdefault((finding.severity, finding.code), []).append(finding)
    notes = {code: len(found) for (severity, code), found in by_check.items() if severity == "info"}
    for (severity, code), found in by_check.items():
        if severity == "info" and not show_all:
            continue
        click.echo(f"{severity:<7}  {code} ({len(found)})")
        for finding in found if show_all else found[:FINDINGS_PER_CHECK]:
            click.echo(f"  {', '.join(finding.tools[:12]) or 'the catalog'}: {finding.message}")
            click.echo(f"    fix: {finding.suggestion}")
        if not show_all and len(found) > FINDINGS_PER_CHECK:
            click.echo(f"  ... and {len(found) - FINDINGS_PER_CHECK} more (--all, or --json)")
    if notes and not show_all:
        listed = ", ".join(f"{code} {count}" for code, count in notes.items())
        click.echo(f"notes: {sum(notes.values())} ({listed}); --all shows them")


@main.command()
@click.argument("catalog", type=click.Path(path_type=Path))
@dialect_option
def validate(catalog: Path, dialect: str) -> None:
    """Check CATALOG and print its size, tags and fingerprint (exit 1 and the problem if invalid)."""
    tools = _load_catalog(catalog, dialect)
    tag_counts = tools.tag_counts()
    click.echo(f"{tools.source}: {len(tools)} valid tools, {len(tag_counts)} tags, {tools.fingerprint}")
    if tools.renamed:
        click.echo(
            f"{len(tools.renamed)} names do not match {PROVIDER_NAME_RULE} and are sent to providers as mapped "
            "names (`toolsift lint` lists them with a suggested name)"
        )
    for tag, count in tag_counts.items():
        click.echo(f"  {tag}: {count}")


@main.command()
@click.option(
    "--mcp-servers", "servers_file", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=True,
    help="The servers file the service serves.",
)  # fmt: skip
@click.option("--server", help="Only this server (default: every server in the file).")
@click.option("--tool", "tools", multiple=True, help="Only this tool, by the name toolsift serves (repeatable).")
@click.option("--list", "list_only", is_flag=True, help="Show what waits for approval; pin nothing.")
def approve(servers_file: Path, server: str | None, tools: tuple[str, ...], list_only: bool) -> None:
    """Pin the definitions the MCP servers list now (changed and new tools then serve), or --list
    what waits for approval. A running service picks the approvals file up within a second."""
    import anyio

    from toolsift.mcp.approvals import Approvals, approvals_path
    from toolsift.mcp.review import approve_listed

    approvals = Approvals(approvals_path(servers_file, Settings.from_env(None).approvals))
    for line in anyio.run(approve_listed, servers_file, approvals, server, list(tools), list_only):
        click.echo(line)


@main.command()
@index_option
@click.option("--tag", "tags", multiple=True, help="Only tools with this tag (repeatable: any of them).")
def tools(index_path: Path | None, tags: tuple[str, ...]) -> None:
    """List the names (and tags) of the indexed tools, by name: what --pin and tag rules can name."""
    settings = Settings.from_env(None, index_path=index_path)
    catalog = ToolIndex.load(settings.index_path).catalog
    for tool in sorted(catalog, key=lambda tool: tool.name):
        if not tags or set(tags) & set(tool.tags):
            click.echo(f"{tool.name}  [{', '.join(tool.tags)}]" if tool.tags else tool.name)


@main.command()
@index_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(DEFERRED_FORMATS),
    required=True,
    help="anthropic (Messages API), openai (Responses API) or gemini (Interactions API).",
)
@click.option("--namespaces", is_flag=True, help="With openai: each group of tools as one namespace.")
def deferred(index_path: Path | None, output_format: DeferredFormat, namespaces: bool) -> None:
    """Print the tools array of deferred loading (what GET /deferred returns): the search tool,
    then every tool with defer_loading: true. Send it unchanged on every turn."""
    settings = Settings.from_env(None, index_path=index_path)
    catalog = ToolIndex.load(settings.index_path).catalog
    payload = deferred_tools(
        catalog.tools, output_format, namespaces=deferred_namespaces(catalog, output_format, namespaces)
    )
    sys.stdout.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")


for _command in (*BENCH_COMMANDS, feedback_commands, tune_command, import_commands):
    main.add_command(_command)
