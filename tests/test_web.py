"""The curation page, driven in headless Chromium (Debian's package) with playwright, against a
real `toolsift serve` process over the bundled catalog."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import free_port, wait_until_serving

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def served(bundled_index: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "toolsift", "serve", "--index", str(bundled_index), "--port", str(port)],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.model
def test_page_shows_overview_findings_and_route_breakdown(served: str) -> None:
    if CHROMIUM is None:
        pytest.fail("headless Chromium is needed for this test: `make browser` (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(served + "/")

        expect(page.locator("#tool-count")).to_have_text("254")
        expect(page.locator("#findings-table tr").nth(1)).to_be_visible(timeout=60_000)
        first_finding = page.locator("#findings-table tr").nth(1).locator("td").all_inner_texts()
        assert first_finding[0] in ("error", "warning", "info") and len(first_finding[4]) > 10  # the fix
        page.select_option("#severity", "info")  # the page asks the server for that severity's findings
        expect(page.locator("#findings")).to_have_attribute("data-severity", "info", timeout=60_000)
        severities = page.locator("#findings-table td:first-child").all_inner_texts()
        assert severities and set(severities) == {"info"}

        page.fill("#query", "will it rain in Lisbon this weekend?")
        page.fill("#k", "3")
        page.click("#route-button")
        rows = page.locator("#route-table tr.match")
        expect(rows).to_have_count(3, timeout=60_000)
        names = page.locator("#route-table tr.match td:nth-child(2)").all_inner_texts()
        assert any("weather" in name for name in names), names
        first_score = float(rows.nth(0).locator("td").nth(2).inner_text())
        last_score = float(rows.nth(2).locator("td").nth(2).inner_text())
        assert first_score >= last_score
        assert page.locator("#route-table .bar").count() >= 3

        page.fill("#query", "x" * 9000)  # over the limit: the API's message is shown, not a crash
        page.click("#route-button")
        expect(page.locator("#route-error")).to_contain_text("query")
        assert errors == []
        browser.close()


def test_lint_endpoint_reports_the_loaded_catalog(tiny_router: object) -> None:
    from fastapi.testclient import TestClient

    from toolsift.service import create_app

    with TestClient(create_app(tiny_router)) as client:  # type: ignore[arg-type]
        report = client.get("/lint").json()
        assert report["tools"] == 8 and set(report["counts"]) == {"error", "warning", "info"}
        assert any(f["code"] == "parameter-without-description" for f in report["findings"])
        page = client.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert 'id="route-form"' in page.text


@pytest.mark.model
def test_page_with_a_tenant_key_shows_only_that_tenants_tools(bundled_index: Path, tmp_path: Path) -> None:
    if CHROMIUM is None:
        pytest.fail("headless Chromium is needed for this test: `make browser` (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("tenants:\n  acme:\n    key: acme-key-0123456789abcdef\n    tags: [weather]\n")
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolsift",
            "serve",
            "--index",
            str(bundled_index),
            "--port",
            str(port),
            "--tenants",
            str(tenants),
        ],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        weather_tools = {
            t["name"]
            for t in httpx.get(
                url + "/tools", params={"limit": 1000}, headers={"X-API-Key": "acme-key-0123456789abcdef"}
            ).json()["tools"]
        }
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(url + "/")
            expect(page.locator("#overview .error")).to_contain_text("API key")  # no key: the 401 says what to send
            page.fill("#api-key", "acme-key-0123456789abcdef")
            page.click("#api-key-save")
            expect(page.locator("#tool-count")).to_have_text(str(len(weather_tools)))
            page.fill("#query", "send an email to Bob")
            page.click("#route-button")
            expect(page.locator("#route-table tr.match").first).to_be_visible(timeout=60_000)
            names = set(page.locator("#route-table tr.match td:nth-child(2)").all_inner_texts())
            assert names and names <= weather_tools
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_lint_pages_and_filters_findings(tiny_router: object) -> None:
    from fastapi.testclient import TestClient

    from toolsift.service import create_app

    with TestClient(create_app(tiny_router)) as client:  # type: ignore[arg-type]
        everything = client.get("/lint", params={"limit": 1000}).json()
        assert everything["total"] == len(everything["findings"]) == sum(everything["counts"].values())
        assert sum(everything["checks"].values()) == everything["total"]
        pages = [client.get("/lint", params={"offset": o, "limit": 2}).json()["findings"] for o in range(0, 40, 2)]
        assert [f for page in pages for f in page] == everything["findings"]  # pages cover all, in order
        code = next(iter(everything["checks"]))
        only = client.get("/lint", params={"check": code, "limit": 1000}).json()
        assert only["total"] == everything["checks"][code] and {f["code"] for f in only["findings"]} == {code}
        warnings = client.get("/lint", params={"severity": "warning"}).json()
        assert warnings["total"] == everything["counts"]["warning"]
        assert client.get("/lint", params={"limit": 5000}).status_code == 422
        assert client.get("/lint", params={"severity": "fatal"}).status_code == 422
