"""Turn benchmark results into Markdown tables, an HTML page and PNG plots."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolsift.bench.accuracy import DatasetResult

HEADLINE = [
    ("recall", 1),
    ("recall", 3),
    ("recall", 5),
    ("recall", 10),
    ("hit", 1),
    ("hit", 5),
    ("complete", 5),
    ("ndcg", 10),
    ("mrr", None),
]
LABELS = {"recall": "R", "hit": "Hit", "complete": "C", "ndcg": "NDCG", "mrr": "MRR"}


def _label(metric: str, k: int | None) -> str:
    return LABELS[metric] + (f"@{k}" if k is not None else "")


def accuracy_tables(results: Sequence[DatasetResult], ks: Sequence[int]) -> str:
    """One Markdown table per dataset (and per language where there are several)."""
    columns = [(m, k) for m, k in HEADLINE if k is None or k in ks]
    lines: list[str] = []
    for result in results:
        for lang in result.languages:
            title = result.dataset if lang == "all" else f"{result.dataset} — lang={lang}"
            count = next(r["queries"] for r in result.rows if r["lang"] == lang)
            model = f", model `{result.model}`" if result.model else ""
            lines.append(f"### {title} ({result.tools} tools, {count} queries{model})\n")
            lines.append("| method | " + " | ".join(_label(m, k) for m, k in columns) + " | ms/query |")
            lines.append("|---" * (len(columns) + 2) + "|")
            for method in result.methods:
                values = " | ".join(f"{result.value(method, m, k, lang):.3f}" for m, k in columns)
                timing = result.timings.get(method, {}).get("ms_per_query", float("nan"))
                lines.append(f"| {method} | {values} | {timing:.2f} |")
            lines.append("")
        if result.comparisons:
            lines.append(_intervals_line(result, 5 if 5 in ks else max(ks)) + "\n")
        if result.no_tool_queries:
            lines.append(
                f"{result.no_tool_queries} queries labelled with no tool are left out of these metrics "
                "(`toolsift abstention-bench` measures them).\n"
            )
        for method, count in result.refused.items():
            lines.append(
                f"{method} refused {count} queries over the router's length limit (no tools; counted as misses).\n"
            )
        if "query-embedding" in result.timings:
            lines.append(
                f"Query embedding, shared by toolsift and dense and timed apart: "
                f"{result.timings['query-embedding']['ms_per_query']:.2f} ms/query (batched).\n"
            )
        if result.tokens:
            tokens = result.tokens
            parts = ", ".join(
                f"top-{k}: {v['mean_subset_tokens']:.0f} ({100 * v['saving']:.1f}% saved)"
                for k, v in tokens["per_k"].items()
            )
            lines.append(
                f"Schema tokens ({tokens['encoding']}): whole catalog {tokens['catalog_tokens']}; "
                f"toolsift subset mean {parts}.\n"
            )
    return "\n".join(lines)


def _intervals_line(result: DatasetResult, k: int) -> str:
    """toolsift's recall@k with its 95% interval, and its paired difference with each method."""
    differences = ", ".join(
        f"{entry['baseline']} {entry['difference']:+.3f} ± {entry['ci95']:.3f}"
        for entry in result.comparisons
        if entry["k"] == k and entry["baseline"] != "random"
    )
    line = (
        f"95% intervals over the {result.queries} queries: toolsift R@{k} "
        f"{result.value('toolsift', 'recall', k):.3f} ± {result.interval('toolsift', 'recall', k):.3f}"
    )
    return line + (f"; toolsift minus {differences} (paired, same queries)." if differences else ".")


def performance_tables(perf: dict[str, Any]) -> str:
    lines = [
        "| tools | index | build tools/s | bare encode texts/s | build/encode | route p50 / p95 / p99 ms | "
        "bare query embed p50 ms | route/embed p50 | HTTP p50 / p95 / p99 ms | peak RSS MiB | index MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in perf["sizes"]:
        lines.append(
            f"| {row['tools']:,} | {row['kind']} | {row['build_tools_per_s']:.0f} | {row['encode_texts_per_s']:.0f} | "
            f"{row['build_vs_encode']:.2f} | {row['route_ms']['p50']:.2f} / {row['route_ms']['p95']:.2f} / "
            f"{row['route_ms']['p99']:.2f} | {row['embed_ms']['p50']:.2f} | {row['route_vs_embed_p50']:.2f} | "
            f"{row['http_ms']['p50']:.2f} / {row['http_ms']['p95']:.2f} / {row['http_ms']['p99']:.2f} | "
            f"{row['peak_rss_mib']:.0f} | {row['index_mib']:.1f} |"
        )
    if all("multi_step_route_ms" in row for row in perf["sizes"]):
        lines += [
            "",
            'Three-step requests ("please A. Then please B. Finally, please C."), routed with multi-part '
            "splitting (the default: the request embedded, then its three parts in one batch, each part ranked too) "
            "and as one text, interleaved:",
            "",
            "| tools | split p50 / p95 ms | whole p50 / p95 ms | split/whole p50 |",
            "|---|---|---|---|",
        ]
        for row in perf["sizes"]:
            split, whole = row["multi_step_route_ms"], row["multi_step_whole_ms"]
            lines.append(
                f"| {row['tools']:,} | {split['p50']:.2f} / {split['p95']:.2f} | {whole['p50']:.2f} / {whole['p95']:.2f} | "
                f"{row['multi_step_vs_whole_p50']:.2f} |"
            )
    lines += [
        "",
        "Index search alone (query vector given), exact flat vs approximate HNSW on the same vectors, on one "
        "thread as served (the HNSW here is built on one thread too, as in a server's worker threads; "
        "`toolsift build` uses every core):",
        "",
        "| tools | flat p50 / p95 ms | HNSW p50 / p95 ms | HNSW build s | HNSW recall@5 vs flat |",
        "|---|---|---|---|---|",
    ]
    for row in perf["sizes"]:
        lines.append(
            f"| {row['tools']:,} | {row['flat_search_ms']['p50']:.3f} / {row['flat_search_ms']['p95']:.3f} | "
            f"{row['hnsw_search_ms']['p50']:.3f} / {row['hnsw_search_ms']['p95']:.3f} | {row['hnsw_build_s']:.1f} | "
            f"{row['hnsw_recall_at_5']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def plot_recall_curves(results: Sequence[DatasetResult], ks: Sequence[int], folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for result in results:
        figure, axes = plt.subplots(figsize=(6, 4))
        for method in result.methods:
            axes.plot(list(ks), [result.value(method, "recall", k) for k in ks], marker="o", label=method)
        axes.set(title=f"{result.dataset}: Recall@K", xlabel="K", ylabel="Recall@K", ylim=(0, 1))
        axes.set_xticks(list(ks))
        axes.grid(alpha=0.3)
        axes.legend()
        path = folder / f"recall_{result.dataset}.png"
        figure.tight_layout()
        figure.savefig(path, dpi=110)
        plt.close(figure)
        paths.append(path)
    return paths


def plot_latency(perf: dict[str, Any], folder: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [row["tools"] for row in perf["sizes"]]
    figure, axes = plt.subplots(figsize=(6, 4))
    for key, label in (
        ("route_ms", "route, in-process"),
        ("http_ms", "route over HTTP"),
        ("embed_ms", "bare query embedding"),
    ):
        axes.plot(sizes, [row[key]["p50"] for row in perf["sizes"]], marker="o", label=f"{label} p50")
        axes.plot(sizes, [row[key]["p95"] for row in perf["sizes"]], marker=".", linestyle="--", label=f"{label} p95")
    axes.set(xscale="log", title="Latency vs catalog size", xlabel="tools in catalog", ylabel="ms")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    path = folder / "latency_vs_catalog_size.png"
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def write_report(
    folder: Path, title: str, markdown: str, images: Sequence[Path], name: str = "report"
) -> tuple[Path, Path]:
    """Write ``<name>.md`` and ``<name>.html`` (tables plus the plots) into folder."""
    folder.mkdir(parents=True, exist_ok=True)
    body = markdown + "\n" + "\n".join(f"![{p.stem}]({p.name})" for p in images) + "\n"
    md_path = folder / f"{name}.md"
    md_path.write_text(f"# {title}\n\n{body}", encoding="utf-8")
    html_path = folder / f"{name}.html"
    html_path.write_text(_to_html(title, markdown, images), encoding="utf-8")
    return md_path, html_path


def write_performance_report(folder: Path, perf: dict[str, Any]) -> Path:
    """``performance.md`` and ``performance.html`` with the latency plot; returns the HTML's path."""
    folder.mkdir(parents=True, exist_ok=True)
    image = plot_latency(perf, folder)
    markdown = f"Command: `{perf['command']}`\n\n" + performance_tables(perf)
    return write_report(folder, "toolsift: performance", markdown, [image], name="performance")[1]


def _to_html(title: str, markdown: str, images: Sequence[Path]) -> str:
    """Minimal Markdown (headings, tables, paragraphs) to HTML; enough for our own tables."""
    out = [
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:right}td:first-child,th:first-child{text-align:left}</style>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    rows: list[list[str]] = []

    def flush() -> None:
        if rows:
            head, *rest = rows
            out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>")
            out.extend("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rest)
            out.append("</table>")
            rows.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if not all(set(cell) <= {"-"} for cell in cells):
                rows.append(cells)
            continue
        flush()
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{html.escape(line.lstrip('#').strip())}</h{level}>")
        elif line.strip():
            out.append(f"<p>{html.escape(line)}</p>")
    flush()
    out.extend(f"<p><img src='{html.escape(p.name)}' alt='{html.escape(p.stem)}'></p>" for p in images)
    return "\n".join(out)
