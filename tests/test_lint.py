"""toolsift lint: each check on a catalog built to trip it, the real model for embedding checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from toolsift import Catalog, Router
from toolsift.catalog import parse_catalog
from toolsift.cli import main
from toolsift.curation import lint_catalog
from toolsift.embeddings import Embedder

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"

GOOD = {
    "name": "get_weather",
    "description": "Current weather for a city. Use for today's conditions; for later days use get_forecast.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}},
    },
    "examples": ["is it raining in Lyon right now?"],
}
BAD: list[dict[str, Any]] = [
    GOOD,
    {"name": "getWeather", "description": "Weather for a city, use this when asked about weather now."},
    {"name": "invoice", "description": ""},
    {"name": "send_sms", "description": "Sends SMS."},
    {
        "name": "create_ticket",
        "description": "Open a support ticket for a customer problem, when something is broken.",
        "parameters": {
            "type": "object",
            "properties": {
                "priority": {"type": "string", "description": "One of 'low', 'normal' or 'high'"},
                "title": {"type": "string"},
                **{f"field_{i}": {"type": "string", "description": f"Field {i}"} for i in range(6)},
            },
            "required": [f"field_{i}" for i in range(6)],
        },
    },
    {"name": "list_files", "description": "List the files in a folder of the user's drive with their sizes."},
]


def codes(report: Any, tool: str) -> set[str]:
    return {f.code for f in report.findings if tool in f.tools}


def test_static_checks_each_fire_with_a_suggestion() -> None:
    report = lint_catalog(parse_catalog(BAD, source="bad"), count_tokens=lambda text: len(text) // 4)
    assert codes(report, "get_weather") == {"colliding-names"}  # the good tool is only flagged for its twin
    assert "colliding-names" in codes(report, "getWeather")
    assert {"empty-description", "name-not-verb-noun"} <= codes(report, "invoice")
    assert {"short-description", "no-usage-guidance"} <= codes(report, "send_sms")
    ticket = codes(report, "create_ticket")
    assert {"free-text-looks-like-enum", "parameter-without-description", "many-required-parameters"} <= ticket
    assert codes(report, "list_files") - {"no-examples"} == {"no-usage-guidance"}
    assert all(finding.suggestion for finding in report.findings)
    enum = next(f for f in report.findings if f.code == "free-text-looks-like-enum")
    assert enum.details == {"parameter": "priority"} and '"enum"' in enum.suggestion
    assert report.counts()["error"] == 1 and report.fails("error")
    assert report.schema_tokens["create_ticket"] > report.schema_tokens["send_sms"]


def test_token_cost_check() -> None:
    huge = {**GOOD, "description": str(GOOD["description"]) + " word" * 3000}
    report = lint_catalog(parse_catalog([huge], source="huge"))
    costly = [f for f in report.findings if f.code == "costly-schema"]
    assert costly and costly[0].details["tokens"] > 600


@pytest.mark.model
def test_confusable_pairs_and_query_checks_with_the_real_model(real_embedder: Embedder) -> None:
    tools = [
        GOOD,
        {**GOOD, "name": "fetch_current_weather"},  # the same tool under another name
        {"name": "convert_currency", "description": "Convert an amount of money from one currency to another."},
        {"name": "play_music", "description": "Play a song, album or playlist on the user's speakers."},
    ]
    router = Router.build(parse_catalog(tools, source="near"), real_embedder)
    queries = [
        ("how many euros is 100 dollars", ["convert_currency"]),
        ("convert 20 pounds to yen", ["convert_currency"]),
        ("exchange 50 francs into dollars", ["convert_currency"]),
        ("change 10 dollars to euros", ["convert_currency"]),
    ]
    report = lint_catalog(router.catalog, router, queries, k=1, count_tokens=len)
    pairs = [f for f in report.findings if f.code == "confusable-pair"]
    assert [f.tools for f in pairs] == [("get_weather", "fetch_current_weather")]
    assert pairs[0].details["similarity"] >= 0.85
    never = {f.tools[0] for f in report.findings if f.code == "never-retrieved"}
    assert never == {"get_weather", "fetch_current_weather", "play_music"}
    assert report.per_tool_accuracy == {"convert_currency": {"queries": 4.0, "top1": 1.0, "recall@1": 1.0}}


@pytest.mark.model
def test_queries_that_confuse_two_tools_are_reported(real_embedder: Embedder) -> None:
    tools = [
        {"name": "book_flight", "description": "Book a plane ticket between two airports."},
        {"name": "book_hotel", "description": "Book a hotel room in a city for some nights."},
    ]
    router = Router.build(parse_catalog(tools, source="travel"), real_embedder)
    # labelled (wrongly, on purpose) as hotel requests: the router ranks book_flight first
    queries = [
        (q, ["book_hotel"])
        for q in ("book a flight to Rome", "buy a plane ticket to Oslo", "I need a flight to Lima on Monday")
    ]
    report = lint_catalog(router.catalog, router, queries, k=1, count_tokens=len)
    confused = [f for f in report.findings if f.code == "confused-by-queries"]
    assert [f.tools for f in confused] == [("book_hotel", "book_flight")]
    assert confused[0].details["count"] == 3 and "book_hotel" in confused[0].suggestion


def test_lint_command_exit_code_and_json(tmp_path: Path) -> None:
    catalog = tmp_path / "bad.json"
    catalog.write_text(json.dumps(BAD))
    runner = CliRunner()
    failed = runner.invoke(main, ["lint", str(catalog), "--no-embeddings"])
    assert failed.exit_code == 1 and "empty-description" in failed.output and "fix:" in failed.output
    good = tmp_path / "good.json"
    good.write_text(json.dumps([GOOD]))
    passed = runner.invoke(main, ["lint", str(good), "--no-embeddings", "--json"])
    assert passed.exit_code == 0, passed.output
    document = json.loads(passed.output)
    assert document["counts"] == {"error": 0, "warning": 0, "info": 0} and document["tools"] == 1
    strict = runner.invoke(main, ["lint", str(catalog), "--no-embeddings", "--fail-on", "info", "--json"])
    assert strict.exit_code == 1 and json.loads(strict.output)["counts"]["warning"] >= 3


KOREAN = [
    {"name": "get_weather", "description": "도시의 현재 날씨와 기온을 알려줍니다."},
    {"name": "send_message", "description": "친구에게 문자 메시지를 보냅니다."},
    {"name": "convert_currency", "description": "금액을 다른 나라의 통화로 환전해 계산합니다."},
]


@pytest.mark.model
def test_an_english_only_model_on_a_korean_catalog_is_flagged(real_embedder: Embedder) -> None:
    from toolsift.embeddings import HashingEmbedder
    from toolsift.router import RankingConfig

    catalog = parse_catalog(KOREAN, source="ko")
    report = lint_catalog(catalog, Router.build(catalog, real_embedder), count_tokens=len)
    (finding,) = [f for f in report.findings if f.code == "english-model-on-non-latin-catalog"]
    assert finding.severity == "warning" and finding.details["model"] == "all-MiniLM-L6-v2"
    assert finding.details["non_latin_share"] > 0.9 and "'auto'" in finding.suggestion and "1.0" in finding.suggestion
    # not once the lexical weight is raised, not for other models, not for an English catalog
    raised = Router.build(catalog, real_embedder, ranking=RankingConfig(lexical_weight=1.0))
    other = Router.build(catalog, HashingEmbedder(64))
    english = Router.build(parse_catalog([GOOD], source="en"), real_embedder)
    for router in (raised, other, english):
        report = lint_catalog(router.catalog, router, count_tokens=len)
        assert "english-model-on-non-latin-catalog" not in {f.code for f in report.findings}


@pytest.mark.model
def test_lint_command_flags_the_model_and_reads_the_weight_from_the_environment(tmp_path: Path) -> None:
    catalog = tmp_path / "ko.json"
    catalog.write_text(json.dumps(KOREAN, ensure_ascii=False))
    runner = CliRunner()
    pinned = runner.invoke(main, ["lint", str(catalog), "--json"], env={"TOOLSIFT_MODEL": "all-MiniLM-L6-v2"})
    assert pinned.exit_code == 0, pinned.output
    assert "english-model-on-non-latin-catalog" in {f["code"] for f in json.loads(pinned.output)["findings"]}
    raised = runner.invoke(
        main,
        ["lint", str(catalog), "--json"],
        env={"TOOLSIFT_MODEL": "all-MiniLM-L6-v2", "TOOLSIFT_LEXICAL_WEIGHT": "1.0"},
    )
    assert "english-model-on-non-latin-catalog" not in {f["code"] for f in json.loads(raised.output)["findings"]}
    text = runner.invoke(main, ["lint", str(catalog)], env={"TOOLSIFT_MODEL": "all-MiniLM-L6-v2"})
    assert "english-model-on-non-latin-catalog (1)\n  the catalog: the index uses all-MiniLM-L6-v2" in text.output


@pytest.mark.model
def test_the_bundled_catalog_lints_without_warnings(bundled_router: Router) -> None:
    """The showcase: what toolsift's own lint, with the real model, finds in the catalog every user
    sees first. Notes (info) are allowed; nothing worse."""
    report = lint_catalog(bundled_router.catalog, bundled_router)
    worse = [f"{f.code}: {f.message}" for f in report.findings if f.severity != "info"]
    assert worse == []


def test_a_confusable_pair_added_to_the_bundled_catalog_is_found(bundled_router: Router) -> None:
    """Two servers offering the same tool under two names: the pair the check exists for."""
    original = bundled_router.catalog.get("get_current_weather")
    assert original is not None
    twin = original.model_copy(update={"name": "get_weather_now"})
    catalog = Catalog([*bundled_router.catalog, twin], source="bundled plus a twin")
    report = lint_catalog(catalog, bundled_router.rebuilt(catalog), count_tokens=len)
    pairs = {tuple(sorted(f.tools)) for f in report.findings if f.code == "confusable-pair"}
    assert pairs == {("get_current_weather", "get_weather_now")}


def test_the_confusable_threshold_follows_the_catalogs_own_cosines() -> None:
    from toolsift.curation.lint import confusable_cosine, mean_pair_cosine

    rng = np.random.default_rng(3)
    spread = rng.standard_normal((40, 16)).astype(np.float32)
    spread /= np.linalg.norm(spread, axis=1, keepdims=True)
    crowded = spread * 0.2 + np.ones(16, dtype=np.float32)  # every pair close, as with an e5 model
    crowded /= np.linalg.norm(crowded, axis=1, keepdims=True)
    for vectors in (spread, crowded):
        cosines = (vectors @ vectors.T)[np.triu_indices(40, 1)]
        assert mean_pair_cosine(vectors) == pytest.approx(float(cosines.mean()), abs=1e-5)
        assert float(np.mean(cosines >= confusable_cosine(vectors))) <= 0.05
    assert confusable_cosine(crowded) > 0.95 > 0.85 > confusable_cosine(spread)


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.skipif(
    not (DATASETS / "functionchat_ko").is_dir(), reason="../shared/datasets is not beside the repository"
)
def test_confusable_pairs_are_few_on_an_e5_catalog() -> None:
    """On functionchat_ko (multilingual-e5-small, unrelated tools near cosine 0.87) a fixed 0.85
    flagged 76% of all pairs; the catalog-relative threshold flags under 5%."""
    from toolsift.bench.datasets import load_dataset
    from toolsift.embeddings import embedder_for

    folder = DATASETS / "functionchat_ko"
    catalog = load_dataset(folder / "tools.jsonl", folder / "queries.jsonl").catalog
    router = Router.build(catalog, embedder_for("auto", catalog))
    assert router.embedder.name == "multilingual-e5-small"
    pairs = [f for f in lint_catalog(catalog, router, count_tokens=len).findings if f.code == "confusable-pair"]
    assert len(pairs) <= 0.05 * len(catalog) * (len(catalog) - 1) / 2


def test_confusable_tools_come_as_one_cluster_not_one_finding_per_pair() -> None:
    from toolsift.curation.lint import visible_findings
    from toolsift.embeddings import HashingEmbedder
    from toolsift.router import Scope

    same = "Send an email message to a recipient with a subject and a body."
    tools = [
        {"name": "send_email", "description": same},
        {"name": "send_mail", "description": same},
        {"name": "email_send", "description": same},
        {"name": "mail_send", "description": same},
        {"name": "get_weather", "description": "Current weather for a city."},
        {"name": "get_weather_now", "description": "Current weather for a city."},
        *({"name": f"tool_{word}", "description": f"Does {word} things only."} for word in
          ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")),
    ]  # fmt: skip
    catalog = parse_catalog(tools, source="twins")
    router = Router.build(catalog, HashingEmbedder(256))
    findings = lint_catalog(catalog, router, count_tokens=len).findings
    clusters = [f for f in findings if f.code == "confusable-cluster"]
    pairs = [f for f in findings if f.code == "confusable-pair"]
    assert [set(f.tools) for f in clusters] == [{"send_email", "send_mail", "email_send", "mail_send"}]
    assert len(clusters[0].details["pairs"]) == 6 and "4 tools read alike" in clusters[0].message
    assert [set(f.tools) for f in pairs] == [{"get_weather", "get_weather_now"}]
    tenant = Scope.of(catalog, np.asarray([0, 1, 4, 5]))  # half the cluster: it is not theirs to read
    assert {f.code for f in visible_findings(findings, tenant)} & {"confusable-cluster"} == set()


def test_the_naming_note_never_suggests_a_rename_that_changes_the_meaning() -> None:
    catalog = parse_catalog(
        [
            {"name": "stripe_create_refund", "description": "Refund a Stripe charge, fully or in part."},
            {"name": "gh_list_issues", "description": "List the issues of a GitHub repository."},
            {"name": "invoice", "description": "Invoices."},
        ]  # fmt: skip
    )
    notes = [f for f in lint_catalog(catalog, count_tokens=len).findings if f.code == "name-not-verb-noun"]
    assert [f.tools for f in notes] == [("invoice",)]
    assert "get_" not in notes[0].suggestion and "invoice" not in notes[0].suggestion


def test_lint_prints_each_check_once_with_its_first_findings_and_folds_the_notes(tmp_path: Path) -> None:
    from toolsift.cli import FINDINGS_PER_CHECK

    tools = [{"name": f"thing{i}", "description": "Short."} for i in range(FINDINGS_PER_CHECK + 5)]
    catalog = tmp_path / "many.json"
    catalog.write_text(json.dumps(tools))
    text = CliRunner().invoke(main, ["lint", str(catalog), "--no-embeddings"]).output
    assert text.count("warning  short-description (15)") == 1 and text.count("fix: ") == FINDINGS_PER_CHECK
    assert "... and 5 more (--all, or --json)" in text and "name-not-verb-noun" not in text.split("notes:")[0]
    assert "notes: " in text and "--all shows them" in text
    every = CliRunner().invoke(main, ["lint", str(catalog), "--no-embeddings", "--all"]).output
    counts = json.loads(CliRunner().invoke(main, ["lint", str(catalog), "--no-embeddings", "--json"]).output)["counts"]
    assert every.count("fix: ") == sum(counts.values())  # every finding, notes included


def test_a_name_gemini_refuses_is_a_warning() -> None:
    catalog = parse_catalog([{"name": "3d_render", "description": "Render a 3D model to an image file."},
                             {"name": "_private_tool", "description": "Does a private thing for the team."}])  # fmt: skip
    found = [f for f in lint_catalog(catalog, count_tokens=len).findings if f.code == "name-refused-by-gemini"]
    assert [f.tools for f in found] == [("3d_render",)] and found[0].severity == "warning"
