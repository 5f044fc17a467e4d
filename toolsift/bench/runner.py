"""What ``toolsift bench`` does: load datasets, run every method, print and write the results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from toolsift._version import __version__
from toolsift.bench.accuracy import DatasetResult, run_accuracy
from toolsift.bench.datasets import Dataset
from toolsift.embeddings import EmbeddingCache, embedder_for

SCHEMA = "toolsift-bench/1"


def run_benchmarks(
    datasets: Sequence[Dataset],
    model: str,
    ks: Sequence[int],
    methods: Sequence[str],
    cache: EmbeddingCache | None,
    echo: Callable[[str], None],
) -> list[DatasetResult]:
    from toolsift.bench.report import accuracy_tables

    results = []
    for dataset in datasets:
        embedder = embedder_for(model, dataset.catalog)
        echo(f"== {dataset.name}: {len(dataset.catalog)} tools, {len(dataset.queries)} queries, model {embedder.name}")
        result = run_accuracy(dataset, embedder, ks=ks, methods=methods, cache=cache)
        echo(accuracy_tables([result], ks))
        results.append(result)
    return results


def results_document(results: Sequence[DatasetResult], model: str, ks: Sequence[int], command: str) -> dict[str, Any]:
    """The JSON written by ``--json``: stable keys, one flat row per (dataset, method, lang, metric, k)."""
    return {
        "schema": SCHEMA,
        "toolsift_version": __version__,
        "model": model,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "ks": list(ks),
        "datasets": [{key: value for key, value in asdict(result).items() if key != "rows"} for result in results],
        "results": [row for result in results for row in result.rows],
    }


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))


def write_accuracy_report(folder: Path, results: Sequence[DatasetResult], ks: Sequence[int], command: str) -> Path:
    from toolsift.bench.report import accuracy_tables, plot_recall_curves, write_report

    folder.mkdir(parents=True, exist_ok=True)
    images = plot_recall_curves(results, ks, folder)
    markdown = f"Command: `{command}`\n\n" + accuracy_tables(results, ks)
    return write_report(folder, "toolsift: selection accuracy", markdown, images)[1]
