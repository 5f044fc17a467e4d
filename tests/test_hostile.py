"""Hostile input over HTTP: random bodies, headers and query strings on every endpoint, with and
without tenants. Nothing gets a 5xx; every error is JSON in the one error shape."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote_from_bytes

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolsift import Router
from toolsift.service import create_app
from toolsift.settings import Settings
from toolsift.tenants import parse_tenants

ADMIN_TOKEN = "hostile-admin-token-0123456789"
TENANT_KEY = "hostile-tenant-key-0123456789"
ENDPOINTS = [
    ("POST", "/route"),
    ("GET", "/tools"),
    ("GET", "/lint"),
    ("GET", "/healthz"),
    ("GET", "/metrics"),
    ("POST", "/admin/tools"),
    ("DELETE", "/admin/tools/send_email"),
    ("POST", "/admin/reload"),
    ("GET", "/admin/status"),
    ("GET", "/"),
]
CONTENT_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""]
pytestmark = pytest.mark.slow  # ~40 s of fuzzing: make test runs it, make test-fast does not
fuzzing = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

header_value = st.lists(st.sampled_from([*range(0x20, 0x7F), 0x09, *range(0x80, 0x100)]), max_size=200).map(bytes)
json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=20,
)
route_fields = st.fixed_dictionaries(
    {},
    optional={
        "query": json_like,
        "k": json_like,
        "tags": json_like,
        "format": json_like,
        "pinned": json_like,
        "session_id": json_like,
        "access": json_like,
        "delivery": json_like,
        "min_score": json_like,
        "split_intents": json_like,
    },
)


@pytest.fixture(params=["open", "tenants"])
def client(request: pytest.FixtureRequest, tiny_router: Router) -> Iterator[TestClient]:
    tenants = None
    if request.param == "tenants":
        tenants = parse_tenants({"tenants": {"t": {"key": TENANT_KEY, "tags": ["weather", "email"]}}})
    app = create_app(tiny_router, settings=Settings(admin_token=ADMIN_TOKEN, max_request_bytes=4096), tenants=tenants)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def check(response_status: int, content_type: str, body: bytes, path: str) -> None:
    assert response_status < 500, (path, response_status, body[:300])
    if response_status >= 400:
        assert content_type.startswith("application/json"), (path, response_status, content_type, body[:200])
        assert body.startswith(b'{"error":{'), (path, body[:200])


def authorised(headers: dict[bytes, bytes], choice: int) -> dict[bytes, bytes]:
    """Sometimes the right keys, so the fuzzing reaches past the auth checks."""
    if choice == 1:
        return {**headers, b"x-api-key": TENANT_KEY.encode(), b"authorization": f"Bearer {ADMIN_TOKEN}".encode()}
    return headers


@fuzzing
@given(
    body=st.binary(max_size=600) | route_fields.map(lambda d: repr(d).encode()),
    content_type=st.sampled_from(CONTENT_TYPES),
    choice=st.integers(0, 1),
)
def test_random_bodies(client: TestClient, body: bytes, content_type: str, choice: int) -> None:
    headers = authorised({b"content-type": content_type.encode()} if content_type else {}, choice)
    for method, path in ENDPOINTS:
        response = client.request(method, path, content=body, headers=headers)
        check(response.status_code, response.headers.get("content-type", ""), response.content, path)


@fuzzing
@given(fields=route_fields, choice=st.integers(0, 1))
def test_random_json_route_requests(client: TestClient, fields: dict[str, object], choice: int) -> None:
    headers = authorised({}, choice)
    try:
        response = client.post("/route", json=fields, headers=headers)
    except ValueError:  # a float that JSON cannot carry (NaN in a nested list): nothing was sent
        return
    check(response.status_code, response.headers.get("content-type", ""), response.content, "/route")


@fuzzing
@given(
    names=st.lists(
        st.sampled_from([b"authorization", b"x-api-key", b"content-type", b"accept", b"x-other"]), max_size=4
    ),
    values=st.lists(header_value, min_size=4, max_size=4),
)
def test_random_headers(client: TestClient, names: list[bytes], values: list[bytes]) -> None:
    headers = dict(zip(names, values, strict=False))
    for method, path in ENDPOINTS:
        response = client.request(method, path, headers=headers, content=b'{"query": "weather"}')
        check(response.status_code, response.headers.get("content-type", ""), response.content, path)


@fuzzing
@given(
    raw=st.lists(st.tuples(st.binary(max_size=20), st.binary(max_size=40)), max_size=6),
    choice=st.integers(0, 1),
)
def test_random_query_strings(client: TestClient, raw: list[tuple[bytes, bytes]], choice: int) -> None:
    names = [b"offset", b"limit", b"tag", b"format", b"severity", b"check", b"server"]
    pairs = [(names[i % len(names)] if i % 2 else key, value) for i, (key, value) in enumerate(raw)]
    query = "&".join(f"{quote_from_bytes(key)}={quote_from_bytes(value)}" for key, value in pairs)
    for method, path in ENDPOINTS:
        response = client.request(method, f"{path}?{query}", headers=authorised({}, choice))
        check(response.status_code, response.headers.get("content-type", ""), response.content, path)


@pytest.mark.parametrize(
    "path",
    [
        "/admin/tools/%00",
        "/admin/tools/..%2F..%2Fetc%2Fpasswd",
        "/admin/tools/" + "x" * 5000,
        "/tools/%FF%FE",
        "/%C0%AF",
    ],
)
def test_hostile_paths(client: TestClient, path: str) -> None:
    for method in ("GET", "POST", "DELETE"):
        response = client.request(method, path, headers=authorised({}, 1))
        check(response.status_code, response.headers.get("content-type", ""), response.content, path)
