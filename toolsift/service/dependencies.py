"""FastAPI dependencies: the service state, the caller's tenant, the admin check.

Credentials are read with FastAPI's security classes (``HTTPBearer``, ``APIKeyHeader``), so the
OpenAPI document at ``/docs`` shows how to authenticate; the checks themselves stay here, in
constant time, with toolsift's own error bodies (``auto_error=False``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from toolsift.errors import AdminDisabled, Unauthorized
from toolsift.service.state import ServiceState
from toolsift.tenants import TenantSpec

BEARER = HTTPBearer(auto_error=False, description="A tenant's API key, or the admin token for /admin")
API_KEY = APIKeyHeader(name="X-API-Key", auto_error=False, description="A tenant's API key")


def get_state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


State = Annotated[ServiceState, Depends(get_state)]
Bearer = Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]
ApiKey = Annotated[str | None, Depends(API_KEY)]


def get_tenant(state: State, bearer: Bearer, api_key: ApiKey) -> TenantSpec | None:
    """The tenant making the request (None when no tenants are configured)."""
    if state.tenants is None:
        return None
    return state.tenants.identify(api_key or (bearer.credentials if bearer is not None else None))


Tenant = Annotated[TenantSpec | None, Depends(get_tenant)]


def require_admin(state: State, bearer: Bearer) -> None:
    """Admin endpoints need ``Authorization: Bearer <TOOLSIFT_ADMIN_TOKEN>``; they are off without one."""
    if not state.settings.admin_token:
        raise AdminDisabled()
    if not state.is_admin(bearer.credentials if bearer is not None else None):
        raise Unauthorized()
