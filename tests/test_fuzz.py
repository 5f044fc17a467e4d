"""Fuzz the OpenAPI spec with schemathesis: no input, however broken, gets a 5xx; bad input gets a 4xx."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from toolsift import Router
from toolsift.catalog import parse_catalog
from toolsift.embeddings import HashingEmbedder
from toolsift.service import create_app
from toolsift.settings import Settings

from conftest import TINY_TOOLS

APP = create_app(
    Router.build(parse_catalog(TINY_TOOLS, source="fuzz"), HashingEmbedder(64)),
    settings=Settings(admin_token="fuzz-admin-token-123456"),
)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error(case: schemathesis.Case) -> None:  # type: ignore[type-arg]
    response = case.call_and_validate(checks=[not_a_server_error], excluded_checks=[])
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body, dict) and "error" in body and body["error"]["message"], (case.method, case.path, body)
