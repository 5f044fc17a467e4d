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
import redis
from fastapi.testclient import TestClient

from toolsift import Router
from toolsift.embeddings import HashingEmbedder
from toolsift.errors import IndexBusy, SharedStoreUnavailable
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
            "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--enable-debug-command", "yes",
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
            self.process.send_signal(signal.SIGCONT)  # a test may have paused it
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


def test_a_lease_lapses_for_a_stalled_holder_and_fences_it_out(redis_server: RedisServer) -> None:
    """A holder whose lease lapsed while another replica took the lock cannot write (its check
    raises LockLost); one whose lease lapsed with no one taking it carries on; a retried
    acquisition with the same token is the same holding."""
    from toolsift.errors import LockLost
    from toolsift.service.leases import Lease

    def stall(lease: Lease) -> None:  # the renewing thread stops, as in a paused process
        lease._stop.set()
        assert lease._renewer is not None
        lease._renewer.join()

    host_a, host_b = Replicas(redis_server.url, "lease"), Replicas(redis_server.url, "lease")
    first = Lease(host_a, "index:/x", "catalog edits", seconds=0.3)
    first.acquire()
    retried = Lease(host_a, "index:/x", "catalog edits", seconds=0.3)
    retried.token = first.token
    retried.acquire(wait=0)  # the same token: the same holding, the same fence
    assert retried.fence == first.fence
    stall(retried)
    with pytest.raises(IndexBusy):
        Lease(host_b, "index:/x", "catalog edits", seconds=0.3).acquire(wait=0.1)  # held, renewed
    stall(first)
    time.sleep(0.5)  # lapsed; no one took it
    first.check()  # taken back: nothing was written by anyone meanwhile
    time.sleep(0.5)
    second = Lease(host_b, "index:/x", "catalog edits", seconds=0.3)
    second.acquire(wait=1)
    assert second.fence == first.fence + 1
    with pytest.raises(LockLost, match="another replica took it; nothing was written"):
        first.check()
    second.check()
    second.release()
    with pytest.raises(LockLost):
        first.check()  # released since, but the fence moved on: still not the first holder's
    renewed = Lease(host_a, "index:/y", "feedback", seconds=0.3)
    renewed.acquire()
    time.sleep(1.0)  # three leases: the renewing thread kept it
    renewed.check()
    renewed.release()
    assert host_a.client.get(renewed.key) is None


@pytest.fixture
def unlocked_replicas(index_folder: Path, redis_server: RedisServer, tmp_path: Path) -> Iterator[list[Replica]]:
    """Two replicas as on two hosts: the folder's file lock off, the Redis lease alone."""
    started: list[Replica] = []
    try:
        for _ in range(2):
            started.append(
                Replica(
                    index_folder,
                    redis_server.url,
                    tmp_path / "serve.log",
                    folder_locks="off",
                    max_request_bytes="8000000",
                )
            )
        yield started
    finally:
        for replica in started:
            replica.stop()


def add_tools(replica: Replica, prefix: str, count: int) -> httpx.Response:
    tools = [{"name": f"{prefix}_{n}", "description": f"Does job {n} of {prefix} for the tests."} for n in range(count)]
    return httpx.post(replica.url + "/admin/tools", json={"tools": tools}, headers=ADMIN, timeout=120)


def test_a_redis_stall_while_a_lock_is_taken_leaves_no_lock_behind(
    unlocked_replicas: list[Replica], redis_server: RedisServer, index_folder: Path
) -> None:
    """Redis stalls 2 s (DEBUG SLEEP) just as a replica takes the lock: the request's reply is
    lost, the retry finds the lock its own; the edit lands and the other replica edits at once."""
    sleeper = redis.Redis.from_url(redis_server.url, socket_timeout=10)
    for attempt in range(3):
        stall = threading.Thread(target=sleeper.execute_command, args=("DEBUG", "SLEEP", "2"))
        stall.start()
        time.sleep(0.05)
        response = add_tools(unlocked_replicas[0], f"stalled{attempt}", 1)
        stall.join()
        assert response.status_code == 200, response.text
        started = time.monotonic()
        other = add_tools(unlocked_replicas[1], f"after{attempt}", 1)
        assert other.status_code == 200 and time.monotonic() - started < 5, other.text
    saved = set(ToolIndex.load(index_folder).catalog.names)
    assert {f"{p}{n}_0" for p in ("stalled", "after") for n in range(3)} <= saved


def hold_then(replica: Replica, redis_server: RedisServer, index_folder: Path, signal_number: int) -> Any:
    """Send ``replica`` a large edit; once it holds the lock, send it ``signal_number``. Returns
    the edit's future."""
    client = redis.Redis.from_url(redis_server.url)
    key = f"toolsift:lock:index:{index_folder.parent.resolve() / index_folder.name}"
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(add_tools, replica, "held", 1000)
    deadline = time.monotonic() + 30
    while client.get(key) is None:
        assert time.monotonic() < deadline and not future.done(), (
            "the edit never took the lock",
            future.done() and future.result().text[:300],
        )
        time.sleep(0.001)
    replica.process.send_signal(signal_number)
    pool.shutdown(wait=False)
    return future


def test_a_stalled_holder_loses_the_lock_and_writes_nothing(
    unlocked_replicas: list[Replica], redis_server: RedisServer, index_folder: Path
) -> None:
    """The holder is paused (SIGSTOP) mid-edit: the other replica's edit waits one lease, then
    lands; the paused one, resumed, is fenced out (503 LockLost) and overwrites nothing."""
    from toolsift.service.leases import LEASE_SECONDS

    stalled = hold_then(unlocked_replicas[0], redis_server, index_folder, signal.SIGSTOP)
    started = time.monotonic()
    other = add_tools(unlocked_replicas[1], "other", 1)
    waited = time.monotonic() - started
    assert other.status_code == 200 and waited < LEASE_SECONDS + 5, (other.text, waited)
    unlocked_replicas[0].process.send_signal(signal.SIGCONT)
    response = stalled.result(timeout=120)
    assert response.status_code == 503 and response.json()["error"]["type"] == "LockLost", response.text
    saved = set(ToolIndex.load(index_folder).catalog.names)
    assert "other_0" in saved and "held_0" not in saved
    assert add_tools(unlocked_replicas[0], "later", 1).status_code == 200  # and it edits again
    assert {"other_0", "later_0"} <= set(ToolIndex.load(index_folder).catalog.names)


def test_a_holder_killed_mid_lock_frees_it_within_a_lease(
    unlocked_replicas: list[Replica], redis_server: RedisServer, index_folder: Path
) -> None:
    from toolsift.service.leases import LEASE_SECONDS

    killed = hold_then(unlocked_replicas[0], redis_server, index_folder, signal.SIGKILL)
    started = time.monotonic()
    other = add_tools(unlocked_replicas[1], "other", 1)
    assert other.status_code == 200 and time.monotonic() - started < LEASE_SECONDS + 5, other.text
    with pytest.raises(httpx.HTTPError):
        killed.result(timeout=60)
    saved = set(ToolIndex.load(index_folder).catalog.names)
    assert "other_0" in saved and "held_0" not in saved
    feedback = {"query": "ship the memo to bob", "tool": "send_email"}
    assert httpx.post(unlocked_replicas[1].url + "/feedback", json=feedback, headers=ADMIN).status_code == 200
