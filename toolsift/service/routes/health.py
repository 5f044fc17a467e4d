"""``GET /healthz`` and the Prometheus metrics at ``/metrics``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from toolsift._version import __version__
from toolsift.service.dependencies import State
from toolsift.service.schemas import Health
from toolsift.tenants import key_from_headers

router = APIRouter()


@router.get("/healthz", summary="Liveness and what is loaded", response_model=Health, response_model_exclude_none=True)
def healthz(state: State, request: Request) -> dict[str, Any]:
    current = state.routers.get()
    admin = state.is_admin(key_from_headers(request.headers)) or None  # the page shows its admin view then
    if state.tenants is not None:  # unauthenticated: say nothing about the catalog
        return {"status": "ok", "version": __version__, "admin": admin}
    manifest = current.index.manifest
    return {
        "status": "ok",
        "version": __version__,
        "tools": len(current.catalog),
        "model": manifest.model,
        "index_kind": manifest.kind,
        "catalog_fingerprint": manifest.catalog_fingerprint,
        "admin": admin,
    }


@router.get("/metrics", include_in_schema=False)
def prometheus(state: State) -> Response:
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
