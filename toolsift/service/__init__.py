"""The HTTP service and the MCP server: toolsift over the network.

HTTP endpoints (docs at ``/docs``): ``POST /route``, ``GET /deferred``, ``GET /tools``, ``GET /healthz``,
``GET /metrics``, ``GET /lint``, the curation page at ``/``, and behind the admin token
``POST /admin/tools``, ``DELETE /admin/tools/{name}``, ``POST /admin/reload``, ``GET /admin/status``.
``toolsift.service:create_app`` is the app factory ``toolsift serve`` hands to uvicorn.
"""

from toolsift.service.app import create_app

__all__ = ["create_app"]
