"""The README keeps up with the CLI and the HTTP API."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from toolsift import Router
from toolsift.catalog import fingerprint_sequence
from toolsift.cli import main
from toolsift.router import OUTPUT_FORMATS
from toolsift.service import create_app
from toolsift.settings import Settings

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_command_is_documented(command: str) -> None:
    assert f"toolsift {command}" in README


def test_every_setting_is_documented() -> None:

    missing = [name for name in Settings.model_fields if f"TOOLSIFT_{name.upper()}" not in README]
    assert not missing, f"README's Configuration lacks TOOLSIFT_* for {missing}"


def test_every_route_is_documented(tiny_router: Router) -> None:
    every = route_paths(create_app(tiny_router).routes)
    paths = {path for path in every if not path.startswith(("/docs", "/redoc", "/openapi"))}
    assert paths == {
        "/",
        "/route",
        "/call",
        "/deferred",
        "/tools",
        "/healthz",
        "/lint",
        "/metrics",
        "/admin/reload",
        "/admin/approve",
        "/admin/status",
        "/admin/tune",
        "/admin/tools",
        "/admin/tools/{name}",
        "/feedback",
        "/admin/changes",
        "/admin/feedback",
        "/tools/{name}",
        "/catalog/map",
        "/favicon.ico",
    }
    for path in paths:
        assert f" {path}`" in README, path


def route_paths(routes: list[Any]) -> set[str]:
    """Every path served, parameters without their converters (``{name:path}`` as ``{name}``).
    FastAPI (0.165) keeps an included APIRouter as one entry whose ``effective_route_contexts()``
    lists its routes with their full paths."""
    paths: set[str] = set()
    for route in routes:
        contexts = getattr(route, "effective_route_contexts", None)
        paths |= {str(c.path) for c in contexts()} if contexts else {str(getattr(route, "path", ""))}
    return {re.sub(r":\w+}", "}", path) for path in paths}


def test_readme_gives_the_two_commands() -> None:
    assert "make serve" in README and "make test" in README


def matches_example(example: object, actual: object) -> bool:
    """``actual`` has everything ``example`` shows; ``"..."`` in the example stands for anything."""
    if example == "...":
        return True
    if isinstance(example, dict) and isinstance(actual, dict):
        if example == {"...": "..."}:
            return True
        return example.keys() == actual.keys() and all(matches_example(v, actual[k]) for k, v in example.items())
    if isinstance(example, list) and isinstance(actual, list):
        return len(example) == len(actual) and all(map(matches_example, example, actual))
    if isinstance(example, float) and isinstance(actual, float):  # the last digits vary with the CPU's kernels
        return abs(example - actual) <= 1e-4
    return example == actual


@pytest.mark.model
def test_the_readme_example_is_what_the_bundled_catalog_answers(bundled_client: TestClient) -> None:
    section = README[README.index("## Example") :]
    request = json.loads(section.split("-d '", 1)[1].split("'", 1)[0])
    example = json.loads(section.split("```json\n", 1)[1].split("```", 1)[0])
    actual = bundled_client.post("/route", json=request).json()
    assert matches_example(example, actual), json.dumps(actual, indent=1)[:3000]


@pytest.mark.model
def test_the_readme_abstention_example_is_what_toolsift_prints(bundled_index: Path) -> None:
    block = README[README.index("## Abstention") :].split("```bash\n", 1)[1].split("```", 1)[0]
    command, printed, answerable = block.splitlines()[:3]
    said = CliRunner().invoke(main, [*shlex.split(command)[1:], "--index", str(bundled_index)])
    assert said.exit_code == 0 and said.output.strip() == printed.removeprefix("# "), said.output
    found = CliRunner().invoke(main, [*shlex.split(answerable)[1:], "--index", str(bundled_index)])
    assert found.exit_code == 0 and "get_weather_forecast" in found.output.splitlines()[0], found.output


def test_the_fingerprint_is_the_same_in_every_format_and_changes_with_the_tools(tiny_router: Router) -> None:
    """As the README defines it: computed on the tools in the order sent, not on a format's bytes."""
    with TestClient(create_app(tiny_router, settings=Settings())) as client:
        request = {"query": "weather forecast", "k": 3, "pinned": ["send_email"]}
        bodies = {f: client.post("/route", json={**request, "format": f}).json() for f in OUTPUT_FORMATS}
        assert len({body["fingerprint"] for body in bodies.values()}) == 1
        assert len({json.dumps(body["tools"]) for body in bodies.values()}) == len(OUTPUT_FORMATS)
        other = client.post("/route", json={**request, "k": 2}).json()
        assert other["fingerprint"] != bodies["toolsift"]["fingerprint"]
        first = client.post("/route", json={"query": "weather", "k": 1, "session_id": "s"}).json()
        second = client.post("/route", json={"query": "send an email", "k": 1, "session_id": "s"}).json()
        names = [t["name"] for t in second["tools"]]
        assert len(names) == 2 and second["fingerprint"] != first["fingerprint"]
        assert second["fingerprint"] == fingerprint_sequence([tiny_router.catalog.get(n) for n in names])  # type: ignore[misc]


def test_the_readme_loops_are_the_ones_the_tests_run() -> None:
    """The agent loops of the README's deferred-loading section, line for line, are those
    tests/test_deferred.py runs against the gateway (between its ``the loop as the README shows it``
    markers)."""
    source = (Path(__file__).parent / "test_deferred.py").read_text(encoding="utf-8")
    readme = {line.strip() for line in README.splitlines()}
    loops = re.findall(r"# -- the loop as the README shows it --\n(.*?)\n\s*# --\n", source, re.S)
    assert len(loops) == 3
    for loop in loops:
        for line in loop.splitlines():
            line = re.sub(r"\s*# type: ignore\[[a-z-]+\]", "", line).strip()
            line = re.sub(r"^(\w+): [^=]+ = ", r"\1 = ", line)  # the test's annotations
            assert line in readme, f"README.md lacks this line of the tested loop: {line}"


def blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def test_the_quickstart_runs_against_the_bundled_catalog(bundled_index: Path) -> None:
    """Every snippet of the README's Quickstart, as a new user copies it, against `toolsift
    serve` over the bundled catalog (the address and index folder swapped for the test's)."""
    import contextlib
    import io
    import subprocess
    import sys

    from toolsift import load_catalog
    from toolsift.settings import BUNDLED_CATALOG

    from conftest import free_port, wait_until_serving

    section = README[README.index("## Quickstart") : README.index("## Install only what you use")]
    assert 40 <= len(section.splitlines()) <= 70  # about 60 lines
    port = free_port()
    command = [sys.executable, "-m", "toolsift", "serve", "--index", str(bundled_index), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_serving(f"http://127.0.0.1:{port}", process)
        [shell] = blocks(section, "sh")
        done = subprocess.run(["bash", "-c", shell.replace("localhost:8000", f"127.0.0.1:{port}")],
                              capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
        body = json.loads(done.stdout)
        assert len(body["tools"]) == 3 and body["matches"][0]["name"] == "get_weather_forecast"
        printed = io.StringIO()
        for snippet in blocks(section, "python"):
            code = snippet.replace("http://127.0.0.1:8000", f"http://127.0.0.1:{port}")
            names: dict[str, Any] = {}
            with contextlib.redirect_stdout(printed):
                exec(code.replace('"var/index"', repr(str(bundled_index))), names)  # noqa: S102 - the README's own code
            if "toolsift" in names:
                names["toolsift"].close()  # a program's exit would
    finally:
        process.terminate()
        process.wait(timeout=30)
    weather, schema, abstained, mail, money = printed.getvalue().splitlines()
    assert weather.startswith("['get_weather_forecast'") and schema.startswith("{")
    assert abstained.startswith("True no tool is likely enough")
    catalog = load_catalog(BUNDLED_CATALOG)
    mailed = eval(mail)  # noqa: S307 - a printed list of names
    assert mailed and all("email" in catalog.get(n).tags and catalog.get(n).annotations.read_only for n in mailed)  # type: ignore[union-attr]
    assert money.startswith("['get_exchange_rate'")


def test_the_python_and_tenants_examples_name_what_the_bundled_catalog_has(bundled_index: Path, tmp_path: Path) -> None:
    from toolsift import load_catalog
    from toolsift.catalog.loader import load_yaml
    from toolsift.settings import BUNDLED_CATALOG

    [snippet] = blocks(README[README.index("## Python") : README.index("## Catalogs")], "python")
    code = snippet.replace('"toolsift/data/default_catalog.yaml"', repr(str(BUNDLED_CATALOG)))
    code = code.replace('"var/index"', repr(str(tmp_path / "index")))
    names: dict[str, Any] = {}
    exec(code, names)  # noqa: S102 - the README's own code
    assert names["result"].names[0] == "refund_payment" and names["delivered"].session.prefix_changed is False
    sent = [definition["function"]["name"] for definition in names["delivered"].definitions()]
    assert "track_order" in names["delivered"].session.appended and sent[-1] != "refund_payment"  # appended, after
    tenants = README[README.index("  tenants:\n") :].split("```", 1)[0]
    spec = load_yaml(re.sub(r"(?m)^  ", "", tenants))["tenants"]["acme"]
    catalog = load_catalog(BUNDLED_CATALOG)
    assert set(spec["tools"]) <= set(catalog.names)
    assert {*spec["tags"]["any"], *spec["tags"]["exclude"]} <= set(catalog.tags)
