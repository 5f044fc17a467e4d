"""The client tries again on a connection error or a 502/503/504 (a service loading its index),
``retries`` times with growing waits, then gives the caller the service's own error."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from toolsift import Router
from toolsift.client import AsyncClient, Client, ServiceError, turn_key_of
from toolsift.errors import NotReady

LOADING = {"error": {"type": "NotReady", "message": "the index is loading; try again in a moment"}}


def flaky(failures: int, calls: list[str]) -> httpx.MockTransport:
    """503 for the first ``failures`` requests, then a healthy answer."""

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) <= failures:
            return httpx.Response(503, json=LOADING)
        return httpx.Response(200, json={"status": "ok", "version": "test"})

    return httpx.MockTransport(handle)


def test_a_503_is_tried_again_until_it_answers() -> None:
    calls: list[str] = []
    with Client("http://toolsift", transport=flaky(2, calls), retries=3) as client:
        assert client.health()["status"] == "ok"
    assert calls == ["/healthz"] * 3


def test_after_the_last_try_the_services_error_is_raised() -> None:
    calls: list[str] = []
    with Client("http://toolsift", transport=flaky(10, calls), retries=1) as client, pytest.raises(NotReady) as error:
        client.health()
    assert len(calls) == 2 and getattr(error.value, "status", None) == 503


def test_a_400_is_not_tried_again() -> None:
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return httpx.Response(400, json={"error": {"type": "Mystery", "message": "no"}})

    with Client("http://toolsift", transport=httpx.MockTransport(handle)) as client, pytest.raises(ServiceError):
        client.health()
    assert calls == ["/healthz"]


def test_the_async_client_tries_again_too() -> None:
    calls: list[str] = []

    async def scenario() -> None:
        async with AsyncClient("http://toolsift", transport=flaky(1, calls), retries=2) as client:
            assert (await client.health())["status"] == "ok"

    anyio.run(scenario)
    assert calls == ["/healthz"] * 2


def test_a_route_with_a_session_carries_one_turn_key_across_retries(tiny_router: Router) -> None:
    from fastapi.testclient import TestClient

    from toolsift.service import create_app

    with TestClient(create_app(tiny_router)) as service:
        answer = service.post("/route", json={"query": "weather", "k": 1}).json()
    bodies: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(503, json=LOADING) if len(bodies) == 1 else httpx.Response(200, json=answer)

    with Client("http://toolsift", transport=httpx.MockTransport(handle)) as client:
        client.route("weather", k=1, session_id="conv")
        client.route("weather", k=1)
    first, retried, unsessioned = bodies
    assert first["turn_key"] == retried["turn_key"] and len(first["turn_key"]) == 32
    assert "turn_key" not in unsessioned
    assert turn_key_of("toolu_01ABC") == "toolu_01ABC" and len(turn_key_of("has spaces")) == 32
