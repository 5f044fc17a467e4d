"""Several replicas, one service: a real redis-server and several `toolsift serve` processes on
loopback. Sessions continue on any replica exactly as in one process, a replica can die
mid-session, admin edits through both replicas lose nothing, and Redis restarting under load
costs no 5xx."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from toolsift import Router
from toolsift.embeddings import HashingEmbedder
from toolsift.errors import SharedStoreUnavailable
from toolsift.index import ToolIndex
from toolsift.service import create_app
from toolsift.service.replicas import RedisSessionStore, Replicas
from toolsift.settings import Settings

from conftest import free_port, wait_until_serving

pytestmark = pytest.mark.slow

ADMIN_TOKEN = "admin-token-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
CONVERSATION = [
    "what's the weather in Paris",
    "and the forecast for the weekend",
    "email the forecast to Ana",
    "put a picnic in my calendar on Saturday",
    "what else is on my calendar this week",
    "convert 40 euros to dollars",
    "search my mail for the picnic invite",
    "delete the old invite file",
    "weather in Lyon tomorrow",
    "send Ana the list of events",
    "how much is 100 yen in euros",
    "create a meeting with Bob",
]


class RedisServer:
    """redis-server on a loopback port, persisting every write (a restart keeps the sessions)."""

    def __init__(self, folder: Path) -> None:
        if shutil.which("redis-server") is None:
            pytest.fail("redis-server is not installed: `make services` installs it (Debian's redis-server)")
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
            "--appendonly", "yes", "--appendfsync", "always", "--save", "",
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                Replicas(self.url).client.ping()
                return
            except Exception:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=20)
            self.process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def index_folder(tmp_path: Path, tiny_router: Router) -> Path:
    return tiny_router.save(tmp_path / "index")


class Replica:
    def __init__(self, folder: Path, redis_url: str, log: Path, **settings: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.redis_url = redis_url
        environment = {
            **os.environ, "TOOLSIFT_MODEL": "hashing-64", "TOOLSIFT_CACHE_DIR": "off", "TOOLSIFT_REDIS_URL": redis_url,
            "TOOLSIFT_ADMIN_TOKEN": ADMIN_TOKEN, "TOOLSIFT_RELOAD_INTERVAL": "3600",
            **{"TOOLSIFT_" + name.upper(): value for name, value in settings.items()},
        }  # fmt: skip
        command = [sys.executable, "-m", "toolsift", "serve", "--index", str(folder), "--port", str(self.port)]
        with open(log, "ab") as handle:
            self.process = subprocess.Popen(command, env=environment, stdout=handle, stderr=handle)
        wait_until_serving(self.url, self.process)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)


@pytest.fixture
def replicas(index_folder: Path, redis_server: RedisServer, tmp_path: Path) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    try:
        for _ in range(2):
            started.append(Replica(index_folder, redis_server.url, tmp_path / "serve.log"))
        yield started
    finally:
        for replica in started:
            replica.stop()


def turn_of(body: dict[str, Any]) -> tuple[Any, ...]:
    session = body["session"]
    return (
        [tool["name"] for tool in body["tools"]],
        session["turn"],
        session["appended"],
        session["prefix_changed"],
        session.get("reset"),
    )


def reference_turns(index_folder: Path, queries: list[str]) -> list[tuple[Any, ...]]:
    """What one process with in-memory sessions answers for the conversation."""
    router = Router.load(index_folder, HashingEmbedder(64))
    with TestClient(create_app(router, settings=Settings(session_cap=5))) as client:
        return [
            turn_of(client.post("/route", json={"query": q, "k": 3, "session_id": "conv-1"}).json()) for q in queries
        ]


def test_a_session_on_alternating_replicas_is_what_one_process_gives(
    index_folder: Path, redis_server: RedisServer, tmp_path: Path
) -> None:
    """Turns alternate between two replicas; then one replica is killed mid-session and the
    other carries on: every turn equals the single-process reference (tools, order, turn number,
    appended, prefix stability, resets at the cap of 5)."""
    expected = reference_turns(index_folder, CONVERSATION)
    log = tmp_path / "serve.log"
    first = Replica(index_folder, redis_server.url, log, session_cap="5")
    second = Replica(index_folder, redis_server.url, log, session_cap="5")
    try:
        seen = []
        for number, query in enumerate(CONVERSATION):
            if number == 8:
                first.kill()  # mid-session: the rest goes to the survivor
            target = second if number >= 8 or number % 2 else first
            response = httpx.post(target.url + "/route", json={"query": query, "k": 3, "session_id": "conv-1"})
            assert response.status_code == 200, response.text
            seen.append(turn_of(response.json()))
        assert seen == expected
        assert any(turn[4] for turn in expected)  # the conversation reaches the cap: a reset is compared too
    finally:
        first.stop()
        second.stop()


def test_concurrent_turns_on_one_session_lose_none(redis_server: RedisServer, tiny_router: Router) -> None:
    store = RedisSessionStore(Replicas(redis_server.url, "test"), cap=64, max_sessions=100, ttl_seconds=60)
    tools = list(tiny_router.catalog)

    def advance(number: int) -> int:
        return store.advance("busy", [tools[number % len(tools)]], tiny_router.catalog).turn

    with ThreadPoolExecutor(max_workers=8) as pool:
        turns = sorted(pool.map(advance, range(80)))
    assert turns == list(range(1, 81))  # every turn counted once: none lost, none repeated
    assert set(store.names("busy")) == {tool.name for tool in tools}


def test_sessions_are_bounded_and_expire_in_redis(redis_server: RedisServer, tiny_router: Router) -> None:
    store = RedisSessionStore(Replicas(redis_server.url, "bounded"), cap=64, max_sessions=3, ttl_seconds=1)
    tool = list(tiny_router.catalog)[:1]
    for number in range(5):
        store.advance(f"s{number}", tool, tiny_router.catalog)
    assert len(store) == 3 and store.names("s0") == () and store.names("s4") == ("send_email",)
    time.sleep(1.2)
    assert store.names("s4") == ()  # the key's TTL


def test_admin_edits_through_two_replicas_lose_nothing_and_converge(
    replicas: list[Replica], index_folder: Path
) -> None:
    """24 edits at once, spread over both replicas (whose folder polling is off: they learn of
    each other's edits from the announcements alone)."""
    names = [f"tool_{number}" for number in range(24)]

    def add(number: int) -> int:
        tool = {"name": names[number], "description": f"Does task {number} for the tests.", "tags": ["added"]}
        target = replicas[number % 2]
        return httpx.post(target.url + "/admin/tools", json={"tools": [tool]}, headers=ADMIN, timeout=120).status_code

    with ThreadPoolExecutor(max_workers=12) as pool:
        assert list(pool.map(add, range(24))) == [200] * 24
    saved = ToolIndex.load(index_folder).catalog
    assert set(names) <= set(saved.names)
    deadline = time.monotonic() + 30
    while {httpx.get(r.url + "/healthz").json()["catalog_fingerprint"] for r in replicas} != {saved.fingerprint}:
        assert time.monotonic() < deadline, "the replicas did not converge on the saved catalog"
        time.sleep(0.2)


def test_a_redis_restart_under_load_costs_no_5xx(replicas: list[Replica], redis_server: RedisServer) -> None:
    """Load on both replicas, with and without sessions; Redis stops and starts again (1 s down).
    Every request is answered 200; sessions carry on; afterwards sessions work as before."""
    statuses: list[tuple[bool, int]] = []
    stop = threading.Event()

    def load(worker: int) -> None:
        number = 0
        with httpx.Client(timeout=30) as client:
            while not stop.is_set():
                sessioned = number % 2 == 0
                body: dict[str, Any] = {"query": CONVERSATION[number % len(CONVERSATION)], "k": 3}
                if sessioned:
                    body["session_id"] = f"load-{worker}"
                response = client.post(replicas[(worker + number) % 2].url + "/route", json=body)
                statuses.append((sessioned, response.status_code))
                number += 1

    threads = [threading.Thread(target=load, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    redis_server.stop()
    time.sleep(1.0)
    redis_server.start()
    time.sleep(1.5)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert len(statuses) > 50
    assert {status for _, status in statuses} == {200}, sorted({s for _, s in statuses})
    response = httpx.post(replicas[0].url + "/route", json={"query": "weather", "k": 3, "session_id": "load-0"})
    assert response.status_code == 200 and response.json()["session"]["turn"] > 1  # the session survived


def test_redis_down_gives_503_to_session_requests_only(replicas: list[Replica], redis_server: RedisServer) -> None:
    redis_server.stop()
    plain = httpx.post(replicas[0].url + "/route", json={"query": "weather in Paris", "k": 3})
    assert plain.status_code == 200
    started = time.monotonic()
    sessioned = httpx.post(replicas[1].url + "/route", json={"query": "weather", "k": 3, "session_id": "x"}, timeout=30)
    assert sessioned.status_code == 503 and sessioned.headers["Retry-After"] == "2"
    assert sessioned.json()["error"]["type"] == SharedStoreUnavailable.__name__
    assert "send the request without session_id" in sessioned.json()["error"]["message"]
    assert time.monotonic() - started < 15  # retried for a bounded time, then answered
    assert "toolsift_shared_store_errors_total 1.0" in httpx.get(replicas[1].url + "/metrics").text
    redis_server.start()
    again = httpx.post(replicas[1].url + "/route", json={"query": "weather", "k": 3, "session_id": "x"}, timeout=30)
    assert again.status_code == 200


def test_feedback_is_shared_by_replicas(replicas: list[Replica]) -> None:
    odd = "ship the quarterly memo over to bob in accounting"
    body = {"query": odd, "tool": "send_email"}
    assert httpx.post(replicas[0].url + "/feedback", json=body, headers=ADMIN).status_code == 200
    routed = httpx.post(replicas[1].url + "/route", json={"query": odd, "k": 3}).json()
    assert routed["matches"][0]["name"] == "send_email"


def test_a_build_is_announced_to_the_replicas(replicas: list[Replica], index_folder: Path, tmp_path: Path) -> None:
    """Folder polling is off on the replicas: `toolsift build` with TOOLSIFT_REDIS_URL tells them."""
    from click.testing import CliRunner

    from toolsift.cli import main

    from conftest import TINY_TOOLS

    catalog = tmp_path / "more.json"
    catalog.write_text(json.dumps([*TINY_TOOLS, {"name": "brand_new", "description": "A tool added by a build."}]))
    environment = {
        "TOOLSIFT_MODEL": "hashing-64",
        "TOOLSIFT_CACHE_DIR": "off",
        "TOOLSIFT_REDIS_URL": replicas[0].redis_url,
    }
    result = CliRunner().invoke(main, ["build", str(catalog), "--out", str(index_folder), "-q"], env=environment)
    assert result.exit_code == 0, result.output
    deadline = time.monotonic() + 20
    while any(httpx.get(r.url + "/healthz").json()["tools"] != len(TINY_TOOLS) + 1 for r in replicas):
        assert time.monotonic() < deadline, "the replicas did not load the announced build"
        time.sleep(0.2)


def test_perf_replicas_measures_one_against_two(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from toolsift.cli import main

    out = tmp_path / "replicas.json"
    command = ["perf", "--replicas", "--sizes", "50", "--requests", "48", "--json", str(out)]
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert [row["replicas"] for row in document["rows"]] == [1, 2]
    assert all(row["requests"] == 48 and row["session_continuity"] == 1.0 for row in document["rows"])
    assert document["throughput_ratio"] == round(document["rows"][1]["per_s"] / document["rows"][0]["per_s"], 2)
    assert "session continuity" in result.output


def test_a_retried_turn_in_redis_is_the_same_turn(redis_server: RedisServer, tiny_router: Router) -> None:
    """A turn whose answer was lost and is sent again (same key) through any replica's store gets
    the same answer; the session does not advance twice."""
    first_store = RedisSessionStore(Replicas(redis_server.url, "retry"), cap=64, max_sessions=100, ttl_seconds=60)
    other_store = RedisSessionStore(Replicas(redis_server.url, "retry"), cap=64, max_sessions=100, ttl_seconds=60)
    tools = list(tiny_router.catalog)
    first = first_store.advance("s", tools[:2], tiny_router.catalog, turn_key="k1")
    again = other_store.advance("s", tools[:2], tiny_router.catalog, turn_key="k1")
    assert again == first and first.turn == 1 and first.appended == tuple(t.name for t in tools[:2])
    second = other_store.advance("s", tools[2:3], tiny_router.catalog, turn_key="k2")
    assert second.turn == 2 and second.appended == (tools[2].name,)
