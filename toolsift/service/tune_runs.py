"""``POST /admin/tune`` starts ``toolsift tune`` in a process of its own (training takes minutes
and a whole core or two: a worker keeps answering routes meanwhile), detached from the worker
that started it. The process holds the index's tune lock and writes its status beside the index
(``toolsift.tuning.jobs``); every worker follows the index folder when it publishes."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from toolsift.errors import CatalogManagedElsewhere, TuningRefused
from toolsift.service.state import ServiceState
from toolsift.tuning.jobs import read_status, running
from toolsift.wire import TuneRequest


def start_tune(state: ServiceState, request: TuneRequest) -> dict[str, Any]:
    if state.live is not None:
        raise CatalogManagedElsewhere()
    folder = state.settings.index_path
    if running(folder):
        raise TuningRefused(f"another tune of {folder} is running", "Wait for it: GET /admin/tune")
    command = [
        sys.executable, "-m", "toolsift", "tune", "--index", str(folder), "--json", "--kind", request.kind,
        "--time-limit", str(request.time_limit), "--hold-out", str(request.hold_out), "--epochs", str(request.epochs),
    ]  # fmt: skip
    if request.shadow:
        command.append("--shadow")
    log = folder.with_name(folder.name + ".tune.log")
    with open(log, "ab") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=handle, stdin=subprocess.DEVNULL,
                                   start_new_session=True, env=os.environ.copy())  # fmt: skip
    return {"state": "started", "pid": process.pid, "log": str(log), "status": "GET /admin/tune"}


def tune_status(state: ServiceState) -> dict[str, Any]:
    return read_status(state.settings.index_path)
