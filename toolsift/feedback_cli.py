"""``toolsift feedback`` (the command line's, kept apart so other commands do not import the
service): import logs of which tool answered which request, show and reset what
the service learned. They work on the log beside the index folder, which running servers follow
(their next request applies the change)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
import orjson

from toolsift.catalog import Catalog, load_catalog
from toolsift.index.feedback_log import feedback_log_path
from toolsift.router import within_query_limit
from toolsift.router.usage import Feedback
from toolsift.settings import Settings

if TYPE_CHECKING:
    from toolsift.service.usage_feed import UsageFeed

index_option = click.option(
    "--index",
    "index_path",
    type=click.Path(path_type=Path),
    help="Index folder [default: TOOLSIFT_INDEX_PATH or var/index].",
)
tenant_option = click.option("--tenant", help="The tenant whose feedback this is (omit without tenants).")


@click.group()
def feedback() -> None:
    """Learning from use: import feedback logs, show or reset what routing learned."""


@feedback.command("import")
@click.argument("log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@index_option
def import_log(log: Path, index_path: Path | None) -> None:
    """Add LOG.jsonl's lines, {"query", "tool", "session_id"?, "tenant"?}, to the feedback of the
    index folder. Every line is checked first: one bad line imports nothing."""
    folder = Settings.from_env(None, index_path=index_path).index_path
    catalog = load_catalog(folder / "catalog.jsonl", dialect="toolsift")
    items = [_feedback_line(line, number, log, catalog) for number, line in _lines(log)]
    _feed(index_path).record(items)
    click.echo(f"imported {len(items)} feedback lines into {feedback_log_path(folder)}")


def _lines(log: Path) -> list[tuple[int, bytes]]:
    return [(n, line) for n, line in enumerate(log.read_bytes().splitlines(), 1) if line.strip()]


def _feedback_line(line: bytes, number: int, log: Path, catalog: Catalog) -> Feedback:
    where = f"{log} line {number}"
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise click.ClickException(f"{where}: not JSON ({error}); each line is one JSON object") from None
    if not isinstance(record, dict):
        raise click.ClickException(f"{where}: expected a JSON object with 'query' and 'tool'")
    query, tool = record.get("query"), record.get("tool")
    if not isinstance(query, str) or not query.strip() or not within_query_limit(query):
        raise click.ClickException(f"{where}: 'query' must be the request's text (1 to 8,192 characters)")
    name = catalog.resolve(tool) if isinstance(tool, str) else None
    if name is None or name not in catalog:
        raise click.ClickException(f"{where}: no tool named {tool!r} in the index; `toolsift tools` lists the names")
    session, tenant = record.get("session_id"), record.get("tenant")
    contributor = f"import:{log.name}" + (
        f":{session}" if isinstance(session, str) and session else ""
    )  # the operator vouches
    return Feedback(query.strip(), name, tenant if isinstance(tenant, str) else "", contributor)


@feedback.command("show")
@index_option
@tenant_option
@click.option("--json", "as_json", is_flag=True, help="Print the retained requests as JSON.")
def show(index_path: Path | None, tenant: str | None, as_json: bool) -> None:
    """What is retained, per tool: how many requests (and, with --json, which)."""
    feed = _feed(index_path)
    tools = feed.book.summary(tenant or "")
    if as_json:
        click.echo(orjson.dumps({"tenant": tenant, "tools": tools}, option=orjson.OPT_INDENT_2).decode())
        return
    for name, requests in sorted(tools.items()):
        click.echo(f"{len(requests):6d}  {name}")
    click.echo(f"{sum(len(r) for r in tools.values())} requests for {len(tools)} tools")


@feedback.command("reset")
@index_option
@tenant_option
@click.option("--tool", help="Only this tool's feedback.")
@click.option("--every-tenant", is_flag=True, help="Every tenant's feedback.")
def reset(index_path: Path | None, tenant: str | None, tool: str | None, every_tenant: bool) -> None:
    """Forget feedback (the tenant's, or every tenant's; one tool's with --tool)."""
    forgotten = _feed(index_path).reset(None if every_tenant else (tenant or ""), tool)
    click.echo(f"forgot {forgotten} requests")


def _feed(index_path: Path | None) -> UsageFeed:
    from toolsift.service.usage_feed import UsageFeed  # the service package is heavy: only when used

    feed = UsageFeed()
    feed.open_log(feedback_log_path(Settings.from_env(None, index_path=index_path).index_path))
    return feed
