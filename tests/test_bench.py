from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolsift.bench.datasets import find_datasets, load_dataset
from toolsift.bench.methods import BM25Method
from toolsift.bench.metrics import (
    complete_at,
    evaluate,
    hit_at,
    interval95,
    ndcg_at,
    recall_at,
    reciprocal_rank,
)
from toolsift.cli import main
from toolsift.errors import CatalogError

from conftest import TINY_TOOLS, benchmark_script

DATASETS = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"
RANKED = ["a", "b", "c", "d", "e"]


def test_recall_hit_complete_by_hand() -> None:
    assert recall_at(RANKED, {"b", "x"}, 1) == 0.0
    assert recall_at(RANKED, {"b", "x"}, 2) == 0.5
    assert recall_at(RANKED, {"b", "d"}, 5) == 1.0
    assert hit_at(RANKED, {"c"}, 2) == 0.0 and hit_at(RANKED, {"c"}, 3) == 1.0
    assert complete_at(RANKED, {"a", "d"}, 3) == 0.0 and complete_at(RANKED, {"a", "d"}, 4) == 1.0


def test_ndcg_by_hand() -> None:
    # one relevant at rank 2: DCG = 1/log2(3); ideal = 1/log2(2) = 1
    assert ndcg_at(RANKED, {"b"}, 5) == pytest.approx(1 / math.log2(3))
    # relevant at ranks 1 and 3 of two: (1 + 1/log2(4)) / (1 + 1/log2(3))
    assert ndcg_at(RANKED, {"a", "c"}, 5) == pytest.approx((1 + 0.5) / (1 + 1 / math.log2(3)))
    assert ndcg_at(RANKED, {"a", "c"}, 1) == 1.0  # ideal at K=1 has one relevant
    assert ndcg_at(RANKED, {"z"}, 5) == 0.0


def test_reciprocal_rank_and_means() -> None:
    assert reciprocal_rank(RANKED, {"c", "e"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(RANKED, {"z"}) == 0.0
    scores = evaluate([RANKED, ["x", "a"]], [{"a"}, {"a"}], [1, 2])
    assert scores[("recall", 1)] == 0.5 and scores[("recall", 2)] == 1.0
    assert scores[("mrr", None)] == pytest.approx((1 + 0.5) / 2)
    with pytest.raises(ValueError):
        evaluate([RANKED], [], [1])


def test_interval95_by_hand() -> None:
    # values 0, 1, 1, 0: mean 0.5, sample variance 1/3, standard error sqrt(1/12)
    assert interval95([0.0, 1.0, 1.0, 0.0]) == pytest.approx(1.959964 * math.sqrt(1 / 12))
    assert interval95([1.0, 1.0, 1.0]) == 0.0 and interval95([0.5]) == 0.0
    # four times the queries, about half the interval
    assert interval95([0.0, 1.0] * 200) == pytest.approx(interval95([0.0, 1.0] * 50) / 2, rel=0.01)


def test_paired_comparison_by_hand() -> None:
    from toolsift.bench.accuracy import paired_comparisons

    recalls = {"toolsift": {5: [1.0, 1.0, 0.0, 1.0]}, "dense": {5: [1.0, 0.0, 0.0, 0.0]}}
    (entry,) = paired_comparisons("d", recalls, [5])
    assert (entry["method"], entry["baseline"], entry["k"], entry["queries"]) == ("toolsift", "dense", 5, 4)
    assert entry["difference"] == 0.5  # per-query differences 0, 1, 0, 1
    assert entry["ci95"] == pytest.approx(round(interval95([0.0, 1.0, 0.0, 1.0]), 4))
    assert paired_comparisons("d", {"dense": {5: [1.0]}}, [5]) == []  # nothing to compare without toolsift


def write_dataset(folder: Path, queries: list[dict[str, object]]) -> Path:
    """A dataset folder over the tiny catalog with these queries."""
    folder.mkdir()
    (folder / "tools.jsonl").write_text("\n".join(json.dumps(t) for t in TINY_TOOLS))
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in queries))
    return folder


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Path:
    queries: list[dict[str, object]] = [
        {"id": "q1", "query": "send an email to Bob", "relevant": ["send_email"], "lang": "en"},
        {
            "id": "q2",
            "query": "weather forecast for the next days",
            "relevant": ["get_forecast", "get_weather"],
            "lang": "en",
        },
        {"id": "q3", "query": "convert currencies", "relevant": ["convert_currency"], "lang": "en"},
        {"id": "q4", "query": "달력 일정 만들기", "relevant": ["create_event"], "lang": "ko"},
    ]
    return write_dataset(tmp_path / "tiny", queries)


def test_queries_naming_unknown_tools_are_refused(tiny_dataset: Path) -> None:
    (tiny_dataset / "queries.jsonl").write_text('{"id": "1", "query": "x", "relevant": ["nope"]}\n')
    with pytest.raises(CatalogError, match="line 1.*field 'relevant'.*nope"):
        load_dataset(tiny_dataset / "tools.jsonl", tiny_dataset / "queries.jsonl")


def test_bench_command_writes_json_and_report(tmp_path: Path, tiny_dataset: Path) -> None:
    out = tmp_path / "out.json"
    report = tmp_path / "report"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "--dataset",
            str(tiny_dataset),
            "--k",
            "1,3",
            "--json",
            str(out),
            "--report",
            str(report),
            "--no-cache",
        ],
        env={"TOOLSIFT_MODEL": "hashing-64"},
    )
    assert result.exit_code == 0, result.output
    assert "| bm25 |" in result.output and "| random |" in result.output
    document = json.loads(out.read_text())
    assert document["schema"] == "toolsift-bench/1" and document["ks"] == [1, 3]
    rows = document["results"]
    assert {row["method"] for row in rows} == {"toolsift", "toolsift-whole", "dense", "bm25", "bm25-cjk", "random"}
    assert {row["lang"] for row in rows} == {"all", "en", "ko"}
    assert set(rows[0]) == {"dataset", "method", "lang", "metric", "k", "value", "ci95", "queries"}
    assert all(row["ci95"] >= 0 for row in rows) and any(row["ci95"] > 0 for row in rows)
    comparisons = document["datasets"][0]["comparisons"]
    assert {c["baseline"] for c in comparisons} == {"toolsift-whole", "dense", "bm25", "bm25-cjk", "random"}
    assert {c["k"] for c in comparisons} == {1, 3} and all(c["queries"] == 4 for c in comparisons)
    for entry in comparisons:  # the mean paired difference is the difference of the two means
        ours, theirs = (
            next(
                r["value"]
                for r in rows
                if (r["method"], r["metric"], r["k"], r["lang"]) == (m, "recall", entry["k"], "all")
            )
            for m in ("toolsift", entry["baseline"])
        )
        assert entry["difference"] == pytest.approx(ours - theirs, abs=2e-4)
    assert "95% intervals over the 4 queries: toolsift R@3" in result.output
    bm25_r1 = next(r for r in rows if (r["method"], r["metric"], r["k"], r["lang"]) == ("bm25", "recall", 1, "en"))
    assert bm25_r1["value"] == pytest.approx((1 + 0.5 + 1) / 3, abs=1e-3)  # q2 has two relevant tools
    assert document["datasets"][0]["tokens"]["catalog_tokens"] > 0
    assert (report / "report.html").is_file() and (report / "recall_tiny.png").stat().st_size > 1000
    assert "<table>" in (report / "report.html").read_text()


def _readme_bm25(folder: Path) -> dict[str, float]:
    line = next(row for row in (folder / "README.md").read_text().splitlines() if "BM25 (word tokens):" in row)
    return {key: float(value) for key, value in re.findall(r"(R@\d+|MRR@100|NDCG@10) ([0-9.]+)", line)}


@pytest.mark.slow
@pytest.mark.skipif(not DATASETS.is_dir(), reason="../shared/datasets is not beside the repository")
@pytest.mark.parametrize("folder", find_datasets(DATASETS) if DATASETS.is_dir() else [], ids=lambda p: p.name)
def test_bm25_baseline_reproduces_the_dataset_readme(folder: Path) -> None:
    dataset = load_dataset(folder / "tools.jsonl", folder / "queries.jsonl")
    rankings = BM25Method(dataset.catalog).rank([q.text for q in dataset.queries], 100)
    scores = evaluate(rankings, [q.relevant for q in dataset.queries], [1, 5, 10])
    expected = _readme_bm25(folder)
    for k in (1, 5, 10):
        assert scores[("recall", k)] == pytest.approx(expected[f"R@{k}"], abs=0.02)
    assert scores[("mrr", None)] == pytest.approx(expected["MRR@100"], abs=0.02)
    assert scores[("ndcg", 10)] == pytest.approx(expected["NDCG@10"], abs=0.02)


# -- cache stability over sessions ----------------------------------------------------------


def test_sessions_are_seeded_and_follow_ups_share_a_tool(tiny_dataset: Path) -> None:
    from toolsift.bench.sessions import SessionPlan, build_sessions

    queries = load_dataset(tiny_dataset / "tools.jsonl", tiny_dataset / "queries.jsonl").queries
    plan = SessionPlan(sessions=20, turns=5, follow_up=1.0, seed=3)
    first = build_sessions(queries, plan)
    assert first == build_sessions(queries, plan) and len(first) == 20 and all(len(s) == 5 for s in first)
    for session in first:
        for position, query in enumerate(session[1:], start=1):
            earlier = {tool for q in session[:position] for tool in q.relevant}
            # a follow-up shares a tool with an earlier turn, unless no unused query does (then random)
            unused_sharing = [q for q in queries if set(q.relevant) & earlier and q not in session[:position]]
            assert set(query.relevant) & earlier or not unused_sharing


def test_billed_tokens_by_hand() -> None:
    from toolsift.bench.sessions import billed_tokens

    # turn 2 (0-based): prompt = 500 tools + 1000 system + 600 messages = 2100
    assert billed_tokens(500, 0, False, 2) == 2100  # nothing cached
    assert billed_tokens(500, 300, False, 2) == pytest.approx(1800 + 30)  # only the tools prefix
    # identical tools: tools + system + the first turn's 300 message tokens were cached
    assert billed_tokens(500, 500, True, 2) == pytest.approx(300 + 0.1 * 1800)


def test_deferred_billing_by_hand() -> None:
    from toolsift.bench.sessions import (
        CACHED_PRICE,
        SEARCH_ROUNDTRIP_TOKENS,
        SYSTEM_TOKENS,
        TURN_TOKENS,
        DeferredSession,
    )

    class Costs:
        def subset(self, names: list[str]) -> int:
            return 100 * len(list(names))

    session = DeferredSession(search_tokens=50)
    first = session.turn(0, ["a", "b"], {"a"}, Costs())  # type: ignore[arg-type]
    assert (
        first == {"recall": 1.0} and session.prompt == 50 + SYSTEM_TOKENS + TURN_TOKENS + SEARCH_ROUNDTRIP_TOKENS + 200
    )
    before = session.prompt
    second = session.turn(1, ["b", "c"], {"c", "d"}, Costs())  # type: ignore[arg-type]
    # asking: this turn's messages in full, the previous prompt cached; answering: the round trip
    # and the one new definition (c) in full, the asking prompt cached
    expected = (
        TURN_TOKENS + CACHED_PRICE * before + SEARCH_ROUNDTRIP_TOKENS + 100 + CACHED_PRICE * (before + TURN_TOKENS)
    )
    assert second["billed"] == pytest.approx(expected) and second["tools"] == 1.0 and second["recall"] == 0.5
    assert second["identical"] == second["prefix_kept"] == 1.0 and second["tokens"] == 150


def test_sticky_sessions_keep_the_prefix_where_top_k_does_not(tiny_dataset: Path) -> None:
    from toolsift.bench.sessions import SessionPlan, run_sessions
    from toolsift.embeddings import HashingEmbedder
    from toolsift.router import Router
    from toolsift.router.tokens import SchemaTokens

    dataset = load_dataset(tiny_dataset / "tools.jsonl", tiny_dataset / "queries.jsonl")
    router = Router.build(dataset.catalog, HashingEmbedder(64))
    figures = run_sessions(
        dataset, router, SessionPlan(sessions=30, turns=4, k=2, cap=64), SchemaTokens(dataset.catalog)
    )
    sticky, canonical = figures["methods"]["sticky"], figures["methods"]["top-k canonical"]
    assert sticky["prefix_kept"] == 1.0  # 8 tools never reach the cap: the list only grows
    assert canonical["prefix_kept"] == canonical["identical"] < 1.0  # two-tool arrays: a prefix only when equal
    assert sticky["recall"] >= canonical["recall"] and sticky["tools_per_turn"] > 2
    assert sticky["tool_tokens_cached"] > canonical["tool_tokens_cached"]
    deferred = figures["methods"]["deferred"]
    assert deferred["identical"] == 1.0 and deferred["recall"] >= sticky["recall"]  # everything loaded stays
    assert deferred["billed_per_turn"] < min(
        figures["methods"][m]["billed_per_turn"] for m in ("sticky", "top-k ranked")
    )
    capped = run_sessions(dataset, router, SessionPlan(sessions=30, turns=4, k=2, cap=2), SchemaTokens(dataset.catalog))
    assert capped["methods"]["sticky"]["tools_per_turn"] <= 2 and capped["methods"]["sticky"]["prefix_kept"] < 1.0


@pytest.mark.model
def test_sessions_bench_command_with_the_real_model(tmp_path: Path, tiny_dataset: Path) -> None:
    out = tmp_path / "sessions.json"
    result = CliRunner().invoke(
        main,
        [
            "sessions-bench",
            "--dataset",
            str(tiny_dataset),
            "--sessions",
            "10",
            "--turns",
            "3",
            "-k",
            "2",
            "--json",
            str(out),
            "--no-cache",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "| tiny | sticky | 100.0% |" in result.output
    document = json.loads(out.read_text())
    assert document["schema"] == "toolsift-sessions/1" and document["results"][0]["turns"] == 3


def test_abstention_curve_on_a_tiny_dataset(tiny_dataset: Path) -> None:
    from toolsift.bench.abstention import abstention_table, run_abstention
    from toolsift.embeddings import HashingEmbedder
    from toolsift.router import Router

    dataset = load_dataset(tiny_dataset / "tools.jsonl", tiny_dataset / "queries.jsonl")
    router = Router.build(dataset.catalog, HashingEmbedder(64))
    no_tool = {"en": ["write me a haiku about the sea", "thanks!"], "de": ["danke schön"]}
    result = run_abstention(dataset, router, k=2, thresholds=(0.0, 1.0), no_tool=no_tool)
    never, always = result["rows"]
    # threshold 0 keeps every match: nothing lost, nothing abstains; 1 is a confidence nothing reaches
    assert never["recall_change"] == 0.0 and never["abstained_generic"] == 0.0 and never["prefix_changed"] > 0
    assert always["abstained_generic"] == 1.0 and always["abstained_de"] == 1.0 and always["prefix_changed"] == 0.0
    assert always["recall_change"] < 0.0 and always["mean_tools"] == 0.0
    assert result["reliability"]["matches"] > 0 and 0.0 <= result["reliability"]["ece"] <= 1.0
    table = abstention_table([result])
    assert "### tiny" in table and "| 0.1 |" not in table and "abstain: de" in table


def test_the_calibration_error_comes_with_an_interval_over_requests() -> None:
    from toolsift.bench.abstention import abstention_table, reliability

    # each request: one match at 0.8 that is relevant, one at 0.3 that is not -> bins 0.8->1.0, 0.3->0.0
    even = [([("a", 0.8), ("b", 0.3)], ("a",))] * 50
    table = reliability(even)
    assert table["ece"] == pytest.approx((0.2 + 0.3) / 2)
    low, high = table["ece_interval"]
    assert low == pytest.approx(table["ece"]) and high == pytest.approx(table["ece"])  # every resample alike
    # half the requests: the sure match is wrong; the interval now has width and holds the estimate
    mixed = [([("a", 0.8)], ("a",) if i % 2 else ("z",)) for i in range(200)]
    table = reliability(mixed)
    low, high = table["ece_interval"]
    assert table["ece"] == pytest.approx(0.3) and low < 0.3 < high and high - low < 0.2
    few = reliability(mixed[:20])["ece_interval"]
    assert few[1] - few[0] > high - low  # fewer requests, a wider interval
    line = abstention_table([{"dataset": "x", "tools": 1, "queries": 1, "fed": 0, "generic_no_tool": {}, "k": 1,
                              "rows": [], "reliability": table, "reliability_shape": table}])  # fmt: skip
    assert "expected calibration error 0.300 (95% interval" in line


def test_abstaining_shares_come_with_their_interval() -> None:
    from toolsift.bench.abstention import abstention_table
    from toolsift.bench.metrics import share_interval95

    low, high = share_interval95(29, 35)
    assert 0.60 < low < 29 / 35 < high < 0.95  # 35 requests cannot tell 0.83 from 0.80
    assert share_interval95(0, 10)[0] == 0.0 < share_interval95(0, 10)[1] < 0.35  # not empty at 0
    assert share_interval95(10, 10)[1] == pytest.approx(1.0) and share_interval95(10, 10)[0] > 0.65
    wide, narrow = share_interval95(29, 35), share_interval95(290, 350)
    assert narrow[1] - narrow[0] < (wide[1] - wide[0]) / 2  # ten times the requests, under half the width
    assert share_interval95(0, 0) == (0.0, 1.0)
    row = {"min_confidence": 0.1, "recall_change": 0.0, "recall_change_interval": 0.0, "mean_tools": 5.0,
           "abstained_removed": 0.5, "abstained_generic": 0.9, "abstained_generic_interval": (0.8, 0.95),
           "abstained_ko": 29 / 35, "abstained_ko_interval": share_interval95(29, 35)}  # fmt: skip
    empty = {"matches": 0, "ece": 0.0, "bins": []}
    table = abstention_table([{"dataset": "x", "tools": 1, "queries": 1, "fed": 0, "generic_no_tool": {"ko": 35},
                               "k": 5, "rows": [row], "reliability": empty, "reliability_shape": empty}])  # fmt: skip
    assert (
        "abstaining at the default, with 95% intervals: generic 0.90 (0.80-0.95, 35 requests); ko 0.83 (0.67-0.92, 35"
        in table
    )


@pytest.mark.model
def test_abstention_bench_command(tmp_path: Path, tiny_dataset: Path) -> None:
    out = tmp_path / "abstention.json"
    result = CliRunner().invoke(main, ["abstention-bench", "--dataset", str(tiny_dataset), "--json", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    rows = document["results"][0]["rows"]
    assert document["schema"] == "toolsift-abstention/2" and len(rows) >= 5
    # a higher threshold never keeps more, and never abstains on fewer (the default no-tool set, 4 languages)
    assert all(
        a["recall_change"] >= b["recall_change"] and a["abstained_generic"] <= b["abstained_generic"]
        for a, b in zip(rows, rows[1:], strict=False)
    )
    assert {"abstained_en", "abstained_de", "abstained_es", "abstained_ko"} <= set(rows[0])


def test_results_md_marks_each_accuracy_goal() -> None:
    from toolsift.bench.accuracy import DatasetResult

    results_md = benchmark_script("results_md.py")

    def row(method: str, value: float) -> dict[str, object]:
        return {"dataset": "metatool", "method": method, "lang": "all", "metric": "recall", "k": 5, "value": value}

    result = DatasetResult("metatool", 10, 5, "m", [row("toolsift", 0.70), row("bm25", 0.50), row("dense", 0.68)])
    table = results_md.targets_section([result, DatasetResult("other", 1, 1, "m", [row("toolsift", 1.0)])])
    assert "| metatool | m | 5 | 0.700 | 0.600 ✓ (+0.100) | 0.650 ✓ (+0.050) | 0.730 ✗ (-0.030) |" in table
    assert "| other |" not in table  # no goal for datasets the issue does not name

    # With intervals: the absolute goal's from toolsift's own row, the margins' from the paired comparison.
    rows = [{**row("toolsift", 0.70), "ci95": 0.04}, row("bm25", 0.50), row("dense", 0.68)]
    paired = [
        {"method": "toolsift", "baseline": "dense", "metric": "recall", "k": 5, "difference": 0.02, "ci95": 0.011}
    ]
    table = results_md.targets_section([DatasetResult("metatool", 10, 5, "m", rows, comparisons=paired)])
    assert "| 0.600 ✓ (+0.100 ± 0.040) | 0.650 ✓ (+0.050) | 0.730 ✗ (-0.030 ± 0.011) |" in table


def test_intervals_line_leaves_out_random_and_reads_without_baselines() -> None:
    from toolsift.bench.accuracy import DatasetResult
    from toolsift.bench.report import _intervals_line

    rows = [
        {"dataset": "d", "method": m, "lang": "all", "metric": "recall", "k": 5, "value": v, "ci95": 0.1, "queries": 2}
        for m, v in (("toolsift", 0.5), ("random", 0.0))
    ]
    paired = [{"method": "toolsift", "baseline": "random", "metric": "recall", "k": 5, "difference": 0.5, "ci95": 0.2}]
    line = _intervals_line(DatasetResult("d", 1, 2, "m", rows, comparisons=paired), 5)
    assert line == "95% intervals over the 2 queries: toolsift R@5 0.500 ± 0.100."


@pytest.fixture
def dataset_with_edge_cases(tmp_path: Path) -> Path:
    """A query labelled with no tool, and one over the router's length limit."""
    from toolsift.router import MAX_QUERY_CHARS

    return write_dataset(
        tmp_path / "edges",
        [
            {"id": "q1", "query": "send an email to Bob", "relevant": ["send_email"]},
            {"id": "q2", "query": "convert currencies", "relevant": ["convert_currency"]},
            {"id": "q3", "query": "tell me a joke about penguins", "relevant": []},
            {"id": "q4", "query": "email Bob this: " + "word " * (MAX_QUERY_CHARS // 5), "relevant": ["send_email"]},
        ],
    )


@pytest.mark.model
def test_benches_take_no_tool_and_over_long_queries(tmp_path: Path, dataset_with_edge_cases: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "acc.json"
    result = runner.invoke(main, ["bench", "--dataset", str(dataset_with_edge_cases), "--json", str(out), "--no-cache"])
    assert result.exit_code == 0, result.output
    meta = json.loads(out.read_text())["datasets"][0]
    assert meta["queries"] == 3 and meta["no_tool_queries"] == 1  # ranking metrics over the 3 labelled ones
    assert meta["refused"] == {"toolsift": 1, "toolsift-whole": 1}  # the router refuses the long one, as the API does
    rows = json.loads(out.read_text())["results"]
    recall = {r["method"]: r["value"] for r in rows if (r["metric"], r["k"], r["lang"]) == ("recall", 5, "all")}
    assert recall["toolsift"] <= 2 / 3 + 1e-4 and recall["dense"] == pytest.approx(1.0)
    assert (
        "1 queries labelled with no tool are left out" in result.output
        and "toolsift refused 1 queries" in result.output
    )

    out = tmp_path / "abstain.json"
    result = runner.invoke(main, ["abstention-bench", "--dataset", str(dataset_with_edge_cases), "--json", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())["results"][0]
    assert (document["queries"], document["no_tool_queries"], document["left_out_too_long"]) == (2, 1, 1)
    assert all("abstained_native" in row for row in document["rows"])
    native = [row["abstained_native"] for row in document["rows"]]
    assert native == sorted(native) and native[0] == 0.0 and native[-1] == 1.0  # 0 never abstains; 0.5 does here

    out = tmp_path / "sessions.json"
    result = runner.invoke(
        main,
        [
            "sessions-bench",
            "--dataset",
            str(dataset_with_edge_cases),
            "--sessions",
            "5",
            "--turns",
            "3",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["results"][0]["queries_used"] == 2


def test_backend_ratios_and_table_by_hand() -> None:
    from toolsift.bench.backends import AS_FILED, backends_table, ratios

    def row(embed: float, route: float, build: float, rss: float, per_s: tuple[float, float, float]) -> dict[str, Any]:
        http = [
            {"clients": c, "requests": 64, "per_s": p, "p50_ms": 10.0, "p95_ms": 20.0}
            for c, p in zip((1, 4, 16), per_s, strict=True)
        ]
        return {"embed_ms": {"p50": embed}, "route_ms": {"p50": route}, "build_tools_per_s": build,
                "server_peak_rss_mib": rss, "cold_route_s": 1.0, "http": http}  # fmt: skip

    rows = {"torch": row(10, 20, 200, 600, (50, 90, 100)), "onnx": row(3, 8, 400, 300, (75, 150, 330))}
    as_filed = row(10, 20, 200, 610, (50, 60, 66))
    rows[AS_FILED] = {"backend": "torch", "server_peak_rss_mib": 610, "http": as_filed["http"]}
    figures = ratios(rows)
    assert figures == {
        "embed_p50": 0.3, "route_p50": 0.4, "throughput_1_client": 1.5, "throughput_16_clients": 3.3,
        "throughput_16_clients_vs_as_filed": 5.0, "server_rss": 0.5, "build_throughput": 2.0,
        "cold_route_s_onnx": 1.0,
    }  # fmt: skip
    table = backends_table({"backends": rows, "ratios": figures})
    assert "| onnx | 3.00 | 8.00 | 400 | 1.00 | 300 | 75, 10.0/20.0 | 150, 10.0/20.0 | 330, 10.0/20.0 |" in table
    assert f"| {AS_FILED} | (as torch) | (as torch) | (as torch) | (as torch) | 610 | 50, 10.0/20.0 |" in table
    assert "route p50 0.40× (target ≤ 0.45)" in table
    assert "16-client throughput 5.00× the torch path as filed" in table and "3.30× torch with the same" in table
    e5 = {"batches of up to 32": {"http": rows["onnx"]["http"]}, "one query per call": {"http": as_filed["http"]}}
    table = backends_table({"backends": rows, "ratios": figures, "e5": e5})
    assert "| one query per call | 50, 10.0/20.0 | 60, 10.0/20.0 | 66, 10.0/20.0 |" in table
    assert "16 clients: 5.00× the throughput with micro-batching." in table


def test_http_load_counts_every_request_and_fails_on_an_error(tmp_path: Path) -> None:
    """The load generator of the serving figures, against a real ``toolsift serve``."""
    from toolsift import Router, load_catalog
    from toolsift.bench.load import http_load
    from toolsift.bench.performance import serving
    from toolsift.embeddings import HashingEmbedder
    from toolsift.settings import BUNDLED_CATALOG

    folder = Router.build(load_catalog(BUNDLED_CATALOG), HashingEmbedder(64)).save(tmp_path / "index")
    with serving(folder) as (url, _):
        figures = http_load(url, [f"convert {i} dollars to euros" for i in range(24)], 4)
        assert figures["requests"] == 24 and figures["clients"] == 4 and figures["per_s"] > 0
        assert 0 < figures["p50_ms"] <= figures["p95_ms"]
        with pytest.raises(RuntimeError, match="/route answered 422"):
            http_load(url, [""], 1)  # an empty query is refused: the load generator must not count it


def test_results_md_compares_int8_with_fp32_on_the_same_sample() -> None:
    results_md = benchmark_script("results_md.py")

    def document(model: str, toolsift: float, dense: float, ms: float) -> dict[str, Any]:
        rows = [
            {"dataset": "d", "method": method, "lang": "all", "metric": "recall", "k": 5, "value": value, "ci95": 0.02}
            for method, value in (("toolsift", toolsift), ("dense", dense))
        ]
        timings = {"query-embedding": {"ms_per_query": ms}}
        return {"model": model, "command": f"bench --model {model}", "results": rows,
                "datasets": [{"dataset": "d", "queries": 1000, "timings": timings}]}  # fmt: skip

    table = results_md.int8_section(document("m-int8", 0.78, 0.70, 1.5), document("m", 0.80, 0.72, 3.0))
    assert "| d | 1000 | 0.800 ± 0.020 | 0.780 ± 0.020 | -0.020 | 0.720 → 0.700 | 3.00 → 1.50 |" in table


def test_the_side_by_side_benchmark_sends_unseen_requests_and_reports_ratios() -> None:
    from toolsift.bench.against import CLIENTS, against_table, bundled_queries

    first, second = bundled_queries(300, seed=1), bundled_queries(300, seed=2)
    assert len(set(first)) == 300 and not set(first) & set(second)  # the query cache never answers
    rows = [
        {
            "server": server,
            "clients": clients,
            "requests": 300,
            "rounds": 3,
            "per_s": per_s,
            "p50_ms": 10.0,
            "p95_ms": 20.0,
        }
        for clients in CLIENTS
        for server, per_s in (("this", 150.0), ("abc123", 100.0))
    ]
    table = against_table({"against": "abc123", "rows": rows})
    assert (
        "16 clients: throughput this / abc123 = **1.50×**" in table
        and "| this | 16 | 150.0 | 10.0 | 20.0 | 2.00 |" in table
    )


@pytest.mark.slow
def test_perf_curation_measures_routing_idle_and_under_curation(tmp_path: Path) -> None:
    out = tmp_path / "curation.json"
    args = ["perf", "--curation", "--sizes", "300", "--requests", "20", "--clients", "3", "--model", "hashing-64"]
    result = CliRunner().invoke(main, [*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert document["tools"] == 300
    assert document["idle_ms"]["p95"] > 0 and document["under_curation_ms"]["p95"] > 0
    assert document["p95_ratio"] == round(document["under_curation_ms"]["p95"] / document["idle_ms"]["p95"], 2)
    from toolsift.bench.curation_load import ROUNDS

    assert len(document["rounds"]) == ROUNDS and all(row["answered"] > 0 for row in document["rounds"])
    ratios = sorted(row["ratio"] for row in document["rounds"])
    assert document["warm_p95_ratio"] == ratios[ROUNDS // 2]
    assert all(row["ratio"] == round(row["warm_ms"]["p95"] / row["idle_ms"]["p95"], 2) for row in document["rounds"])
    assert "round 3: under curation, warm" in result.output and "median of the 3 rounds" in result.output
    views = document["first_view"]  # Chromium is installed for the tests (`make browser`)
    assert set(views) == {"desktop", "phone"}, views
    assert all(0 < view["seconds"] < 60 and 1_000 < view["bytes"] < 5_000_000 for view in views.values())
    assert f"desktop {views['desktop']['seconds']} s" in result.output


@pytest.mark.slow
def test_perf_feedback_memory_reads_the_servers_memory_until_the_caps_are_full_and_after_a_reset(
    tmp_path: Path,
) -> None:
    from toolsift.bench.feedback_memory import FED_TOOLS
    from toolsift.router.usage import DEFAULT_PER_CONTRIBUTOR

    out = tmp_path / "memory.json"
    args = ["perf", "--feedback-memory", "--sizes", "100", "--requests", "1600", "--model", "hashing-64"]
    result = CliRunner().invoke(main, [*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    cap = FED_TOOLS * DEFAULT_PER_CONTRIBUTOR  # one contributor (the admin token): 16 per tool
    assert [row["sent"] for row in document["rows"]] == [0, *range(200, 1601, 200)]
    assert document["rows"][-1]["retained"] == cap and document["after_reset"]["retained"] == 0
    assert document["retention_full_at"] == 1200  # the first checkpoint past 64 x 16 requests
    assert document["growth_after_full_mib"] == round(
        document["rows"][-1]["rss_mib"] - document["rows"][6]["rss_mib"], 1
    )
    assert all(row["rss_mib"] > 0 for row in document["rows"]) and "memory added after that" in result.output


@pytest.mark.parametrize("command", ["bench", "abstention-bench", "sessions-bench", "security-bench"])
def test_a_missing_datasets_folder_says_how_to_get_data_without_a_traceback(command: str, tmp_path: Path) -> None:
    missing = tmp_path / "shared" / "datasets"
    done = CliRunner().invoke(main, [command, "--datasets", str(missing)])
    assert done.exit_code == 2 and done.exception is not None and isinstance(done.exception, SystemExit)
    assert f"no folder at {missing}" in done.output and "tools.jsonl" in done.output
    assert "benchmarks/README.md" in done.output and "Traceback" not in done.output
    empty = tmp_path / "empty"
    empty.mkdir()
    done = CliRunner().invoke(main, [command, "--datasets", str(empty)])
    assert done.exit_code == 2 and f"no dataset folder under {empty}" in done.output
    if command != "security-bench":
        done = CliRunner().invoke(main, [command, "--dataset", str(empty)])
        assert done.exit_code == 2 and "is not a dataset (no tools.jsonl or queries.jsonl there)" in done.output
