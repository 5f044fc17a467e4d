"""Learning from use: example requests (catalog ``examples`` and feedback) as extra views of a
tool, the book's caps, the log every worker follows, and the HTTP API around them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import orjson
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from toolsift import Catalog, Router
from toolsift.catalog import parse_catalog
from toolsift.cli import main
from toolsift.embeddings import HashingEmbedder
from toolsift.errors import CatalogError, UnknownTool
from toolsift.index.feedback_log import FeedbackLog, feedback_log_path
from toolsift.router import RankingConfig, usage
from toolsift.router.usage import Feedback, FeedbackLimits, UsageBook
from toolsift.service import create_app
from toolsift.settings import Settings

from conftest import TINY_TOOLS, benchmark_script, free_port, wait_until_serving

ODD_REQUEST = "ship the quarterly memo over to bob in accounting"
ADMIN_TOKEN = "admin-token-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
FEEDBACK_TOKEN = "feedback-token-0123456789"
AGENT = {"Authorization": f"Bearer {FEEDBACK_TOKEN}"}


def top(router: Router, query: str, **options: object) -> str:
    return router.route(query, 3, **options).names[0]  # type: ignore[arg-type]


# -- ranking -----------------------------------------------------------------------------------


def test_feedback_makes_a_request_route_to_the_tool_it_was_answered_with(tiny_router: Router) -> None:
    before = tiny_router.route(ODD_REQUEST, 3).names
    assert before[0] != "send_email"
    tiny_router.learn(Feedback(ODD_REQUEST, "send_email"))
    assert top(tiny_router, ODD_REQUEST) == "send_email"
    assert tiny_router.route(ODD_REQUEST, 3, usage_pool=None).names == before  # without feedback: as before
    assert tiny_router.route(ODD_REQUEST, 3, usage_pool="another tenant").names == before


def test_catalog_examples_are_views_of_their_tool(hashing_embedder: HashingEmbedder) -> None:
    tools = [dict(tool) for tool in TINY_TOOLS]
    plain = Router.build(parse_catalog(tools), hashing_embedder)
    assert top(plain, ODD_REQUEST) != "send_email"
    tools[0]["examples"] = [ODD_REQUEST]
    assert top(Router.build(parse_catalog(tools), hashing_embedder), ODD_REQUEST, usage_pool=None) == "send_email"


@pytest.mark.parametrize("allowed_tags", [None, ["email", "weather"]])
def test_best_view_scores_are_standardised_exactly(tiny_router: Router, allowed_tags: list[str] | None) -> None:
    """The dense part equals, by brute force over the eligible tools: z-score of max(cosine to
    the tool's text, cosine to its nearest example less the views' offset), the offset being
    ``VIEW_DISCOUNT`` times the median over the requests of tools with two or more of (cosine to
    the nearest other request of the tool) minus (cosine to the tool's text)."""
    from toolsift.router import TagRules
    from toolsift.router.usage import VIEW_DISCOUNT

    router = Router(tiny_router.index, tiny_router.embedder, RankingConfig(lexical_weight=0, split_intents=False))
    fed = {"send_email": [ODD_REQUEST], "get_forecast": ["rain tomorrow in oslo?", "rain tomorrow in bergen?"]}
    router.learn([Feedback(text, tool, contributor=text) for tool, texts in fed.items() for text in texts])
    rules = TagRules(any_of=tuple(allowed_tags)) if allowed_tags else None
    result = router.route("will it rain in oslo", 8, rules)
    query = router.embedder.embed_queries(["will it rain in oslo"])[0]
    examples = {tool: router.embedder.embed_queries(texts) for tool, texts in fed.items()}
    forecast = router.index.vectors.vectors(np.asarray([router.catalog.position("get_forecast")]))[0]
    between = float(examples["get_forecast"][0] @ examples["get_forecast"][1])
    offset = VIEW_DISCOUNT * max(
        0.0, float(np.median([between - float(e @ forecast) for e in examples["get_forecast"]]))
    )
    assert offset > 0.05
    eligible = [t for t in router.catalog if rules is None or rules.violation(t) is None]
    vectors = router.index.vectors.vectors(np.asarray([router.catalog.position(t.name) for t in eligible]))
    views = np.asarray(
        [max(float(v @ query), float((examples[t.name] @ query).max()) - offset) if t.name in examples
         else float(v @ query) for t, v in zip(eligible, vectors, strict=True)]
    )  # fmt: skip
    expected = {t.name: (score - views.mean()) / views.std() for t, score in zip(eligible, views, strict=True)}
    assert {m.name for m in result.matches} == set(expected)
    for match in result.matches:
        assert match.dense_part == pytest.approx(expected[match.name], abs=1e-4)


WEATHER_REQUESTS = [f"what is the weather like in {city} today, please tell me" for city in ("oslo", "paris", "lima")]
FORECAST_REQUEST = "what is the weather like in rome over the next days? please tell me the forecast"


@pytest.mark.parametrize("ensemble", [False, True], ids=["one model", "ensemble"])
@pytest.mark.parametrize("discount", [0.0, usage.VIEW_DISCOUNT])
def test_a_tool_with_feedback_does_not_take_its_unfed_neighbours_requests(
    tiny_catalog: Catalog, discount: float, ensemble: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests resemble each other more than they resemble tool texts: a tool whose users'
    requests are known must not win a neighbour's request on that resemblance alone, and must
    still win a request like its own. An ensemble's models each have their own offset."""
    from toolsift.embeddings.ensemble import EnsembleEmbedder

    monkeypatch.setattr(usage, "VIEW_DISCOUNT", discount)
    parts = [HashingEmbedder(64), HashingEmbedder(48)]
    router = Router.build(tiny_catalog, EnsembleEmbedder(parts) if ensemble else parts[0])
    assert top(router, FORECAST_REQUEST) == "get_forecast"
    router.learn([Feedback(text, "get_weather", contributor=text) for text in WEATHER_REQUESTS])
    views = router.views("")
    segments = getattr(router.embedder, "segments", [(0, 64)])
    assert views is not None and len(views.offsets) == len(segments)
    for start, end, offset in views.offsets:
        assert offset == pytest.approx(discount * _median_gap(router, start, end), abs=1e-5)
    assert top(router, "what is the weather like in berlin today? please tell me") == "get_weather"
    if discount:
        assert top(router, FORECAST_REQUEST) == "get_forecast"
    else:  # the views at their cosine: the neighbour's request goes to the tool with feedback
        assert top(router, FORECAST_REQUEST) == "get_weather"


def _median_gap(router: Router, start: int, end: int) -> float:
    requests = router.embedder.embed_queries(WEATHER_REQUESTS)[:, start:end]
    text = router.index.vectors.vectors(np.asarray([router.catalog.position("get_weather")]))[0, start:end]
    similar = requests @ requests.T
    np.fill_diagonal(similar, -np.inf)
    return float(np.median(similar.max(axis=1) - requests @ text))


def test_view_offsets_per_segment_from_tools_with_two_requests_or_more() -> None:
    """Tool 0's two requests are at cosine 0.8 from each other; its text at 0 and 0.6 from them
    in the first segment (gaps 0.8 and 0.2: median 0.5), at 1 and 0.8 in the second (gaps -0.2 and
    0: floored at 0). Tool 1 has one request: nothing to compare it with, it counts in neither."""
    requests = np.asarray([[1, 0, 1, 0], [0.8, 0.6, 0.8, 0.6]], dtype=np.float32)
    texts = {0: np.asarray([0, 1, 1, 0], dtype=np.float32), 1: np.asarray([0, 1, 0, 1], dtype=np.float32)}
    found = usage.view_offsets({0: requests, 1: requests[:1]}, texts, [(0, 2), (2, 4)])
    assert found[0][:2] == (0, 2) and found[0][2] == pytest.approx(usage.VIEW_DISCOUNT * 0.5, abs=1e-6)
    assert found[1] == (2, 4, 0.0)
    assert usage.view_offsets({1: requests[:1]}, texts, [(0, 4)]) == [(0, 4, 0.0)]


def test_a_floor_is_the_least_offset_of_every_segment() -> None:
    """A tuned model's floor (measured on requests it never trained on) holds where its own
    training requests measure less, and where no tool has two requests to measure with."""
    requests = np.asarray([[1, 0, 1, 0], [0.8, 0.6, 0.8, 0.6]], dtype=np.float32)
    texts = {0: np.asarray([0, 1, 1, 0], dtype=np.float32)}
    found = usage.view_offsets({0: requests}, texts, [(0, 2), (2, 4)], floor=0.1)
    assert found == [(0, 2, pytest.approx(usage.VIEW_DISCOUNT * 0.5)), (2, 4, 0.1)]
    assert usage.view_offsets({0: requests[:1]}, texts, [(0, 4)], floor=0.1) == [(0, 4, 0.1)]


def test_learning_refuses_unknown_tools_and_bad_queries(tiny_router: Router) -> None:
    with pytest.raises(UnknownTool, match="tool: no tool named 'send_emial'.*Did you mean 'send_email'"):
        tiny_router.learn(Feedback("mail bob", "send_emial"))
    with pytest.raises(Exception, match="query"):
        tiny_router.learn(Feedback("   ", "send_email"))
    assert tiny_router.usage is None or not tiny_router.usage.pools()  # nothing half-recorded


# -- the book's caps ---------------------------------------------------------------------------


def test_one_contributor_cannot_dominate_a_tool() -> None:
    book = UsageBook(FeedbackLimits(per_tool=10, per_contributor=3, per_pool=1000))
    for number in range(8):
        book.add(Feedback(f"spam request {number}", "send_email", contributor="session:spammer"))
    for number in range(4):
        book.add(Feedback(f"real request {number}", "send_email", contributor=f"session:user{number}"))
    kept = book.summary("")["send_email"]
    assert [text for text in kept if text.startswith("spam")] == ["spam request 5", "spam request 6", "spam request 7"]
    assert len(kept) == 7


def test_the_book_keeps_the_latest_within_its_limits() -> None:
    book = UsageBook(FeedbackLimits(per_tool=3, per_contributor=100, per_pool=5))
    for number in range(5):
        book.add(Feedback(f"weather {number}", "get_weather", contributor=f"c{number}"))
    assert book.summary("")["get_weather"] == ["weather 2", "weather 3", "weather 4"]
    book.add(Feedback("weather 2", "get_weather"))  # known again: now the newest, not a duplicate
    assert book.summary("")["get_weather"] == ["weather 3", "weather 4", "weather 2"]
    for number in range(3):
        book.add(Feedback(f"mail {number}", "send_email", contributor=f"m{number}"))
    assert len(book.records()) == 5  # per pool: the oldest across tools went first
    assert book.summary("")["get_weather"] == ["weather 4", "weather 2"]
    assert book.reset("", "send_email") == 3 and list(book.summary("")) == ["get_weather"]


# -- the log -----------------------------------------------------------------------------------


def test_the_log_is_followed_from_where_a_reader_stopped(tmp_path: Path) -> None:
    path = tmp_path / "index.feedback.jsonl"
    writer, reader = FeedbackLog(path), FeedbackLog(path)
    writer.append([{"op": "add", "query": "a", "tool": "t"}])
    assert reader.read_new() == (False, [{"op": "add", "query": "a", "tool": "t"}])
    with open(path, "ab") as handle:
        handle.write(b'{"op": "add", "query": "half a li')  # a crash mid-line
    assert reader.read_new() == (False, [])
    writer.append([{"op": "add", "query": "b", "tool": "t"}, {"op": "reset", "pool": None, "tool": None}])
    restarted, records = reader.read_new()  # the cut line is skipped (logged), the rest is read
    assert not restarted and [r["op"] for r in records] == ["add", "reset"] and records[0]["query"] == "b"
    with writer.locked():
        writer.compact([{"op": "add", "query": "c", "tool": "t"}])
    assert reader.read_new() == (True, [{"op": "add", "query": "c", "tool": "t"}])


# -- HTTP --------------------------------------------------------------------------------------


@pytest.fixture
def client(tiny_router: Router) -> Iterator[TestClient]:
    settings = Settings(admin_token=ADMIN_TOKEN, feedback_token=FEEDBACK_TOKEN)
    with TestClient(create_app(tiny_router, settings=settings)) as test_client:
        yield test_client


def routed(client: TestClient, query: str, headers: dict[str, str] | None = None) -> list[str]:
    response = client.post("/route", json={"query": query, "k": 3}, headers=headers or {})
    assert response.status_code == 200, response.text
    return [match["name"] for match in response.json()["matches"]]


def test_feedback_over_http_changes_the_next_route(client: TestClient) -> None:
    assert routed(client, ODD_REQUEST)[0] != "send_email"
    body = {"query": ODD_REQUEST, "tool": "send_email", "session_id": "s-1"}
    response = client.post("/feedback", json=body, headers=AGENT)
    assert response.status_code == 200 and response.json() == {"accepted": True, "tool": "send_email", "examples": 1}
    assert routed(client, ODD_REQUEST)[0] == "send_email"
    shown = client.get("/admin/feedback", headers=ADMIN).json()
    assert shown["retained"] == 1
    assert shown["tools"] == [{"tool": "send_email", "requests": [ODD_REQUEST], "contributors": ["token:feedback"]}]
    assert client.delete("/admin/feedback", headers=ADMIN).json() == {"forgotten": 1}
    assert routed(client, ODD_REQUEST)[0] != "send_email"
    assert "toolsift_feedback_total 1.0" in client.get("/metrics").text


@pytest.mark.parametrize(
    ("body", "status", "where"),
    [
        ({"query": "mail bob", "tool": "send_emial"}, 400, "Did you mean 'send_email'"),
        ({"query": "   ", "tool": "send_email"}, 422, "query"),
        ({"query": "mail bob"}, 422, "tool"),
        ({"query": "mail bob", "tool": "send_email", "session_id": "bad id!"}, 422, "session_id"),
        ({"query": "x" * 9000, "tool": "send_email"}, 422, "query"),
    ],
)
def test_bad_feedback_is_refused_and_says_why(
    client: TestClient, body: dict[str, object], status: int, where: str
) -> None:
    response = client.post("/feedback", json=body, headers=AGENT)
    assert response.status_code == status and where in response.text
    assert client.get("/admin/feedback", headers=ADMIN).json()["retained"] == 0


def test_a_credential_is_capped_per_tool_over_http(client: TestClient) -> None:
    for number in range(20):  # a new session_id each time changes nothing: the credential is the contributor
        body = {"query": f"request number {number}", "tool": "get_weather", "session_id": f"session-{number}"}
        assert client.post("/feedback", json=body, headers=AGENT).status_code == 200
    kept = client.get("/admin/feedback", headers=ADMIN).json()["tools"][0]["requests"]
    assert len(kept) == 16 and kept[-1] == "request number 19"


def test_feedback_poisoning_from_one_client_does_not_steer_routing(tiny_router: Router) -> None:
    """The audit's attack: a stranger sends feedback making a destructive tool the answer to an
    ordinary request, rotating session ids and X-Forwarded-For to dodge the per-contributor cap."""
    attack = {"query": ODD_REQUEST, "tool": "delete_file"} if "delete_file" in tiny_router.catalog else None
    attack = attack or {"query": ODD_REQUEST, "tool": "send_email"}
    # an open service without credentials: feedback is off, and says how to turn it on
    with TestClient(create_app(tiny_router, settings=Settings())) as client:
        refused = client.post("/feedback", json=attack)
        assert refused.status_code == 403 and "TOOLSIFT_FEEDBACK_TOKEN" in refused.json()["error"]["message"]
    # credentials configured: none sent, or a wrong one, is refused
    settings = Settings(admin_token=ADMIN_TOKEN, feedback_token=FEEDBACK_TOKEN)
    with TestClient(create_app(tiny_router, settings=settings)) as client:
        for headers in ({}, {"Authorization": "Bearer not-the-token-at-all"}):
            assert client.post("/feedback", json=attack, headers=headers).status_code == 403
        assert routed(client, ODD_REQUEST)[0] != attack["tool"]
    # a trusted network (TOOLSIFT_FEEDBACK=open): one address is one contributor however it dresses up,
    # and a tool's feedback from addresses ranks only once three of them agree
    settings = Settings(admin_token=ADMIN_TOKEN, feedback="open", feedback_rate=1000)
    with TestClient(create_app(tiny_router, settings=settings)) as client:
        before = routed(client, ODD_REQUEST)
        for number in range(28):
            headers = {"X-Forwarded-For": f"10.0.0.{number}"}
            body = {**attack, "query": f"{ODD_REQUEST} {number}", "session_id": f"rotated-{number}"}
            assert client.post("/feedback", json=body, headers=headers).status_code == 200
        assert routed(client, ODD_REQUEST) == before  # no steering
        shown = client.get("/admin/feedback", headers=ADMIN).json()["tools"][0]
        assert set(shown["contributors"]) == {"client:testclient"} and len(shown["requests"]) == 16
        # the admin revokes that contributor
        revoked = client.delete("/admin/feedback", params={"contributor": "client:testclient"}, headers=ADMIN)
        assert (
            revoked.json() == {"forgotten": 16} and client.get("/admin/feedback", headers=ADMIN).json()["retained"] == 0
        )


def test_feedback_is_rate_limited_per_credential_and_raw_requests_stay_private(tiny_router: Router) -> None:
    settings = Settings(admin_token=ADMIN_TOKEN, feedback_token=FEEDBACK_TOKEN, feedback_rate=5)
    with TestClient(create_app(tiny_router, settings=settings)) as client:
        codes = [
            client.post("/feedback", json={"query": f"mail {n}", "tool": "send_email"}, headers=AGENT).status_code
            for n in range(7)
        ]
        assert codes == [200] * 5 + [429] * 2
        assert (
            client.post("/feedback", json={"query": "mail 9", "tool": "send_email"}, headers=ADMIN).status_code == 200
        )
        page = client.get("/tools/send_email").json()["feedback"]
        assert page["requests"] == 6 and page["recent"] == []  # a stranger sees a count, not others' words
        assert "mail 9" in client.get("/tools/send_email", headers=ADMIN).json()["feedback"]["recent"]


def test_quorum_of_untrusted_contributors() -> None:
    from toolsift.router.usage import Feedback, FeedbackLimits, UsageBook

    book = UsageBook(FeedbackLimits(quorum=3))
    book.add(Feedback("first", "t", contributor="client:1"))
    book.add(Feedback("second", "t", contributor="client:2"))
    book.add(Feedback("vouched", "u", contributor="token:feedback"))
    assert book.examples("") == [("u", "vouched")]  # two addresses do not make a quorum
    book.add(Feedback("third", "t", contributor="client:3"))
    assert sorted(book.examples("")) == [("t", "first"), ("t", "second"), ("t", "third"), ("u", "vouched")]


def test_one_tenants_feedback_never_changes_anothers_results(tiny_router: Router, tmp_path: Path) -> None:
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text(
        "tenants:\n  acme:\n    key: acme-key-0123456789abcdef\n    tags: [email, calendar, weather]\n"
        "  globex:\n    key: globex-key-0123456789abcdef\n    tags: [email, weather, finance]\n"
    )
    acme, globex = {"X-API-Key": "acme-key-0123456789abcdef"}, {"X-API-Key": "globex-key-0123456789abcdef"}
    settings = Settings(tenants=tenants, admin_token=ADMIN_TOKEN)
    with TestClient(create_app(tiny_router, settings=settings)) as client:
        before = {query: routed(client, query, globex) for query in (ODD_REQUEST, "rain", "convert 10 usd")}
        assert (
            client.post("/feedback", json={"query": ODD_REQUEST, "tool": "send_email"}, headers=acme).status_code == 200
        )
        assert client.post("/feedback", json={"query": "rain", "tool": "get_forecast"}, headers=acme).status_code == 200
        assert routed(client, ODD_REQUEST, acme)[0] == "send_email"
        assert {query: routed(client, query, globex) for query in before} == before
        hidden = client.post("/feedback", json={"query": "x", "tool": "create_event"}, headers=globex)
        assert hidden.status_code == 400 and "create_event" not in hidden.json()["error"]["message"].split("Did")[1:]
        assert client.get("/admin/feedback", params={"tenant": "globex"}, headers=ADMIN).json()["retained"] == 0
        assert client.get("/admin/feedback", params={"tenant": "acme"}, headers=ADMIN).json()["retained"] == 2


@pytest.mark.slow
def test_feedback_survives_a_restart_and_reaches_every_worker(tmp_path: Path, tiny_router: Router) -> None:
    """`toolsift serve --workers 2`: 24 feedback requests at once, all acknowledged and all kept;
    every worker routes with them; after a restart (and a rebuild of the folder) they are still there."""
    folder = tiny_router.save(tmp_path / "index")
    environment = {
        **os.environ, "TOOLSIFT_MODEL": "hashing-64", "TOOLSIFT_ADMIN_TOKEN": ADMIN_TOKEN, "TOOLSIFT_CACHE_DIR": "off",
        "TOOLSIFT_FEEDBACK_TOKEN": FEEDBACK_TOKEN,
    }  # fmt: skip
    queries = [f"{ODD_REQUEST} number {n}" for n in range(24)]

    def serve() -> tuple[subprocess.Popen[bytes], str]:
        port = free_port()
        command = [sys.executable, "-m", "toolsift", "serve", "--index", str(folder), "--port", str(port)]
        with open(tmp_path / "serve.log", "ab") as log:
            process = subprocess.Popen([*command, "--workers", "2"], env=environment, stdout=log, stderr=log)
        wait_until_serving(f"http://127.0.0.1:{port}", process)
        return process, f"http://127.0.0.1:{port}"

    def every_worker_learned(url: str) -> bool:
        body = {"query": queries[0], "k": 3}
        return all(
            httpx.post(url + "/route", json=body).json()["matches"][0]["name"] == "send_email" for _ in range(16)
        )

    process, url = serve()
    try:
        assert not every_worker_learned(url)

        def send(query: str) -> httpx.Response:
            body = {"query": query, "tool": "send_email", "session_id": "s" + query.split()[-1]}
            credential = AGENT if int(query.split()[-1]) % 2 else ADMIN  # two contributors: 12 each, under the cap
            return httpx.post(url + "/feedback", json=body, headers=credential, timeout=60)

        with ThreadPoolExecutor(max_workers=12) as pool:
            assert [r.status_code for r in pool.map(send, queries)] == [200] * 24
        assert every_worker_learned(url)
        assert httpx.get(url + "/admin/feedback", headers=ADMIN).json()["retained"] == 24
    finally:
        process.terminate()
        process.wait(timeout=60)
    lines = feedback_log_path(folder).read_bytes().splitlines()
    assert sorted(orjson.loads(line)["query"] for line in lines) == sorted(queries)
    (tmp_path / "catalog.json").write_text(json.dumps(TINY_TOOLS))
    rebuild = ["build", str(tmp_path / "catalog.json"), "--out", str(folder)]
    result = CliRunner().invoke(main, rebuild, env={"TOOLSIFT_MODEL": "hashing-64", "TOOLSIFT_CACHE_DIR": "off"})
    assert result.exit_code == 0, result.output
    process, url = serve()
    try:
        assert every_worker_learned(url)
        assert httpx.get(url + "/admin/feedback", headers=ADMIN).json()["retained"] == 24
        assert httpx.delete(url + "/admin/feedback", headers=ADMIN).json() == {"forgotten": 24}
        body = {"query": queries[0], "k": 3}
        firsts = {httpx.post(url + "/route", json=body).json()["matches"][0]["name"] for _ in range(16)}
        assert "send_email" not in firsts  # the reset reached both workers (through the log)
    finally:
        process.terminate()
        process.wait(timeout=60)


# -- the command line and the client -------------------------------------------------------------


def test_feedback_import_checks_every_line_then_keeps_them(tmp_path: Path, tiny_router: Router) -> None:
    folder = tiny_router.save(tmp_path / "index")
    log = tmp_path / "calls.jsonl"
    good = [{"query": ODD_REQUEST, "tool": "send_email", "session_id": "a"}, {"query": "rain?", "tool": "get_forecast"}]
    log.write_text("\n".join(json.dumps(line) for line in [*good, {"query": "x", "tool": "send_emial"}]))
    runner = CliRunner()
    refused = runner.invoke(main, ["feedback", "import", str(log), "--index", str(folder)])
    assert refused.exit_code == 1 and "calls.jsonl line 3: no tool named 'send_emial'" in refused.output
    assert not feedback_log_path(folder).exists()  # one bad line imports nothing
    log.write_text("\n".join(json.dumps(line) for line in good))
    assert runner.invoke(main, ["feedback", "import", str(log), "--index", str(folder)]).exit_code == 0
    shown = runner.invoke(main, ["feedback", "show", "--index", str(folder), "--json"])
    assert json.loads(shown.output)["tools"] == {"send_email": [ODD_REQUEST], "get_forecast": ["rain?"]}
    learned = Router.load(folder, tiny_router.embedder)
    with TestClient(create_app(settings=Settings(index_path=folder, admin_token=ADMIN_TOKEN))) as client:
        assert routed(client, ODD_REQUEST)[0] == "send_email"  # the service reads the log at start
    assert top(learned, ODD_REQUEST) != "send_email"  # a bare library router learns only what it is told
    reset = runner.invoke(main, ["feedback", "reset", "--index", str(folder), "--tool", "send_email"])
    assert reset.exit_code == 0 and "forgot 1 requests" in reset.output


def test_the_client_sends_feedback(tiny_router: Router) -> None:
    from toolsift.client import Client

    app = create_app(tiny_router, settings=Settings(admin_token=ADMIN_TOKEN, feedback_token=FEEDBACK_TOKEN))
    with TestClient(app) as test_client:

        def through_app(request: httpx.Request) -> httpx.Response:
            answer = test_client.request(
                request.method, request.url.path, content=request.content, headers=request.headers
            )
            return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

        client = Client("http://testserver", api_key=FEEDBACK_TOKEN, transport=httpx.MockTransport(through_app))
        accepted = client.feedback(ODD_REQUEST, "send_email", session_id="s-9")
        assert accepted.tool == "send_email" and accepted.examples == 1
        assert client.route(ODD_REQUEST, k=3).matches[0].name == "send_email"
        with pytest.raises(UnknownTool):
            client.feedback("mail", "nope")


def test_examples_come_from_every_catalog_format() -> None:
    catalog = parse_catalog(
        [
            {"name": "a", "description": "A.", "examples": [" hi there ", "hi there"]},
            {"type": "function", "function": {"name": "b", "description": "B.", "x-examples": ["mail bob"]}},
            {"name": "c", "description": "C.", "input_schema": {}, "x-examples": ["rain?"]},
            {"name": "d", "description": "D.", "inputSchema": {}, "_meta": {"toolsift/examples": ["sum it"]}},
        ]
    )
    assert [tool.examples for tool in catalog] == [("hi there",), ("mail bob",), ("rain?",), ("sum it",)]
    with pytest.raises(CatalogError, match="field 'examples'.*non-empty"):
        parse_catalog([{"name": "a", "description": "A.", "examples": ["  "]}])


def test_lint_notes_tools_without_examples(tiny_catalog: Catalog) -> None:
    from toolsift.curation import lint_catalog

    found = [f for f in lint_catalog(tiny_catalog).findings if f.code == "no-examples"]
    assert len(found) == 1 and found[0].severity == "info"
    assert found[0].message.startswith(f"{len(tiny_catalog)} of {len(tiny_catalog)} tools have no example requests")
    tools = [{**tool, "examples": ["something a user asks"]} for tool in TINY_TOOLS]
    assert not [f for f in lint_catalog(parse_catalog(tools)).findings if f.code == "no-examples"]


# -- the benchmark protocol --------------------------------------------------------------------

ODD_REQUESTS = {
    "ship the quarterly memo over to bob": "send_email",
    "is my umbrella needed on saturday": "get_forecast",
    "put lunch with ana on thursday": "create_event",
    "what is on my plate next week": "list_events",
    "how many yen is 40 pounds": "convert_currency",
    "get rid of old_report.pdf": "delete_file",
    "did the bank reply about my loan": "search_emails",
    "do I need a coat outside now": "get_weather",
}


def test_the_feedback_bench_feeds_a_split_and_scores_the_rest(tmp_path: Path) -> None:
    """Each odd request appears twice: once fed, the other copy is answered by what was learned.
    The JSON's paired differences are the differences of the means, and RESULTS.md renders it."""
    (tmp_path / "tools.jsonl").write_text("\n".join(json.dumps(tool) for tool in TINY_TOOLS))
    queries = [
        {"id": f"{copy}-{n}", "query": text, "relevant": [tool]}
        for copy in range(2)
        for n, (text, tool) in enumerate(ODD_REQUESTS.items())
    ]
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(query) for query in queries))
    out = tmp_path / "feedback.json"
    arguments = ["bench", "--dataset", str(tmp_path), "--model", "hashing-64", "--k", "1,5"]
    result = CliRunner().invoke(main, [*arguments, "--feedback-split", "0,0.5", "--json", str(out), "--no-cache"])
    assert result.exit_code == 0, result.output
    points = json.loads(out.read_text())["points"]
    assert [(p["fraction"], p["fed"], p["scored"]) for p in points] == [(0.0, 0, 16), (0.5, 8, 8)]
    assert points[0]["recall"]["toolsift+feedback"] == points[0]["recall"]["toolsift"]  # nothing fed
    half = points[1]
    assert half["recall"]["toolsift+feedback"]["1"] > half["recall"]["toolsift"]["1"]
    for variant in ("toolsift+feedback", "toolsift+examples"):
        difference = half["recall"][variant]["1"] - half["recall"]["toolsift"]["1"]
        assert half["difference"][variant]["1"][0] == pytest.approx(difference, abs=1e-3)
    assert set(half["route_p50_ms"]) == {"embed", "rank", "rank_feedback", "route", "route_feedback"}
    assert "| 0.5 | 8 | 8 |" in result.output

    results_md = benchmark_script("results_md.py")
    section = results_md._other_section(str(out))
    assert section.startswith("## Learning from use") and "| 0.5 | 8 | 8 |" in section


def test_a_tool_with_many_requests_is_ranked_on_a_bounded_summary(tiny_router: Router) -> None:
    from toolsift.router.usage import VIEWS_PER_TOOL, summarise

    requests = [f"ship memo number {n} over to bob in accounting" for n in range(40)]
    tiny_router.learn([Feedback(text, "send_email", contributor=f"c{n}") for n, text in enumerate(requests)])
    views = tiny_router.views("")
    assert views is not None and len(views) == VIEWS_PER_TOOL  # 40 requests, 16 views
    assert top(tiny_router, "ship memo number 7 over to bob in accounting") == "send_email"
    vectors = tiny_router.embedder.embed_queries(requests)
    once, again = summarise(vectors), summarise(vectors)
    assert np.array_equal(once, again) and np.allclose(np.linalg.norm(once, axis=1), 1.0, atol=1e-5)
    assert summarise(vectors[:5]) is not None and len(summarise(vectors[:5])) == 5  # few: kept as they are


@pytest.mark.parametrize("delivery", ["subset", "allowed_tools", "tool_reference", "tool_search_output"])
@pytest.mark.parametrize("session", [False, True], ids=["no-session", "session"])
def test_learned_tools_still_obey_the_requests_rules(tiny_router: Router, delivery: str, session: bool) -> None:
    """Feedback lifts send_email and delete_file for a request; a request whose rules forbid them
    (tags, access) never gets them back, in any delivery mode, with or without a session."""
    tiny_router.learn([Feedback(ODD_REQUEST, "send_email"), Feedback(ODD_REQUEST + " now", "delete_file")])
    with TestClient(create_app(tiny_router)) as client:
        forbidding: list[tuple[dict[str, object], list[str]]] = [
            ({"tags": {"exclude": ["email"]}}, ["send_email"]),
            ({"tags": ["weather", "calendar"]}, ["send_email", "delete_file"]),
            ({"access": "non_destructive"}, ["delete_file"]),
        ]
        for rules, forbidden in forbidding:
            body: dict[str, object] = {"query": ODD_REQUEST, "k": 3, "delivery": delivery, **rules}
            body["format"] = "openai" if delivery == "allowed_tools" else "anthropic"
            if delivery == "tool_search_output":
                body["format"], body["call_id"] = "responses", "call_1"
            if session:
                body["session_id"] = f"s-{delivery}"
            answer = client.post("/route", json=body)
            assert answer.status_code == 200, answer.text
            reply = answer.json()
            delivered = json.dumps([reply["tools"], reply["matches"], reply.get("content"), reply.get("output_item")])
            assert not [name for name in forbidden if name in delivered], (rules, delivery, delivered)
        assert routed(client, ODD_REQUEST)[0] == "send_email"  # without the rules, the feedback shows


def test_memory_follows_the_retained_feedback_not_every_request_ever_sent(tiny_router: Router) -> None:
    """Vectors of requests the retention caps evicted (or a reset forgot) are freed."""
    from toolsift.router.usage import Feedback

    for start in range(0, 3000, 500):
        tiny_router.learn(
            [
                Feedback(f"please forecast the weather, request {i}", "get_forecast", "", f"user-{i}")
                for i in range(start, start + 500)
            ]
        )
        tiny_router.route("weather", 2)  # ranking builds the views (and embeds the new requests)
    assert tiny_router.usage is not None
    retained = len(tiny_router.usage.examples(""))
    assert retained == 256 and len(tiny_router._example_vectors) <= 2 * retained + 256
    with_examples = {tool_id for tool_id, _ in tiny_router._examples}
    assert len(tiny_router._summaries) <= len(with_examples) + 1  # one per tool with requests, not per change
    tiny_router.usage.reset()
    tiny_router.route("weather", 2)
    assert len(tiny_router._example_vectors) <= 256
    assert len(tiny_router._summaries) <= len(with_examples) + 1
