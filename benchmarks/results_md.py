"""Write benchmarks/RESULTS.md from the JSON that `make bench` produced.

    python benchmarks/results_md.py benchmarks/results/accuracy.json benchmarks/results/performance.json \
        [more JSON: accuracy with another --model, or sessions-bench results ...]

Every figure in RESULTS.md comes from those files, which come from the commands they record.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from toolsift.bench.abstention import abstention_table
from toolsift.bench.accuracy import DatasetResult
from toolsift.bench.backends import backends_table
from toolsift.bench.curation_load import curation_table
from toolsift.bench.feedback_memory import FED_TOOLS, feedback_memory_table
from toolsift.bench.gateway import gateway_table
from toolsift.bench.report import accuracy_tables, performance_tables
from toolsift.bench.security import security_table
from toolsift.bench.sessions import sessions_table


def dataset_results(accuracy: dict[str, Any]) -> list[DatasetResult]:
    results = []
    for meta in accuracy["datasets"]:
        rows = [row for row in accuracy["results"] if row["dataset"] == meta["dataset"]]
        results.append(
            DatasetResult(
                meta["dataset"],
                meta["tools"],
                meta["queries"],
                meta.get("model", ""),
                rows,
                meta["timings"],
                meta["tokens"],
                no_tool_queries=meta.get("no_tool_queries", 0),
                refused=meta.get("refused", {}),
                comparisons=meta.get("comparisons", []),
            )
        )
    return results


def other_model_section(path: str) -> str:
    accuracy = json.loads(Path(path).read_text())
    return "\n".join(
        [
            f"## Selection accuracy with `{accuracy['model']}` (not the default)",
            "",
            f"Command: `{accuracy['command']}`",
            "",
            accuracy_tables(dataset_results(accuracy), accuracy["ks"]),
        ]
    )


TARGETS = {"metatool": 0.60, "apibench": 0.35, "sealtools": 0.85, "functionchat_ko": 0.90}
"""Recall@5 goals per dataset (issue "Accuracy"); on every dataset also >= bm25 + 0.15 and >= dense + 0.05."""
BM25_MARGIN, DENSE_MARGIN = 0.15, 0.05


def targets_section(results: list[DatasetResult]) -> str:
    def mark(margin: float, interval: float | None) -> str:
        spread = f" ± {interval:.3f}" if interval else ""
        return f"{'✓' if margin >= -5e-4 else '✗'} ({margin:+.3f}{spread})"

    def against(result: DatasetResult, value: float, baseline: str, margin: float) -> str:
        goal = result.value(baseline, "recall", 5) + margin
        paired = result.comparison(baseline, 5)
        interval = paired["ci95"] if paired else None
        return f"{goal:.3f} {mark(value - goal, interval)}"

    lines = [
        "## Accuracy goals (Recall@5, default settings)",
        "",
        "Each goal with whether toolsift meets it and by how much: an absolute goal per dataset, "
        f"bm25 + {BM25_MARGIN} and dense + {DENSE_MARGIN} (the baselines above, same model). "
        "± is the 95% interval of that margin over the dataset's queries: of toolsift's recall for the "
        "absolute goal, of the per-query difference with the baseline (paired) for the others. A margin "
        "smaller than its ± is within what the query sample can tell apart.",
        "",
        "| dataset | model | queries | toolsift R@5 | goal | bm25 + 0.15 | dense + 0.05 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for result in results:
        if result.dataset not in TARGETS or "toolsift" not in result.methods:
            continue
        value = result.value("toolsift", "recall", 5)
        goal = TARGETS[result.dataset]
        lines.append(
            f"| {result.dataset} | {result.model} | {result.queries} | {value:.3f} "
            f"| {goal:.3f} {mark(value - goal, result.interval('toolsift', 'recall', 5))} "
            f"| {against(result, value, 'bm25', BM25_MARGIN)} | {against(result, value, 'dense', DENSE_MARGIN)} |"
        )
    return "\n".join(lines) + "\n"


def sessions_section(document: dict[str, Any]) -> str:
    first = document["results"][0]
    model = first["cost_model"]
    return "\n".join(
        [
            f"## Prompt-cache stability over sessions ({first['turns']} turns, cap {first['cap']})",
            "",
            f"Command: `{document['command']}`",
            "",
            f"{first['sessions']} seeded sessions per dataset; each turn after the first continues an earlier turn's "
            f"task (a query needing one of its tools) with probability {first['follow_up']}, else is a random query. "
            f"Every turn routes Top-{first['k']} once; methods differ in the tools array they send. "
            "**prefix kept**: the previous array is an exact prefix of this one; **identical**: same array, so the "
            "whole previous prompt (tools, system, messages) is a cache hit; **recall in sent**: gold tools within "
            "the array; **tool tokens cached**: share of the array's tokens matching the previous array from the "
            "start; **billed/turn**: modelled input cost in full-price tokens with a "
            f"{model['system_tokens']}-token system prompt, {model['turn_tokens']} message tokens per earlier turn "
            f"and cache reads at {model['cached_price']} of the price (providers cache tools → system → messages, so "
            "a changed tools array re-bills everything after its common prefix). Turn 1 is left out of all but recall. "
            "**deferred**: deferred loading — the array (every tool deferred, only the search tool rendered) never "
            "changes; recall is within the tools loaded so far; tools/turn and tool tokens/turn count the newly "
            "loaded definitions (plus the search tool's); billed/turn counts both requests of a turn (the search "
            f"call and the answer), a {model.get('search_roundtrip_tokens', 60)}-token search round trip and each new "
            "definition once, the rest read from the cache.",
            "",
            sessions_table(document["results"]),
        ]
    )


def main(accuracy_path: str, performance_path: str, *others: str) -> str:
    accuracy = json.loads(Path(accuracy_path).read_text())
    performance = json.loads(Path(performance_path).read_text())
    results = dataset_results(accuracy)
    return "\n".join(
        [
            "# Benchmark results",
            "",
            f"toolsift {accuracy['toolsift_version']}, model `{accuracy['model']}` (auto: all-MiniLM-L6-v2, or "
            "multilingual-e5-small for catalogs described mostly in a non-Latin script; "
            f"each dataset's heading names the one used), {accuracy['created_at']}. "
            "Regenerate everything with `make bench` (2 CPU cores, no GPU).",
            "",
            "## Selection accuracy",
            "",
            f"Command: `{accuracy['command']}`",
            "",
            "Methods, all run in one process on the same data: **toolsift** (the router with default "
            "settings), **toolsift-whole** (the same without splitting multi-part queries), **dense** "
            "(cosine between the query and `name + description`, same model), "
            "**bm25** (bm25s Lucene k1=1.5 b=0.75 over `name + description`, the datasets' README "
            "baseline), **bm25-cjk** (bm25 plus Hangul/CJK character bigrams; only where queries are "
            "CJK), **random**. R = Recall, C@5 = all relevant tools in the top 5. ms/query is ranking "
            "time; query embedding is shown apart.",
            "",
            accuracy_tables(results, accuracy["ks"]),
            targets_section(results),
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
            *(_other_section(path) for path in others),
        ]
    )


def abstention_section(document: dict[str, Any]) -> str:
    fed = any(result.get("fed") for result in document["results"])
    return "\n".join(
        [
            '## Abstention: saying "no tool" when none fits' + (" (fed: per-catalog recalibration)" if fed else ""),
            "",
            *(
                [
                    "Half of each dataset's sampled requests are learned as feedback first; the other half is "
                    "scored, with the feedback's views, as in a catalog in use. Each match's reported confidence "
                    "is then shared with its crowd and recalibrated from the fed requests (`Recalibration`), and "
                    "the reliability of the scored requests' matches is given for it and for the shape's before "
                    "both; the sweep and the abstention use the shape's.",
                    "",
                ]
                if fed
                else []
            ),
            f"Command: `{document['command']}`",
            "",
            "Per dataset, each sampled query with relevant tools is routed against the whole catalog (answerable) "
            "and with its relevant tools out of reach (no tool fits by construction; near-duplicates stay, a hard "
            "case); the generic no-tool requests of `benchmarks/abstention/no_tool_eval.yaml` (English, German, "
            "Spanish, Korean; none in the set toolsift calibrates on) are routed against each catalog. Every "
            "threshold of the sweep applies the router's own rule to the same matches; the default is marked. "
            "Each match reports its shape's confidence shared with its crowd (`confidence.crowd_share`: when the "
            "best 20 matches' confidences sum to more tools than the request asks for, each keeps that share); "
            "the reliability is given for what it reports and for the shape's (which the abstention compares).",
            "",
            abstention_table(document["results"]),
        ]
    )


def backends_section(document: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"## Embedding backends: torch vs ONNX Runtime ({document['model']}, {document['tools']:,} tools)",
            "",
            f"Command: `{document['command']}`",
            "",
            "Each backend in its own process (in-process figures and that process's memory), then a real "
            "`toolsift serve` on it under bounded loopback load of distinct queries (each client its own share, "
            "on one keep-alive connection of the standard library's `http.client`, which leaves the 2 cores "
            "more to the server than httpx did), and a cold `toolsift route` (median of 3). torch is served "
            "twice: with the same micro-batching as ONNX, and one query per embedding call "
            "(`TOOLSIFT_QUERY_BATCH=1`), the path the ONNX work was filed against. ONNX vectors agree with torch's (cosine >= 0.9999 on every "
            "shared dataset, `tests/test_onnx.py`), so the ranking and every accuracy figure are unchanged.",
            "",
            backends_table(document),
        ]
    )


def int8_section(int8: dict[str, Any], fp32: dict[str, Any]) -> str:
    """The int8 model against the fp32 one, on the same seeded samples (two runs, same --limit)."""

    def recall(document: dict[str, Any], dataset: str, method: str) -> tuple[float, float]:
        row = next(
            r for r in document["results"]
            if (r["dataset"], r["method"], r["metric"], r["k"], r["lang"]) == (dataset, method, "recall", 5, "all")
        )  # fmt: skip
        return row["value"], row["ci95"]

    def speed(document: dict[str, Any], dataset: str) -> float:
        timings = next(d for d in document["datasets"] if d["dataset"] == dataset)["timings"]
        return float(timings["query-embedding"]["ms_per_query"])

    lines = [
        f"## Opt-in int8 model: `{int8['model']}` against `{fp32['model']}`",
        "",
        f"Commands: `{fp32['command']}`, then `{int8['command']}` (the same seeded sample of queries).",
        "",
        "| dataset | queries | toolsift R@5 fp32 | toolsift R@5 int8 | change | dense R@5 fp32 → int8 "
        "| query embedding ms fp32 → int8 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for entry in fp32["datasets"]:
        name = entry["dataset"]
        (full, full_ci), (small, small_ci) = recall(fp32, name, "toolsift"), recall(int8, name, "toolsift")
        dense_full, dense_small = recall(fp32, name, "dense")[0], recall(int8, name, "dense")[0]
        lines.append(
            f"| {name} | {entry['queries']} | {full:.3f} ± {full_ci:.3f} | {small:.3f} ± {small_ci:.3f} "
            f"| {small - full:+.3f} | {dense_full:.3f} → {dense_small:.3f} | {speed(fp32, name):.2f} → {speed(int8, name):.2f} |"
        )
    return "\n".join(lines) + "\n"


FEEDBACK_TARGETS = {"metatool": 0.90, "apibench": 0.45, "sealtools": 0.95, "functionchat_ko": 0.93}
"""Recall@5 of toolsift+feedback at F = 0.5 on the held-out half (issue #17)."""


def feedback_section(document: dict[str, Any]) -> str:
    """The learning curve, then the targets at F = 0.5 and the latency cost, from one run."""
    from toolsift.bench.feedback import FeedbackPoint, curve_table

    points = [FeedbackPoint(**{**p, **_int_keys(p)}) for p in document["points"]]
    lines = [
        "## Learning from use",
        "",
        f"Command: `{document['command']}`",
        "",
        "For each fraction F (seeded), F of a dataset's queries are fed as feedback (query → each relevant "
        "tool, each query its own contributor) and the rest are scored by **toolsift** (no feedback), "
        "**+feedback** (the same router learning from them) and **+examples** (no feedback; up to 3 fed "
        "queries per tool written into the catalog as `examples`), on the same held-out queries. "
        "Differences are paired, with their 95% interval. Route p50 = one query's embedding (uncached) "
        "plus its ranking, without / with feedback, timed in the same run.",
        "",
        curve_table(points),
        "",
        "| dataset | target R@5 at F = 0.5 | toolsift+feedback | met | route p50 change |",
        "| --- | ---: | ---: | :-: | ---: |",
    ]
    for point in points:
        target = FEEDBACK_TARGETS.get(point.dataset)
        if target is None or point.fraction != 0.5:
            continue
        value, interval = point.recall["toolsift+feedback"][5], point.ci95["toolsift+feedback"][5]
        timing = point.route_p50_ms
        change = timing["route_feedback"] / timing["route"] - 1 if timing.get("route") else 0.0
        lines.append(
            f"| {point.dataset} | {target:.2f} | {value:.3f} ± {interval:.3f} | {'✓' if value >= target else '✗'} "
            f"| {change:+.1%} |"
        )
    return "\n".join(lines) + "\n"


def tuning_section(document: dict[str, Any]) -> str:
    """One run of ``toolsift bench --feedback-split F --split-by tool|query --tune ...``."""
    from toolsift.bench.tuning import TuningPoint, tuning_table

    points = [TuningPoint(**{**p, **_int_keys(p)}) for p in document["points"]]
    split = points[0].split_by if points else "tool"
    pairs = max((p.pairs for p in points), default=0)
    anchor = f"## Fine-tuning (split by {split}" + (f", {pairs:,} pairs: training time)" if pairs >= 10_000 else ")")
    explain = (
        "A seeded half of the *tools* is known: requests whose tools are all known are fed (as feedback, and as "
        "the pairs a model is tuned on); requests whose tools are all unknown are scored (mixed ones left out). "
        "This is what tuning is for: tools no one has asked for yet."
        if split == "tool"
        else "A seeded half of the requests is fed (feedback, and the tuning pairs); the other half is scored."
    )
    return "\n".join([
        anchor, "", f"Command: `{document['command']}`", "", explain + " **toolsift+tuned** routes with the model "
        "tuned on the fed pairs (`toolsift/tuning/`; `:full` the whole encoder, `:adapter` a query-side map), "
        "**+feedback** also ranks with the fed requests as views. Differences are paired (tuned minus toolsift, "
        "tuned+feedback minus toolsift+feedback) with their 95% interval; train s and pairs/s are the training's.",
        "", tuning_table(points), "",
        "Route p50 (ms; one uncached query, embedding and ranking, same requests, same run): "
        + ("; ".join(f"{p.dataset}: " + ", ".join(f"{k.removesuffix(' route')} {v:.2f}" for k, v in p.route_p50_ms.items())
                     for p in points if p.route_p50_ms) or document.get("note", "not measured")),
    ]) + "\n"  # fmt: skip


def _int_keys(point: dict[str, Any]) -> dict[str, Any]:
    """JSON made the cut-offs strings; FeedbackPoint keys them by int."""
    return {
        name: {variant: {int(k): v for k, v in values.items()} for variant, values in point[name].items()}
        for name in ("recall", "ci95", "difference")
    }


def replicas_section(document: dict[str, Any]) -> str:
    from toolsift.bench.replicas import replicas_table

    return "\n".join(
        [
            "## Several replicas on one Redis",
            "",
            f"Command: `{document['command']}`",
            "",
            f"{document['tools']:,} synthetic tools; a throwaway redis-server on loopback; each replica is one "
            "`toolsift serve` process (1 worker). 16 clients, each one conversation (its own session), every turn "
            "sent to the next replica (round robin, no stickiness); the machine's cores are shared out between the "
            "replicas (`TOOLSIFT_EMBEDDING_THREADS`). Session continuity: turns that continued their "
            "session (turn number one more than the previous). Both replicas share this machine's 2 cores with "
            "the clients, so the ratio is a floor for replicas on their own hosts.",
            "",
            replicas_table(document),
        ]
    )


def against_section(document: dict[str, Any]) -> str:
    from toolsift.bench.against import against_table

    return "\n".join(
        [
            f"## This checkout against {document['against']}, side by side",
            "",
            f"Command: `{document['command']}`",
            "",
            "The bundled catalog (254 tools), one index, both servers on this machine at once (`toolsift serve`, "
            "1 worker each, the same virtualenv; the other commit from a git worktree). Each round runs 1, 4 and "
            "16 loopback clients against each server in turn (which goes first alternates) with requests no server "
            "has seen; medians over the rounds. The clients share the 2 cores with the servers.",
            "",
            against_table(document),
        ]
    )


def gateway_section(document: dict[str, Any]) -> str:
    return "\n".join(
        [
            "## The MCP gateway: added latency per call, tokens per turn",
            "",
            f"Command: `{document['command']}`",
            "",
            f"Servers: {', '.join(document['servers'])} (the pinned npm servers of `make mcp-servers`). The same "
            "SDK client (`mcp.Client`, stdio) calls the tool directly and through `toolsift mcp --mcp-servers` "
            "(`call_tool`), the two interleaved call by call; added = the difference of the percentiles, with a "
            "bootstrap 95% interval on the p50 difference. Tokens: cl100k_base over each definition as compact "
            "JSON in OpenAI's function form, what the client sends its model each turn; the dynamic rows after "
            "that many searches (k=5) in one session.",
            "",
            gateway_table(document),
        ]
    )


def curation_section(document: dict[str, Any]) -> str:
    return "\n".join(
        [
            "## Curation while routing",
            "",
            f"Command: `{document['command']}`",
            "",
            "A real `toolsift serve` over a synthetic catalog; one client sends fresh `/route` requests one at a "
            "time, idle and then while the other clients ask for tool pages (80%), findings pages (15%) and the "
            "map (5%) without pause, starting cold (the lint report of the whole catalog is computed during the "
            "run); then three rounds of idle and warm curation, alternated so a noisy idle stretch does not decide "
            "the ratio (the median round's). Curation views run on one lower-priority thread that waits for the "
            "routes being answered (at most 50 ms); findings are indexed once per report and tenant, the map's body "
            "serialised once per catalog and feedback counts. Clients and server share the host's 2 cores, so part "
            "of the slowdown is plain CPU contention.",
            "",
            curation_table(document),
        ]
    )


def feedback_memory_section(document: dict[str, Any]) -> str:
    return "\n".join(
        [
            "## Memory under feedback",
            "",
            f"Command: `{document['command']}`",
            "",
            "A real `toolsift serve` takes feedback requests with the admin token, each a new text naming one of "
            f"{FED_TOOLS} tools, with a `/route` after every ten (so the new requests are embedded as views); the "
            "server's resident memory is read at each checkpoint and after `DELETE /admin/feedback`. One contributor "
            "keeps at most 16 requests per tool (`per_contributor`), so the retained set fills early: memory must "
            "then stay flat however many more requests come.",
            "",
            feedback_memory_table(document),
        ]
    )


def security_section(document: dict[str, Any]) -> str:
    return "\n".join(
        [
            "## Poisoned tool definitions: the security-* lint",
            "",
            f"Command: `{document['command']}`",
            "",
            "Evaluation sets in `benchmarks/security/` (written for this project from the published attack "
            "patterns: tool poisoning and shadowing, line jumping and ANSI escapes, ASCII smuggling, preference "
            "manipulation, tool squatting), each poisoned definition and honest look-alike judged in a catalog beside "
            "the real tools a look-alike name may imitate; a definition counts as flagged with any `security-*` "
            "finding. The rules are patterns: what they were written against they catch, paraphrases they were not "
            "(held-out 2) they catch about half the time, so treat a clean lint as no proof. Real catalogs: the share "
            "of their tools flagged (false positives, as far as these catalogs are honest).",
            "",
            security_table(document),
        ]
    )


def groups_section(document: dict[str, Any]) -> str:
    """Group scores against flat ranking, same queries: Recall@5 and the paired difference."""
    rows = [
        "| dataset | groups | toolsift R@5 | with groups, weight | R@5 | minus flat (paired, 95%) |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for dataset in document["datasets"]:
        name = dataset["dataset"]
        flat = next(r for r in document["results"] if r["dataset"] == name and r["method"] == "toolsift"
                    and r["metric"] == "recall" and r["k"] == 5 and r["lang"] == "all")  # fmt: skip
        for entry in dataset["comparisons"]:
            if entry["k"] != 5 or not entry["baseline"].startswith("toolsift-groups"):
                continue
            grouped = next(r for r in document["results"] if r["dataset"] == name and r["method"] == entry["baseline"]
                           and r["metric"] == "recall" and r["k"] == 5 and r["lang"] == "all")  # fmt: skip
            weight = entry["baseline"].removeprefix("toolsift-groups-")
            rows.append(
                f"| {name} | {dataset.get('groups', '')} | {flat['value']:.3f} ± {flat['ci95']:.3f} | {weight} | "
                f"{grouped['value']:.3f} | {-entry['difference']:+.3f} ± {entry['ci95']:.3f} |"
            )
    return "\n".join(
        [
            f"## Groups in the ranking ({', '.join(d['dataset'] for d in document['datasets'])})",
            "",
            f"Command: `{document['command']}`",
            "",
            "Each tool grouped by one of its tags (the dataset's natural grouping), then ranked flat "
            "(toolsift) and with its group centroid's standardised cosine added at each weight "
            "(`TOOLSIFT_GROUP_WEIGHT`), on the same queries.",
            "",
            *rows,
            "",
        ]
    )


def _other_section(path: str) -> str:
    document = json.loads(Path(path).read_text())
    if any(str(row.get("method", "")).startswith("toolsift-groups") for row in document.get("results", [])):
        return groups_section(document)
    if document.get("schema") == "toolsift-against/1":
        return against_section(document)
    if document.get("schema") == "toolsift-gateway/1":
        return gateway_section(document)
    if document.get("schema") == "toolsift-security/1":
        return security_section(document)
    if document.get("schema") == "toolsift-curation-load/2":
        return curation_section(document)
    if document.get("schema") == "toolsift-feedback-memory/1":
        return feedback_memory_section(document)
    if document.get("schema") == "toolsift-replicas/1":
        return replicas_section(document)
    if document.get("schema") == "toolsift-feedback-bench/1":
        return feedback_section(document)
    if document.get("schema") == "toolsift-tuning-bench/1":
        return tuning_section(document)
    if str(document.get("model", "")).endswith("-int8"):
        fp32 = Path(path).with_name("accuracy-fp32-sample.json")
        return int8_section(document, json.loads(fp32.read_text()))
    if str(document.get("schema")).startswith("toolsift-backends/"):
        return backends_section(document)
    if document.get("schema") == "toolsift-sessions/1":
        return sessions_section(document)
    if str(document.get("schema")).startswith("toolsift-abstention/"):
        return abstention_section(document)
    return other_model_section(path)


if __name__ == "__main__":
    sys.stdout.write(main(*sys.argv[1:]))
