"""``GET /docs`` and ``GET /redoc``: the API docs, served with the Swagger UI and ReDoc assets of
the installed ``fastapi-offline`` package, never a CDN: they work offline and behind firewalls."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs/assets"
router = APIRouter()


def assets_folder() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


@router.get("/docs", include_in_schema=False)
def docs() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="toolsift API",
        swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger-ui.css",
        swagger_favicon_url="/favicon.ico",
    )


@router.get("/redoc", include_in_schema=False)
def redoc() -> HTMLResponse:
    return get_redoc_html(
        openapi_url="/openapi.json",
        title="toolsift API",
        redoc_js_url=f"{ASSETS}/redoc.standalone.js",
        redoc_favicon_url="/favicon.ico",
        with_google_fonts=False,
    )


def mount_docs(app: FastAPI) -> None:
    """The docs pages and their assets (FastAPI's own /docs and /redoc load them from a CDN)."""
    app.mount(ASSETS, StaticFiles(directory=assets_folder()), name="docs-assets")
    app.include_router(router)
