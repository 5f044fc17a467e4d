"""Write benchmarks/RESULTS.md from the JSON that `make bench` produced.

    python benchmarks/results_md.py benchmarks/results/accuracy.json benchmarks/results/performance.json \
        [more accuracy JSON, e.g. the same run with another --model ...]

Every figure in RESULTS.md comes from those files, which come from the commands they record.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from toolsift.bench.accuracy import DatasetResult
from toolsift.bench.report import accuracy_tables, performance_tables


def dataset_results(accuracy: dict[str, Any]) -> list[DatasetResult]:
    results = []
    for meta in accuracy["datasets"]:
        rows = [row for row in accuracy["results"] if row["dataset"] == meta["dataset"]]
        results.append(DatasetResult(meta["dataset"], meta["tools"], meta["queries"], rows, meta["timings"], meta["tokens"]))
    return results


def other_model_section(path: str) -> str:
    accuracy = json.loads(Path(path).read_text())
    return "\n".join([
        f"## Selection accuracy with `{accuracy['model']}` (not the default)",
        "",
        f"Command: `{accuracy['command']}`",
        "",
        accuracy_tables(dataset_results(accuracy), accuracy["ks"]),
    ])


def main(accuracy_path: str, performance_path: str, *others: str) -> str:
    accuracy = json.loads(Path(accuracy_path).read_text())
    performance = json.loads(Path(performance_path).read_text())
    results = dataset_results(accuracy)
    return "\n".join([
        "# Benchmark results",
        "",
        f"toolsift {accuracy['toolsift_version']}, model `{accuracy['model']}`, {accuracy['created_at']}. "
        "Regenerate everything with `make bench` (2 CPU cores, no GPU).",
        "",
        "## Selection accuracy",
        "",
        f"Command: `{accuracy['command']}`",
        "",
        "Methods, all run in one process on the same data: **toolsift** (the router with default "
        "settings), **dense** (cosine between the query and `name + description`, same model), "
        "**bm25** (bm25s Lucene k1=1.5 b=0.75 over `name + description`, the datasets' README "
        "baseline), **bm25-cjk** (bm25 plus Hangul/CJK character bigrams; only where queries are "
        "CJK), **random**. R = Recall, C@5 = all relevant tools in the top 5. ms/query is ranking "
        "time; query embedding is shown apart.",
        "",
        accuracy_tables(results, accuracy["ks"]),
        "## Performance",
        "",
        f"Command: `{performance['command']}`",
        "",
        "Synthetic catalogs; each size in its own process. build/encode = build throughput over "
        "the bare model's encode throughput on the same texts; route/embed = route latency over "
        "the bare query embedding, measured interleaved. HTTP = `POST /route` through uvicorn on "
        "loopback.",
        "",
        performance_tables(performance),
        *(other_model_section(path) for path in others),
    ])


if __name__ == "__main__":
    sys.stdout.write(main(*sys.argv[1:]))
