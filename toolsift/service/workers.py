"""How ``toolsift serve`` hands its settings to the processes that serve.

One process (the default): the app is made in the command's own process from the settings it
resolved (flags, then ``TOOLSIFT_*``, then defaults) and given to uvicorn as an object. Several
(``--workers N``): uvicorn starts each worker as a fresh interpreter that imports the app factory
by name, so the resolved settings travel as one JSON document in ``TOOLSIFT_WORKER_SETTINGS``,
which ``worker_app`` reads back as they were, not re-parsed from individual variables.
"""

from __future__ import annotations

import os
from typing import Any

from fastapi import FastAPI

from toolsift.service.app import create_app
from toolsift.settings import Settings

SETTINGS_VARIABLE = "TOOLSIFT_WORKER_SETTINGS"
WORKER_FACTORY = "toolsift.service.workers:worker_app"


def worker_environment(settings: Settings) -> dict[str, str]:
    """What a worker process needs in its environment: the resolved settings."""
    return {SETTINGS_VARIABLE: settings.model_dump_json()}


def worker_app() -> FastAPI:
    """The app of one of several worker processes (uvicorn calls it in each)."""
    document = os.environ.get(SETTINGS_VARIABLE)
    settings = Settings.model_validate_json(document) if document else Settings()
    return create_app(settings=settings)


def app_or_factory(settings: Settings, workers: int) -> tuple[Any, bool]:
    """What to give uvicorn.run: the app itself for one process, else the factory's import name
    (and ``True``: call it), with the settings put where the workers read them."""
    if workers <= 1:
        return create_app(settings=settings), False
    os.environ.update(worker_environment(settings))  # inherited by the worker processes uvicorn spawns
    return WORKER_FACTORY, True
