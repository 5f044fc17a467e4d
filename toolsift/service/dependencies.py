"""FastAPI dependencies: the service state, the caller's tenant, the admin check."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Header, Request

from toolsift.errors import AdminDisabled, Unauthorized
from toolsift.service.state import ServiceState
from toolsift.tenants import TenantSpec


def get_state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


State = Annotated[ServiceState, Depends(get_state)]


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def get_tenant(
    state: State,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> TenantSpec | None:
    """The tenant making the request (None when no tenants are configured)."""
    if state.tenants is None:
        return None
    return state.tenants.identify(x_api_key or bearer_token(authorization))


Tenant = Annotated[TenantSpec | None, Depends(get_tenant)]


def require_admin(state: State, authorization: Annotated[str | None, Header()] = None) -> None:
    """Admin endpoints need ``Authorization: Bearer <TOOLSIFT_ADMIN_TOKEN>``; they are off without one."""
    expected = state.settings.admin_token
    if not expected:
        raise AdminDisabled()
    token = bearer_token(authorization)
    # compared as bytes: a header may hold any byte, and compare_digest refuses non-ASCII str
    if token is None or not hmac.compare_digest(token.encode("utf-8", "surrogateescape"), expected.encode()):
        raise Unauthorized()
