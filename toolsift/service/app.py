"""The app factory: one ``ServiceState``, one lifespan for the start-up mode, and the routers."""

from __future__ import annotations

from fastapi import FastAPI

from toolsift._version import __version__
from toolsift.router import Router
from toolsift.service.lifespans import lifespan_for
from toolsift.service.observability import ObservabilityMiddleware
from toolsift.service.responses import JSONBytes, install_error_handlers
from toolsift.service.routes import admin, call, curation, deferred, feedback, health, route, tools
from toolsift.service.routes.docs import mount_docs
from toolsift.service.state import ServiceState
from toolsift.settings import Settings
from toolsift.tenants import Tenants, load_tenants


def create_app(
    router: Router | None = None, *, settings: Settings | None = None, tenants: Tenants | None = None
) -> FastAPI:
    """The HTTP service.

    ``create_app(router)`` serves a router built in-process (tests, embedding in another app);
    ``create_app(settings=...)`` loads the index folder (or the MCP servers) the settings name
    when the app starts. Without settings they are read from the environment (``TOOLSIFT_*``).
    """
    settings = settings or Settings.from_env()
    if tenants is None and settings.tenants is not None:
        tenants = load_tenants(settings.tenants)
    state = ServiceState.create(router, settings, tenants)
    app = FastAPI(
        title="toolsift",
        version=__version__,
        summary="Pick the few tools an LLM should see, in a stable, cache-friendly form.",
        default_response_class=JSONBytes,
        lifespan=lifespan_for(state),
        docs_url=None,  # served from the installed Swagger UI package instead (offline)
        redoc_url=None,
    )
    app.state.service = state
    app.add_middleware(ObservabilityMiddleware, metrics=state.metrics, max_body=settings.max_request_bytes)
    install_error_handlers(app)
    for area in (route, call, deferred, feedback, tools, admin, curation, health):
        app.include_router(area.router)
    mount_docs(app)
    return app
