"""The benchmark commands: ``toolsift bench``, ``abstention-bench``, ``sessions-bench`` and ``perf``.

They are registered on the main ``toolsift`` group (``toolsift.cli``) with ``add_command``.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import click

from toolsift.bench.datasets import Dataset, find_datasets, load_dataset
from toolsift.bench.runner import write_json
from toolsift.catalog import Catalog
from toolsift.embeddings import embedder_for
from toolsift.index import INDEX_KINDS
from toolsift.router import MAX_K, Router
from toolsift.settings import Settings

Command = TypeVar("Command", bound=Callable[..., Any])


def dataset_folders(function: Command) -> Command:
    """``--dataset DIR`` (repeatable) and ``--datasets ROOT``, handed to the command as
    ``folders``: the dataset folders to run, in the order given."""

    @click.option(
        "--dataset",
        "dataset_dirs",
        multiple=True,
        type=click.Path(path_type=Path, file_okay=False),
        help="A dataset folder holding tools.jsonl and queries.jsonl (repeatable).",
    )
    @click.option(
        "--datasets",
        "datasets_root",
        type=click.Path(path_type=Path, file_okay=False),
        help="Run every dataset folder under this one.",
    )
    @functools.wraps(function)
    def with_folders(*args: Any, dataset_dirs: tuple[Path, ...], datasets_root: Path | None, **kwargs: Any) -> Any:
        folders = [checked_dataset(folder) for folder in dataset_dirs]
        folders += datasets_under(datasets_root) if datasets_root else []
        return function(*args, folders=folders, **kwargs)

    return with_folders  # type: ignore[return-value]


DATA_HELP = (
    'A dataset is a folder holding tools.jsonl (a catalog) and queries.jsonl ({"query", "relevant": '
    "[tool names]} a line); benchmarks/README.md says where the shared ones come from and how to make yours"
)


def checked_dataset(folder: Path) -> Path:
    """``folder`` when it holds a dataset; else a usage error saying what one is."""
    missing = [name for name in ("tools.jsonl", "queries.jsonl") if not (folder / name).is_file()]
    if missing:
        raise click.UsageError(f"{folder} is not a dataset (no {' or '.join(missing)} there). {DATA_HELP}")
    return folder


def datasets_under(root: Path) -> list[Path]:
    """The dataset folders under ``root``; a usage error when there is none."""
    if not root.is_dir():
        raise click.UsageError(f"no folder at {root}. {DATA_HELP}")
    found = find_datasets(root)
    if not found:
        raise click.UsageError(f"no dataset folder under {root}. {DATA_HELP}")
    return found


model_option = click.option("--model", help="Embedding model [default: auto, chosen per catalog].")
json_option = click.option(
    "--json", "json_path", type=click.Path(path_type=Path), help="Write the figures here as JSON."
)
no_cache_option = click.option("--no-cache", is_flag=True, help="Do not use the on-disk embedding cache.")


def parse_ks(value: str) -> list[int]:
    """``"1,3,5"`` -> ``[1, 3, 5]``: sorted, distinct, positive."""
    try:
        ks = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers such as 1,3,5,10, got {value!r}") from None
    if not ks or ks[0] < 1:
        raise click.BadParameter("every K must be a positive integer")
    return ks


def command_line(name: str) -> str:
    """The command as it was run, recorded in the JSON results."""
    return f"toolsift {name} " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else f"toolsift {name}"


def parse_fractions(value: str) -> list[float]:
    """``"0,0.1,0.5"`` -> ``[0.0, 0.1, 0.5]``: each from 0 to under 1."""
    try:
        fractions = [float(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated fractions such as 0,0.1,0.25,0.5, got {value!r}") from None
    if not fractions or any(not 0 <= f < 1 for f in fractions):
        raise click.BadParameter(f"each fraction must be at least 0 and under 1, got {value!r}")
    return fractions


def _feedback_bench(
    datasets: list[Dataset],
    fractions: list[float],
    ks: list[int],
    settings: Settings,
    cache: Any,
    json_path: Path | None,
    command: str,
) -> None:
    from toolsift.bench.feedback import curve_table, points_document, run_feedback_curve

    points = []
    for dataset in datasets:
        embedder = embedder_for(settings.model, dataset.catalog)
        click.echo(f"== {dataset.name}: {len(dataset.catalog)} tools, model {embedder.name}, feedback {fractions}")
        found = run_feedback_curve(dataset, embedder, fractions, ks, cache)
        click.echo(curve_table(found, 5 if 5 in ks else ks[-1]))
        points += found
    write_figures(json_path, points_document(points, settings.model, command))


@dataclass(frozen=True)
class TuningRun:
    split_by: Literal["tool", "query"]
    kinds: list[str]
    time_limit: float
    max_pairs: int | None
    hard_negatives: bool = False


def _tuning_bench(
    datasets: list[Dataset], fractions: list[float], ks: list[int], settings: Settings, run: TuningRun,
    json_path: Path | None, command: str,
) -> None:  # fmt: skip
    from toolsift.bench.tuning import run_tuning_curve, tuning_document, tuning_table
    from toolsift.tuning.trainer import Recipe

    points = []
    for dataset in datasets:
        embedder = embedder_for(settings.model, dataset.catalog)
        click.echo(f"== {dataset.name}: {len(dataset.catalog)} tools, model {embedder.name}, split by {run.split_by}, "
                   f"F {fractions}, tuning {','.join(run.kinds)}")  # fmt: skip
        found = run_tuning_curve(dataset, embedder, fractions, ks, split_by=run.split_by, kinds=run.kinds,
                                 time_limit=run.time_limit, max_pairs=run.max_pairs,
                                 recipe=Recipe(hard_negatives=run.hard_negatives))  # fmt: skip
        click.echo(tuning_table(found, 5 if 5 in ks else ks[-1]))
        points += found
    write_figures(json_path, tuning_document(points, settings.model, command))


def need_folders(folders: list[Path]) -> None:
    if not folders:
        raise click.UsageError("say what to run: --dataset DIR or --datasets ROOT")


def write_figures(json_path: Path | None, document: dict[str, Any]) -> None:
    if json_path:
        write_json(json_path, document)
        click.echo(f"wrote {json_path}")


def router_for(catalog: Catalog, settings: Settings, no_cache: bool = False) -> Router:
    """A router over ``catalog`` with the model the settings name (auto: chosen per catalog)."""
    cache = None if no_cache else settings.open_cache()
    return Router.build(catalog, embedder_for(settings.model, catalog), cache=cache)


def dataset_pairs(folders: list[Path], tools: Path | None, queries: Path | None) -> list[tuple[Path, Path]]:
    pairs = [(folder / "tools.jsonl", folder / "queries.jsonl") for folder in folders]
    if tools or queries:
        if not (tools and queries):
            raise click.UsageError("--tools and --queries go together")
        pairs.append((tools, queries))
    if not pairs:
        raise click.UsageError("say what to run: --tools T --queries Q, --dataset DIR or --datasets ROOT")
    return pairs


@click.command()
@click.option("--tools", type=click.Path(path_type=Path), help="tools.jsonl of one dataset (with --queries).")
@click.option("--queries", type=click.Path(path_type=Path), help="queries.jsonl of that dataset.")
@dataset_folders
@click.option("--k", "ks", default="1,3,5,10", show_default=True, help="Comma-separated cut-offs.")
@click.option(
    "--methods",
    default="toolsift,toolsift-whole,dense,bm25,bm25-cjk,random",
    show_default=True,
    help="Comma-separated methods to compare (toolsift-whole: without splitting multi-part queries; bm25-cjk "
    "runs only where queries are CJK text).",
)
@click.option("--limit", type=int, help="Score a seeded random sample of this many queries per dataset.")
@model_option
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="Write the results here as JSON.")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write report.md, report.html and PNG plots here.",
)
@click.option(
    "--feedback-split",
    "feedback_split",
    help="Comma-separated fractions F (e.g. 0,0.1,0.25,0.5): feed F of each dataset's queries as feedback "
    "(seeded) and score toolsift with and without it on the rest (see benchmarks/README.md).",
)
@click.option(
    "--split-by",
    type=click.Choice(["query", "tool"]),
    default=None,
    help="With --feedback-split: 'tool' makes F of the tools known (their requests fed, the requests for the "
    "other tools scored) and adds the tuned methods; 'query' with --tune adds them to the query split.",
)
@click.option("--tune", "tune_kinds", help="With --feedback-split: tune on the fed pairs and score toolsift+tuned and "
              "toolsift+tuned+feedback: auto (what toolsift tune would publish), full, adapter, or several "
              "(auto,full,adapter) [default with --split-by tool: auto].")  # fmt: skip
@click.option("--tune-time-limit", type=click.FloatRange(1), default=900, show_default=True,
              help="Seconds of training per kind.")  # fmt: skip
@click.option("--tune-pairs", type=click.IntRange(1), help="Train on at most this many fed pairs (a seeded sample).")
@click.option("--tune-hard-negatives", is_flag=True, help="Train with each request's hardest wrong tool as a negative.")
@click.option("--group-by-tag", type=click.IntRange(0, 16), help="Group each tool by its tag at this position (0: the "
              "first), the dataset's natural grouping, before ranking (compare toolsift with toolsift-groups[-W]).")  # fmt: skip
@no_cache_option
def bench(
    tools: Path | None,
    queries: Path | None,
    folders: list[Path],
    ks: str,
    methods: str,
    limit: int | None,
    model: str | None,
    json_path: Path | None,
    report_dir: Path | None,
    feedback_split: str | None,
    split_by: str | None,
    tune_kinds: str | None,
    tune_time_limit: float,
    tune_pairs: int | None,
    tune_hard_negatives: bool,
    group_by_tag: int | None,
    no_cache: bool,
) -> None:
    """Measure selection accuracy of toolsift and baselines (BM25, dense, random) on labelled queries."""
    from toolsift.bench.runner import results_document, run_benchmarks, write_accuracy_report

    cutoffs = parse_ks(ks)
    datasets = [load_dataset(t, q).sample(limit) for t, q in dataset_pairs(folders, tools, queries)]
    if group_by_tag is not None:
        datasets = [dataset.grouped_by_tag(group_by_tag) for dataset in datasets]
    settings = Settings.from_env(None, model=model)
    command = command_line("bench")
    if feedback_split is not None and (split_by == "tool" or tune_kinds):
        kinds = [k.strip() for k in (tune_kinds or "auto").split(",") if k.strip()]
        if not kinds or any(k not in ("auto", "full", "adapter") for k in kinds):
            raise click.BadParameter(
                f"--tune takes auto, full or adapter, or several: auto,full,adapter; not {tune_kinds!r}"
            )
        tuning = TuningRun(split_by or "query", kinds, tune_time_limit, tune_pairs, tune_hard_negatives)  # type: ignore[arg-type]
        _tuning_bench(datasets, parse_fractions(feedback_split), cutoffs, settings, tuning, json_path, command)
        return
    if feedback_split is not None:
        cache = None if no_cache else settings.open_cache()
        _feedback_bench(datasets, parse_fractions(feedback_split), cutoffs, settings, cache, json_path, command)
        return
    results = run_benchmarks(
        datasets,
        settings.model,
        cutoffs,
        [m.strip() for m in methods.split(",") if m.strip()],
        None if no_cache else settings.open_cache(),
        click.echo,
    )
    if json_path:
        write_figures(json_path, results_document(results, settings.model, cutoffs, command))
    if report_dir:
        click.echo(f"wrote {write_accuracy_report(report_dir, results, cutoffs, command)}")


@click.command("abstention-bench")
@dataset_folders
@click.option(
    "--limit",
    type=click.IntRange(1, 1_000_000),
    default=500,
    show_default=True,
    help="Seeded sample of queries per dataset.",
)
@click.option("-k", "--k", "k", type=click.IntRange(1, MAX_K), default=5, show_default=True)
@click.option(
    "--no-tool",
    "no_tool_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="YAML of requests no tool serves, by language (default: benchmarks/abstention/no_tool_eval.yaml).",
)
@click.option(
    "--fed",
    type=click.FloatRange(0, 0.9),
    default=0.0,
    show_default=True,
    help="Share of the answerable queries learned as feedback first (seeded); the rest are scored.",
)
@model_option
@json_option
def abstention_bench(
    folders: list[Path],
    limit: int,
    k: int,
    no_tool_path: Path | None,
    fed: float,
    model: str | None,
    json_path: Path | None,
) -> None:
    """Measure what each min_confidence keeps of answerable queries and abstains on when no tool fits."""
    from toolsift.bench.abstention import NO_TOOL_EVAL, abstention_table, generic_no_tool, run_abstention

    need_folders(folders)
    path = no_tool_path or NO_TOOL_EVAL
    if not path.exists():
        raise click.UsageError(f"no no-tool request file at {path}: pass --no-tool FILE")
    settings = Settings.from_env(None, model=model)
    results = []
    for folder in folders:
        dataset = _load(folder).sample(limit)
        router = router_for(dataset.catalog, settings)
        results.append(run_abstention(dataset, router, k, no_tool=generic_no_tool(path), fed=fed))
        click.echo(abstention_table(results[-1:]))
    write_figures(
        json_path,
        {
            "schema": "toolsift-abstention/2",
            "model": settings.model,
            "command": command_line("abstention-bench"),
            "results": results,
        },
    )


@click.command("sessions-bench")
@dataset_folders
@click.option(
    "--sessions",
    "session_count",
    type=click.IntRange(1, 100000),
    default=200,
    show_default=True,
    help="Sessions per dataset.",
)
@click.option("--turns", type=click.IntRange(2, 1000), default=8, show_default=True, help="Turns per session.")
@click.option(
    "-k", "--k", "k", type=click.IntRange(1, MAX_K), default=5, show_default=True, help="Tools routed per turn."
)
@click.option(
    "--follow-up",
    type=click.FloatRange(0, 1),
    default=0.6,
    show_default=True,
    help="Chance a turn continues an earlier turn's task (shares a needed tool).",
)
@click.option(
    "--cap", type=click.IntRange(1, 10000), default=64, show_default=True, help="Session cap (tools) before a reset."
)
@model_option
@json_option
@no_cache_option
def sessions_bench(
    folders: list[Path],
    session_count: int,
    turns: int,
    k: int,
    follow_up: float,
    cap: int,
    model: str | None,
    json_path: Path | None,
    no_cache: bool,
) -> None:
    """Measure prompt-cache stability over multi-turn sessions: sticky sessions vs per-query Top-K."""
    from toolsift.bench.sessions import SessionPlan, run_sessions, sessions_table
    from toolsift.router.tokens import SchemaTokens

    need_folders(folders)
    settings = Settings.from_env(None, model=model)
    plan = SessionPlan(session_count, turns, k, follow_up, cap)
    results = []
    for folder in folders:
        dataset = _load(folder)
        click.echo(f"== {dataset.name}: {len(dataset.catalog)} tools, {session_count} sessions of {turns} turns")
        router = router_for(dataset.catalog, settings, no_cache)
        results.append(run_sessions(dataset, router, plan, SchemaTokens(dataset.catalog)))
        click.echo(sessions_table(results[-1:]))
    write_figures(
        json_path,
        {
            "schema": "toolsift-sessions/1",
            "model": settings.model,
            "command": command_line("sessions-bench"),
            "results": results,
        },
    )


@click.command()
@click.option(
    "--sizes", default="1000,10000,100000", show_default=True, help="Comma-separated catalog sizes (synthetic tools)."
)
@click.option(
    "--queries",
    "query_count",
    type=click.IntRange(10, 100000),
    default=200,
    show_default=True,
    help="Timed queries per size (in-process and over HTTP each).",
)
@click.option(
    "--kind",
    type=click.Choice(INDEX_KINDS),
    default="auto",
    show_default=True,
    help="Index kind the router uses (auto: flat up to 20,000 tools, hnsw above).",
)
@model_option
@json_option
@click.option(
    "--report",
    "report_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write performance.md/.html and a latency plot here.",
)
@click.option(
    "--backends",
    "compare_backends",
    is_flag=True,
    help="Compare the embedding backends instead (torch vs onnx, all-MiniLM-L6-v2, on the first size): latency, "
    "HTTP throughput at 1/4/16 clients, cold route, memory, build throughput.",
)
@click.option(
    "--replicas",
    "compare_replicas",
    is_flag=True,
    help="Compare 1 and 2 replicas sharing a Redis (a throwaway redis-server on loopback), on the first size: "
    "throughput, p50/p95 and session continuity under 16 clients' sessions spread round robin.",
)
@click.option(
    "--against",
    metavar="REF",
    help="Serve the bundled catalog with this checkout and with commit REF (a git worktree) side by side: "
    "throughput and p50/p95 at 1/4/16 clients, median of --rounds rounds, fresh queries every round.",
)
@click.option("--rounds", type=click.IntRange(1, 50), default=3, show_default=True, help="With --against.")
@click.option(
    "--gateway",
    "gateway_servers",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="Measure the gateway in front of these MCP servers instead (a servers file): added latency per call "
    "over calling the server directly with the same SDK client, and the tokens per turn of each --expose mode "
    "against listing every upstream tool.",
)
@click.option(
    "--curation",
    "curation_load",
    is_flag=True,
    help="Measure whether curation stalls routing: route p50/p95 idle and while --clients clients ask for tool "
    "pages, findings and the map, on a synthetic catalog of the first --sizes size.",
)
@click.option("--clients", type=click.IntRange(1, 200), default=20, show_default=True, help="With --curation.")
@click.option(
    "--feedback-memory",
    is_flag=True,
    help="Measure whether a server's memory follows the retained feedback: RSS while --requests feedback "
    "requests arrive (a route after every ten), and after DELETE /admin/feedback, on a synthetic catalog of the "
    "first --sizes size.",
)
@click.option("--tool", default="echo", show_default=True, help="With --gateway: the tool to time.")
@click.option(
    "--arguments", "tool_arguments", default='{"message": "hello"}', show_default=True,
    help="With --gateway: the tool's arguments (JSON).",
)  # fmt: skip
@click.option("--calls", type=click.IntRange(10, 100000), default=500, show_default=True, help="With --gateway.")
@click.option(
    "--catalog", "gateway_catalog", type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="With --gateway: static tools served beside the servers' (as `toolsift mcp --catalog`).",
)  # fmt: skip
@click.option(
    "--requests",
    type=click.IntRange(16, 100000),
    default=400,
    show_default=True,
    help="With --backends, --replicas or --against: HTTP requests per measurement; with --feedback-memory: "
    "feedback requests.",
)
def perf(
    sizes: str, query_count: int, kind: str, model: str | None, json_path: Path | None, report_dir: Path | None,
    compare_backends: bool, compare_replicas: bool, against: str | None, rounds: int, requests: int,
    gateway_servers: Path | None, tool: str, tool_arguments: str, calls: int, gateway_catalog: Path | None,
    curation_load: bool, clients: int, feedback_memory: bool,
) -> None:  # fmt: skip
    """Measure build throughput, route latency (in-process, HTTP) and memory at several catalog sizes
    (or, with --backends, the torch and onnx embedding backends side by side; with --replicas, one
    replica against two; with --gateway, the MCP gateway)."""
    if curation_load:
        from toolsift.bench.curation_load import curation_table, run_curation_load

        settings = Settings.from_env(None, model=model)
        document = run_curation_load(parse_ks(sizes)[0], requests, clients, settings.model, click.echo)
        document["command"] = command_line("perf")
        click.echo(curation_table(document))
        write_figures(json_path, document)
        return
    if feedback_memory:
        from toolsift.bench.feedback_memory import feedback_memory_table, run_feedback_memory

        settings = Settings.from_env(None, model=model)
        document = run_feedback_memory(parse_ks(sizes)[0], requests, settings.model, click.echo)
        document["command"] = command_line("perf")
        click.echo(feedback_memory_table(document))
        write_figures(json_path, document)
        return
    if gateway_servers:
        from toolsift.bench.gateway import gateway_table, run_gateway

        try:
            arguments = json.loads(tool_arguments)
        except json.JSONDecodeError as error:
            raise click.BadParameter(f"not JSON: {error}", param_hint="--arguments") from None
        document = run_gateway(gateway_servers, tool, arguments, calls, click.echo, catalog=gateway_catalog)
        document["command"] = command_line("perf")
        click.echo(gateway_table(document))
        write_figures(json_path, document)
        return
    if against:
        from toolsift.bench.against import against_table, run_against

        document = run_against(against, requests, rounds, click.echo)
        document["command"] = command_line("perf")
        click.echo(against_table(document))
        write_figures(json_path, document)
        return
    if compare_replicas:
        from toolsift.bench.replicas import replicas_table, run_replicas

        document = run_replicas(parse_ks(sizes)[0], requests, 16, click.echo)
        document["command"] = command_line("perf")
        click.echo(replicas_table(document))
        write_figures(json_path, document)
        return
    if compare_backends:
        from toolsift.bench.backends import backends_table, run_backends

        document = run_backends(parse_ks(sizes)[0], query_count, requests, click.echo)
        document["command"] = command_line("perf")
        click.echo(backends_table(document))
        write_figures(json_path, document)
        return
    from toolsift.bench.performance import run_sizes
    from toolsift.bench.report import performance_tables, write_performance_report

    settings = Settings.from_env(None, model=model)
    document = run_sizes(parse_ks(sizes), query_count, kind, settings.model, click.echo)
    document["command"] = command_line("perf")
    click.echo(performance_tables(document))
    write_figures(json_path, document)
    if report_dir:
        click.echo(f"wrote {write_performance_report(report_dir, document)}")


def _load(folder: Path) -> Dataset:
    return load_dataset(folder / "tools.jsonl", folder / "queries.jsonl")


@click.command("security-bench")
@click.option(
    "--sets", "sets_folder", type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=Path("benchmarks/security"), show_default=True, help="The evaluation sets (sets.json and its files).",
)  # fmt: skip
@click.option(
    "--catalog", "catalogs", multiple=True, type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A real catalog to count false positives on (repeatable).",
)  # fmt: skip
@click.option("--datasets", "datasets_root", type=click.Path(path_type=Path, file_okay=False), help="Every "
              "dataset folder's tools.jsonl under this one, as --catalog.")  # fmt: skip
@json_option
def security_bench(
    sets_folder: Path, catalogs: tuple[Path, ...], datasets_root: Path | None, json_path: Path | None
) -> None:
    """How well the security-* lint checks tell poisoned tool definitions from honest ones, and how
    many real tools they flag."""
    from toolsift.bench.security import run_security, security_table

    paths = list(catalogs)
    if datasets_root is not None:
        paths += sorted(folder / "tools.jsonl" for folder in datasets_under(datasets_root))
    document = run_security(sets_folder, paths, click.echo)
    document["command"] = command_line("security-bench")
    click.echo(security_table(document))
    write_figures(json_path, document)


COMMANDS = (bench, abstention_bench, sessions_bench, perf, security_bench)
