"""Abstention: with the real model on the bundled catalog, a request no tool serves gets no tools
(``abstained``, a reason) in every delivery mode, over HTTP, MCP and the CLI alike; a session
turn that abstains leaves the tools array byte for byte; pinned tools still come; ``min_confidence``
0 restores plain top-k; the calibration is the catalog's (refitted for another catalog, the same
after a restart) and follows feedback."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import orjson
import pytest
import yaml
from anthropic.types import TextBlockParam, ToolResultBlockParam
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp.client import Client
from openai.types.chat import ChatCompletionToolChoiceOptionParam
from openai.types.responses.response_tool_search_output_item_param_param import ResponseToolSearchOutputItemParamParam
from pydantic import TypeAdapter
from test_deferred import conforms
from test_router import PLAIN_QUERIES

from toolsift import Router
from toolsift.bench.abstention import NO_TOOL_EVAL
from toolsift.catalog import Catalog, parse_catalog
from toolsift.cli import main
from toolsift.embeddings import Embedder, EmbedderWrapper
from toolsift.router import Scope, confidence
from toolsift.router import router as router_module
from toolsift.router.confidence import (
    DEFAULT_MIN_CONFIDENCE,
    FLOOR_SHARE,
    abstention,
    calibrated_for,
    crowd_share,
    no_tool_floor,
    no_tool_languages,
    no_tool_requests,
    recall_ceiling,
)
from toolsift.router.ranking import RankingConfig
from toolsift.router.usage import Feedback
from toolsift.service import create_app
from toolsift.service.mcp_server import mcp_server_for
from toolsift.settings import Settings
from toolsift.types import Matrix

from conftest import benchmark_script

pytestmark = pytest.mark.model

NO_TOOL = "lovely, thanks a bunch, that was all I needed"  # in neither shipped nor benchmark set
HAIKU = "compose a sonnet about a cat sleeping in the sun"
WEATHER = "will it rain in Seattle tomorrow?"


def _words(text: str) -> str:
    """``text`` without case, punctuation or spacing: "Why is X?" and "why is x" are one request."""
    return "".join(character for character in text.casefold() if character.isalnum())


def test_the_calibration_set_and_the_benchmark_set_share_no_request() -> None:
    fitted = {_words(text) for text in no_tool_requests()}
    benchmark: dict[str, list[str]] = yaml.safe_load(NO_TOOL_EVAL.read_text(encoding="utf-8"))
    assert {"en", "de", "es", "ko"} <= set(benchmark)
    assert len(fitted) == len(no_tool_requests())  # no request shipped twice
    assert not fitted & {_words(text) for texts in benchmark.values() for text in texts}
    assert _words(NO_TOOL) not in fitted and _words(HAIKU) not in fitted


def test_the_abstention_rule() -> None:
    assert abstention([0.9, 0.4, 0.01], 0.0) == ([0, 1, 2], "")  # 0 keeps everything
    kept, reason = abstention([0.05, 0.04], 0.1)
    assert kept == [] and "0.05" in reason and "0.10" in reason
    assert abstention([0.3, 0.02], 0.1)[0] == [0, 1]  # up to k: the best reaches it, the rest come along
    assert abstention([], 0.5) == ([], "")  # nothing eligible is not an abstention
    assert calibrated_for("all-MiniLM-L6-v2") and not calibrated_for("hashing-64")


def test_a_request_no_tool_serves_gets_none_and_one_that_fits_keeps_its_tools(bundled_router: Router) -> None:
    for text in (NO_TOOL, HAIKU, "hola, ¿qué tal estás hoy?", "오늘 기분이 좋아요, 고마워요"):
        result = bundled_router.route(text, 5)
        assert result.abstained and not result.matches and not result.tools, text
        assert "confidence" in result.reason
    fits = bundled_router.route(WEATHER, 5)
    assert not fits.abstained and fits.names[0] == "get_weather_forecast"
    assert fits.matches[0].confidence >= DEFAULT_MIN_CONFIDENCE
    assert all(0.0 <= m.confidence <= 1.0 for m in fits.matches)
    # 0 restores plain top-k: every request gets k tools, with their confidence shown
    everything = bundled_router.route(NO_TOOL, 5, min_confidence=0)
    assert len(everything.matches) == 5 and not everything.abstained
    assert max(m.confidence for m in everything.matches) < DEFAULT_MIN_CONFIDENCE


def test_pinned_tools_survive_abstention(bundled_router: Router) -> None:
    result = bundled_router.route(HAIKU, 5, pinned=["send_email"])
    assert result.abstained and [tool.name for tool in result.tools] == ["send_email"]


@pytest.mark.parametrize("session", [False, True])
def test_every_delivery_mode_answers_an_abstaining_request(bundled_client: TestClient, session: bool) -> None:
    base: dict[str, Any] = {"query": HAIKU, "k": 4}
    if session:
        base["session_id"] = "abstain-modes"
        first = bundled_client.post("/route", json={"query": WEATHER, "k": 4, "session_id": "abstain-modes"}).json()
        assert not first["abstained"]
    subset = bundled_client.post("/route", json=base).json()
    assert subset["abstained"] and subset["matches"] == [] and "confidence" in subset["reason"]
    assert subset["tools"] == ([] if not session else first["tools"])

    narrow = {} if session else {"tags": ["weather"]}  # without a session the superset is every allowed tool
    masked = bundled_client.post(
        "/route", json={**base, **narrow, "format": "openai", "delivery": "allowed_tools"}
    ).json()
    assert masked["abstained"] and masked["tool_choice"] == "none"
    assert TypeAdapter(ChatCompletionToolChoiceOptionParam).validate_python(masked["tool_choice"]) == "none"

    referenced = bundled_client.post("/route", json={**base, "format": "anthropic", "delivery": "tool_reference"})
    content = referenced.json()["content"]
    assert [block["type"] for block in content] == ["text"] and "Answer without a tool" in content[0]["text"]
    assert all(conforms(TextBlockParam, block) for block in content)
    assert conforms(ToolResultBlockParam, {"type": "tool_result", "tool_use_id": "toolu_1", "content": content})

    searched = bundled_client.post(
        "/route", json={**base, "format": "responses", "delivery": "tool_search_output", "call_id": "c9"}
    ).json()
    assert searched["abstained"] and searched["output_item"]["tools"] == []
    assert conforms(ResponseToolSearchOutputItemParamParam, searched["output_item"])

    plain = bundled_client.post("/route", json={**base, "min_confidence": 0}).json()
    assert not plain["abstained"] and len(plain["matches"]) == 4 and "reason" not in plain


def test_an_abstaining_session_turn_leaves_the_tools_array_byte_identical(bundled_client: TestClient) -> None:
    session = {"session_id": "abstain-prefix", "format": "anthropic", "k": 3}
    first = bundled_client.post("/route", json={**session, "query": WEATHER})
    second = bundled_client.post("/route", json={**session, "query": NO_TOOL})
    third = bundled_client.post("/route", json={**session, "query": "translate this text into French"})
    one, two = first.json(), second.json()
    assert two["abstained"] and not two["session"]["prefix_changed"] and two["session"]["appended"] == []
    assert orjson.dumps(two["tools"]) == orjson.dumps(one["tools"]) and two["fingerprint"] == one["fingerprint"]
    assert not third.json()["abstained"] and "translate_text" in third.json()["session"]["appended"]


def test_http_mcp_and_cli_abstain_alike(bundled_index: Path, bundled_router: Router) -> None:
    async def over_mcp() -> dict[str, Any]:
        async with Client(mcp_server_for(bundled_router)) as client:
            result = await client.call_tool("search_tools", {"query": HAIKU, "k": 3})
        assert not result.is_error and result.structured_content is not None
        return dict(result.structured_content)

    with TestClient(create_app(bundled_router, settings=Settings())) as http:
        over_http = http.post("/route", json={"query": HAIKU, "k": 3, "format": "mcp"}).content
    printed = CliRunner().invoke(
        main, ["route", HAIKU, "--index", str(bundled_index), "-k", "3", "--format", "mcp", "--json"]
    )
    assert printed.exit_code == 0, printed.output
    assert printed.output.encode().rstrip(b"\n") == over_http
    assert orjson.dumps(anyio.run(over_mcp), option=orjson.OPT_SORT_KEYS) == over_http
    assert orjson.loads(over_http)["abstained"] is True
    said = CliRunner().invoke(main, ["route", HAIKU, "--index", str(bundled_index)])
    assert said.exit_code == 0 and said.output.startswith("no tool: no tool is likely enough")
    forced = CliRunner().invoke(main, ["route", HAIKU, "--index", str(bundled_index), "--min-confidence", "0"])
    ranked = [line for line in forced.output.splitlines() if line.strip()[:1].isdigit()]
    assert forced.exit_code == 0 and len(ranked) == 5


def test_the_server_setting_and_a_bad_value(bundled_router: Router) -> None:
    with TestClient(create_app(bundled_router, settings=Settings(min_confidence=0.0))) as never:
        assert len(never.post("/route", json={"query": HAIKU, "k": 3}).json()["matches"]) == 3
    with TestClient(create_app(bundled_router, settings=Settings())) as http:
        bad = http.post("/route", json={"query": HAIKU, "min_confidence": 1.5})
        assert bad.status_code == 422 and "min_confidence" in bad.text


def test_the_no_tool_floor_is_the_hardest_languages_quantile() -> None:
    english = [0.01 * i for i in range(10)]  # 0.00 .. 0.09
    assert no_tool_floor([*english, 0.5, 0.6], ["en"] * 10 + ["de"] * 2) == pytest.approx(0.58)  # de's 80%
    assert no_tool_floor(english, ["en"] * 10) == pytest.approx(float(np.quantile(english, FLOOR_SHARE)))
    assert len(no_tool_languages()) == len(no_tool_requests()) and {"en", "de", "es", "ko"} <= set(no_tool_languages())


TRIVIA = [  # tools for what the shipped no-tool requests ask: they pass 0.1 here
    {"name": "tell_joke", "description": "Tell a joke or a funny story about any subject"},
    {"name": "write_poem", "description": "Write a poem, a haiku, a limerick or a short story on a theme"},
    {"name": "explain_topic", "description": "Explain how something in science or nature works, simply"},
    {"name": "give_advice", "description": "Advice on life, work, relationships, habits and feelings"},
    {"name": "share_opinion", "description": "Give an opinion on which of two things is better and why"},
    {"name": "solve_puzzle", "description": "Solve a riddle, a logic puzzle or a word problem in arithmetic"},
    {"name": "chat", "description": "Small talk: greetings, thanks, how are you, goodbyes"},
]


def test_a_catalog_that_catches_no_tool_requests_raises_its_default_threshold(real_embedder: Embedder) -> None:
    """The default threshold is 0.1 or the catalog's no-tool floor, the higher; a number the
    ranking config, the server or the request sets is used as it is."""
    plain = Router.build(small_catalog(), real_embedder)  # weather, email, flights: its floor about 0.1
    assert plain.default_threshold() == max(DEFAULT_MIN_CONFIDENCE, plain.no_tool_floor()) < 0.11
    trivia = Router.build(parse_catalog(TRIVIA, source="trivia"), real_embedder)
    floor = trivia.no_tool_floor()
    assert floor > plain.default_threshold() and trivia.default_threshold() == floor
    set_here = Router(trivia.index, trivia.embedder, RankingConfig(min_confidence=DEFAULT_MIN_CONFIDENCE))
    assert set_here.default_threshold() == DEFAULT_MIN_CONFIDENCE
    shape = Router(trivia.index, trivia.embedder, RankingConfig(recalibrate=False))  # what the abstention compares
    routed = shape.route_many(list(no_tool_requests()), 3, min_confidence=0)
    best = {result.query: max(m.confidence for m in result.matches) for result in routed}
    between = [text for text, confidence in best.items() if DEFAULT_MIN_CONFIDENCE <= confidence < floor]
    assert between, "some shipped request lies between 0.1 and the floor"
    assert trivia.route(between[0], 3).abstained and trivia.route(between[0], 3).reason.endswith(f"{floor:.2f})")
    assert not trivia.route(between[0], 3, min_confidence=DEFAULT_MIN_CONFIDENCE).abstained
    with TestClient(create_app(trivia, settings=Settings(min_confidence=DEFAULT_MIN_CONFIDENCE))) as http:
        assert http.post("/route", json={"query": between[0], "k": 3}).json()["abstained"] is False
    with TestClient(create_app(trivia, settings=Settings())) as http:
        assert http.post("/route", json={"query": between[0], "k": 3}).json()["abstained"] is True


def test_the_recall_ceiling() -> None:
    best = [0.05, 0.2, 0.3, 0.4] + [0.9] * 96
    assert recall_ceiling(best, [1.0] * 100) == pytest.approx(0.2)  # 0.2 loses one request of 100: at most 0.01
    assert recall_ceiling(best, [0.0, 1.0, 1.0, 1.0] + [1.0] * 96) == pytest.approx(0.3)  # the first found nothing
    assert recall_ceiling([0.5, 0.6], [0.0, 0.0]) == 1.0  # nothing they find is lost at any threshold


WRITTEN = Path(__file__).resolve().parents[1] / "benchmarks" / "abstention" / "default_catalog_requests.tsv"


def test_the_shipped_shape_is_what_fit_shape_fits_on_the_shipped_requests() -> None:
    """SHAPE is not hand-set: benchmarks/abstention/fit_shape.py, on the written requests and the
    shipped no-tool requests with both shipped models, gives it to its printed precision. Editing
    either set without refitting fails here."""
    fit_shape = benchmark_script("abstention/fit_shape.py")
    assert len(fit_shape.labelled_requests()) == 192 + 179 + 64
    shape, loss, ece = fit_shape.fitted()
    for field in ("intercept", "above", "below_best", "coverage"):
        assert getattr(shape, field) == pytest.approx(getattr(confidence.SHAPE, field), abs=2e-3), field
    assert loss < 0.2 and ece < 0.02


def test_labelled_requests_keep_the_floor_from_costing_them_recall(
    bundled_index: Path, real_embedder: Embedder
) -> None:
    """The bundled catalog's floor (0.145) would cost the requests written for it more than 0.01 of
    Recall@5 (benchmarks/DECISIONS.md): once they are fed, that pool's threshold is 0.1 again; a pool
    without them, and routes without feedback, keep the floor."""
    router = Router.load(bundled_index, real_embedder)
    floor = router.no_tool_floor()
    assert floor > DEFAULT_MIN_CONFIDENCE and router.default_threshold("") == floor
    lines = [line.split("\t") for line in WRITTEN.read_text(encoding="utf-8").splitlines() if "\t" in line]
    router.learn([Feedback(text, tool, contributor=f"writer-{n}") for n, (text, tool) in enumerate(lines)])
    ceiling = router.calibration("").recalibration.ceiling
    assert ceiling < floor and router.default_threshold("") == max(DEFAULT_MIN_CONFIDENCE, ceiling)
    assert router.default_threshold(None) == floor
    shape = Router(router.index, router.embedder, RankingConfig(recalibrate=False))
    between = [
        result.query
        for result in shape.route_many(list(PLAIN_QUERIES), 3, min_confidence=0, usage_pool=None)
        if DEFAULT_MIN_CONFIDENCE <= max(m.confidence for m in result.matches) < floor
    ]
    assert between, "a plain request lies between 0.1 and the floor"
    assert router.route(between[0], 3, usage_pool=None).abstained
    assert f"needed {floor:.2f}" in router.route(between[0], 3, usage_pool=None).reason
    fed = [router.route(query, 3) for query in PLAIN_QUERIES]  # the fed pool's routes compare with 0.1
    assert all("needed 0.10" in result.reason for result in fed if result.abstained)
    assert sum(result.abstained for result in fed) <= 1


def small_catalog(extra: str = "") -> Catalog:
    tools = [
        {"name": "get_weather", "description": "Current weather conditions for a city"},
        {"name": "send_email", "description": "Send an email message to a recipient"},
        {"name": "book_flight", "description": "Book a flight between two airports on a date"},
    ]
    if extra:
        tools.append(
            {"name": extra, "description": "Write a poem, a sonnet or a short story on any theme the user gives"}
        )
    return parse_catalog(tools, source="small")


def test_the_calibration_is_the_catalogs_refitted_on_change_and_the_same_after_a_restart(
    tmp_path: Path, real_embedder: Embedder
) -> None:
    router = Router.build(small_catalog(), real_embedder)
    before = router.route(HAIKU, 3, min_confidence=0)
    assert router.route(HAIKU, 3).abstained
    changed = router.rebuilt(small_catalog("write_creative_text"))
    assert changed.calibration() is not router.calibration()
    found = changed.route(HAIKU, 3)  # the catalog now has a tool for it
    assert not found.abstained and found.names[0] == "write_creative_text"
    restarted = Router.load(router.save(tmp_path / "index"), real_embedder)
    again = restarted.route(HAIKU, 3, min_confidence=0)
    assert [(m.name, m.confidence) for m in again.matches] == [(m.name, m.confidence) for m in before.matches]
    assert restarted.calibration().center == pytest.approx(router.calibration().center)


def test_feedback_raises_the_confidence_of_the_tool_it_names(real_embedder: Embedder) -> None:
    router = Router.build(small_catalog(), real_embedder)
    request = "ping the ops crew about the outage"
    assert router.route(request, 3, min_confidence=0).matches[0].confidence < 0.5
    router.learn(Feedback(request, "send_email"))
    learned = router.route(request, 3)
    assert not learned.abstained and learned.names[0] == "send_email" and learned.matches[0].confidence >= 0.5


def test_feedback_refits_the_calibration_of_its_pool(real_embedder: Embedder) -> None:
    router = Router.build(small_catalog(), real_embedder)
    before = router.calibration("")
    assert router.calibration("") is before  # nothing new, nothing refitted
    # requests that read as small talk, fed as a tool's: that pool's no-tool requests now reach higher
    router.learn([Feedback(text, "send_email") for text in ("thanks so much, you're great", "hello, how is it going?")])
    after = router.calibration("")
    assert after is not before and after.center > before.center
    assert router.calibration(None).center == pytest.approx(before.center)  # the catalog's own is unchanged


def test_the_crowds_share() -> None:
    assert crowd_share([0.9, 0.9, 0.9, 0.9], 1) == pytest.approx(1 / 3.6)  # four fit: each a quarter-ish
    assert crowd_share([0.9, 0.9, 0.9, 0.9], 2) == pytest.approx(2 / 3.6)  # a request in two parts asks for two
    assert crowd_share([0.8, 0.1, 0.05], 1) == 1.0  # fewer fit than it asks for: nothing shared
    assert crowd_share([], 1) == 1.0


def test_near_equal_tools_share_their_confidence_but_not_the_abstention(real_embedder: Embedder) -> None:
    """Three copies of the e-mail tool under other names: the shape's confidences of the four sum
    to more than two, each reports under half of it (one tool is asked for: the four sum to at
    most 1), and the answer is the one the shape's confidence, which the abstention compares,
    gives (not abstained, the same tools)."""
    request = "send an email message to bob"
    plain = Router.build(small_catalog(), real_embedder)
    email = next(tool for tool in plain.catalog if tool.name == "send_email").model_dump(exclude_none=True)
    copies = [{**email, "name": f"send_email_v{n}"} for n in range(1, 4)]
    tools = [*(tool.model_dump(exclude_none=True) for tool in plain.catalog), *copies]
    crowded = Router.build(parse_catalog(tools, source="crowded"), real_embedder)
    shape = Router(crowded.index, real_embedder, replace(crowded.ranking, recalibrate=False))
    alone, among, before = (r.route(request, 5) for r in (plain, crowded, shape))
    assert not alone.abstained and not among.abstained and not before.abstained
    assert set(among.names[:4]) == {"send_email", "send_email_v1", "send_email_v2", "send_email_v3"}
    assert among.names == before.names
    mine = {m.name: m.confidence for m in among.matches}
    theirs = {m.name: m.confidence for m in before.matches}
    assert alone.matches[0].confidence > 2 * DEFAULT_MIN_CONFIDENCE
    assert sum(mine[name] for name in among.names[:4]) <= 1.0 + 1e-6  # one tool asked for: at most one expected
    assert sum(theirs[name] for name in among.names[:4]) > 2  # the shape: more than two fit
    assert all(mine[name] < theirs[name] / 2 for name in among.names[:4])
    # a caller who may see one of the four has no crowd: the match keeps the shape's confidence
    ids = np.asarray([i for i, tool in enumerate(crowded.catalog) if tool.name not in {c["name"] for c in copies}])
    scope = Scope.of(crowded.catalog, ids)
    seen, seen_before = (r.route(request, 5, scope=scope) for r in (crowded, shape))
    assert seen.names[0] == "send_email" and "send_email_v1" not in seen.names
    assert seen.matches[0].confidence == pytest.approx(seen_before.matches[0].confidence, abs=1e-4)


def test_ranking_deeper_for_the_crowd_changes_no_shape_confidence(
    bundled_router: Router, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crowd ranks 20 deep; the shape's confidences (and so every abstention) are those of the k
    a request asked for, as when nothing more was ranked."""
    shape = Router(bundled_router.index, bundled_router.embedder, replace(bundled_router.ranking, recalibrate=False))
    requests = [
        WEATHER,
        HAIKU,
        NO_TOOL,
        "email the team the agenda, then book a flight to Oslo",
        "convert 5 usd to eur",
    ]
    deep = [
        [(m.name, m.confidence) for m in shape.route(r, k, min_confidence=0).matches] for r in requests for k in (1, 3)
    ]
    monkeypatch.setattr(router_module, "CROWD_DEPTH", 0)
    fresh = Router(bundled_router.index, bundled_router.embedder, shape.ranking)
    again = [
        [(m.name, m.confidence) for m in fresh.route(r, k, min_confidence=0).matches] for r in requests for k in (1, 3)
    ]
    assert deep == again


class QueryCounter(EmbedderWrapper):
    """Counts the query texts it embeds."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.queries = 0

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.queries += len(texts)
        return self.inner.embed_queries(texts)


def test_a_saved_index_keeps_its_no_tool_measurements_for_the_next_process(
    tmp_path: Path, real_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`toolsift build` measures the floor once; a process that loads the index (the CLI, a worker,
    a replica) takes it and the no-tool requests' vectors back instead of routing 441 requests.
    A different ranking, model or set of shipped requests measures again."""
    router = Router.build(small_catalog("write_creative_text"), real_embedder)
    floor = router.no_tool_floor()
    folder = router.save(tmp_path / "index")
    monkeypatch.setattr(confidence, "_vectors", {})  # a fresh process: nothing embedded yet
    counter = QueryCounter(real_embedder)
    loaded = Router.load(folder, counter)
    assert loaded.no_tool_floor() == floor and loaded.default_threshold("") == router.default_threshold("")
    assert loaded.route(HAIKU, 3, min_confidence=0).matches == router.route(HAIKU, 3, min_confidence=0).matches
    assert counter.queries == 1  # the request alone: no no-tool request was embedded or routed

    monkeypatch.setattr(confidence, "_vectors", {})
    heavier = Router.load(folder, counter, RankingConfig(lexical_weight=0.6))
    assert heavier._floor is None  # measured with another ranking: measured again when needed
    assert RankingConfig(min_confidence=0.3) != RankingConfig()
    assert Router.load(folder, real_embedder, RankingConfig(min_confidence=0.3))._floor == floor  # not a ranking
    counter.queries = 0
    assert heavier.no_tool_floor() >= 0 and counter.queries == 0  # the vectors came back all the same

    note = orjson.loads((folder / "attached" / "no_tool.json").read_bytes())
    (folder / "attached" / "no_tool.json").write_bytes(orjson.dumps({**note, "requests": "another set"}))
    monkeypatch.setattr(confidence, "_vectors", {})
    counter.queries = 0
    stale = Router.load(folder, counter)
    assert stale._floor is None and stale.no_tool_floor() == floor and counter.queries >= len(no_tool_requests())
