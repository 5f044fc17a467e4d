"""Response classes and the mapping from toolsift's errors to HTTP status codes."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from toolsift.errors import (
    AdminDisabled,
    CatalogManagedElsewhere,
    EmbedderUnavailable,
    FeedbackRateLimited,
    FeedbackRefused,
    IndexBusy,
    IndexMismatch,
    IndexNotFound,
    LockLost,
    NotAGateway,
    NotReady,
    ReloadFailed,
    SharedStoreUnavailable,
    TenantUnauthorized,
    ToolNotFound,
    ToolsiftError,
    TuningRefused,
    Unauthorized,
)


class JSONBytes(Response):
    """JSON via orjson, keys sorted: the same content always gives the same bytes."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)


STATUS_CODES: dict[type[ToolsiftError], int] = {
    ToolsiftError: 400,
    Unauthorized: 401,
    TenantUnauthorized: 401,
    AdminDisabled: 403,
    FeedbackRefused: 403,
    FeedbackRateLimited: 429,
    IndexNotFound: 404,
    ToolNotFound: 404,
    IndexMismatch: 409,
    CatalogManagedElsewhere: 409,
    NotAGateway: 409,
    TuningRefused: 409,
    EmbedderUnavailable: 500,
    ReloadFailed: 502,
    IndexBusy: 503,
    LockLost: 503,
    SharedStoreUnavailable: 503,
    NotReady: 503,
}
"""The HTTP status of each error class; a subclass not listed takes its nearest listed base's."""


def status_for(error: ToolsiftError) -> int:
    for kind in type(error).__mro__:
        if kind in STATUS_CODES:
            return STATUS_CODES[kind]
    return 400


def error_response(kind: str, message: str, status_code: int, **extra: Any) -> JSONBytes:
    """The one error body: ``{"error": {"type", "message", ...}}``."""
    return JSONBytes({"error": {"type": kind, "message": message, **extra}}, status_code=status_code)


async def toolsift_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ToolsiftError)
    response = error_response(type(error).__name__, str(error), status_for(error))
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


async def http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, StarletteHTTPException)
    kind, message = {
        404: (
            "NotFound",
            f"no such route: {request.url.path}. The API is POST /route, GET /tools, GET /healthz; docs at /docs",
        ),
        405: (
            "MethodNotAllowed",
            f"{request.method} is not allowed on {request.url.path}; see /docs for the methods each route takes",
        ),
        413: ("RequestTooLarge", str(error.detail)),
    }.get(error.status_code, ("HTTPError", str(error.detail)))
    response = error_response(kind, message, error.status_code)
    response.headers.update(getattr(error, "headers", None) or {})
    return response


async def validation_error(request: Request, error: Exception) -> Response:
    """422 naming each invalid field; 415 for a body that is not JSON at all."""
    assert isinstance(error, RequestValidationError)
    content_type = request.headers.get("content-type", "")
    errors = list(error.errors())
    if any(item.get("loc") == ("body",) for item in errors) and "json" not in content_type.lower():
        return error_response(
            "UnsupportedMediaType",
            f"the body must be JSON sent with 'Content-Type: application/json' (got {content_type or 'no content type'!r})",
            415,
        )
    problems = [_problem(item) for item in errors]
    message = "; ".join(f"{p['field'] or 'body'}: {p['message']}" for p in problems)
    return error_response("InvalidRequest", message, 422, problems=problems)


def _problem(item: Any) -> dict[str, str]:
    """One invalid field: where (dotted path; ``body`` for the body as a whole) and what is wrong."""
    location = [str(part) for part in item.get("loc", ()) if part != "body"]
    message = str(item.get("msg", "")).removeprefix("Value error, ")
    if item.get("type") == "json_invalid":  # the location is a character offset, not a field
        where = location[0] if location else "?"
        reason = (item.get("ctx") or {}).get("error", "")
        return {"field": "body", "message": f"invalid JSON at character {where}" + (f" ({reason})" if reason else "")}
    if not location and item.get("type") in ("model_attributes_type", "dict_type"):
        return {"field": "body", "message": 'must be a JSON object, e.g. {"query": "the user\'s request", "k": 5}'}
    return {"field": ".".join(location), "message": message}


def install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as JSON in the one error shape, with its mapped status code."""
    app.add_exception_handler(ToolsiftError, toolsift_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
