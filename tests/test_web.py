"""The curation page, driven in headless Chromium (Debian's package) with playwright, against a
real `toolsift serve` process over the bundled catalog."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
        # the bundled catalog has notes only: folded away, one click shows them
        expect(page.locator("#findings")).to_contain_text("No errors or warnings", timeout=60_000)
        page.click("#show-notes")
        expect(page.locator("#findings-table tr").nth(1)).to_be_visible(timeout=60_000)
        first_finding = page.locator("#findings-table tr").nth(1).locator("td").all_inner_texts()
        assert first_finding[0] == "info" and len(first_finding[4]) > 10  # the fix
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
        first_score = float(rows.nth(0).locator("td").nth(3).inner_text())
        last_score = float(rows.nth(2).locator("td").nth(3).inner_text())
        assert first_score >= last_score
        assert 0.0 <= float(rows.nth(0).locator("td").nth(2).inner_text()) <= 1.0  # the confidence column
        expect(page.locator("#payload-tokens")).to_contain_text("3 tool definitions", timeout=30_000)
        shown = int(page.locator("#payload-tokens").get_attribute("data-tokens") or 0)
        sent = [
            t["function"]["name"]
            for t in httpx.post(
                served + "/route", json={"query": "will it rain in Lisbon this weekend?", "k": 3, "format": "openai"}
            ).json()["tools"]
        ]
        assert shown == sum(httpx.get(f"{served}/tools/{n}").json()["tokens"]["openai"] for n in sent) > 0
        assert page.locator("#route-table .bar").count() >= 3

        page.fill("#query", "x" * 9000)  # over the limit: the API's message is shown, not a crash
        page.click("#route-button")
        expect(page.locator("#route-error")).to_contain_text("query")
        assert errors == []
        browser.close()


FEEDBACK = {"X-API-Key": "feedback-token-0123456789"}


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
            expect(page.locator("#tags .error")).to_contain_text("API key")  # not "loading…" for ever
            page.fill("#api-key", "acme-key-0123456789abcdef")
            page.click("#api-key-save")
            expect(page.locator("#tool-count")).to_have_text(str(len(weather_tools)))
            page.fill("#query", "send an email to Bob")  # no tool of this tenant serves it: the page says so
            page.click("#route-button")
            expect(page.locator("#route-abstained")).to_contain_text("no tool is likely enough", timeout=60_000)
            page.fill("#query", "will it rain in Paris this weekend?")
            page.click("#route-button")
            expect(page.locator("#route-table tr.match").first).to_be_visible(timeout=60_000)
            names = set(page.locator("#route-table tr.match td:nth-child(2)").all_inner_texts())
            assert names and names <= weather_tools
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_lint_report_is_made_once_asked_for_then_ahead_of_each_publish(tiny_router: Any, tmp_path: Path) -> None:
    """A server that only routes never computes a lint report (nor loads the token counter);
    once a curation view has asked, each newly published catalog's report is made ahead."""
    import time

    from fastapi.testclient import TestClient

    from toolsift.service import create_app
    from toolsift.settings import Settings

    folder = tiny_router.save(tmp_path / "index")
    admin = {"Authorization": "Bearer admin-token-0123456789"}
    settings = Settings(index_path=folder, admin_token="admin-token-0123456789", reload_interval=0)
    tool = {"name": "translate_text", "description": "Translate text into another language."}
    app = create_app(settings=settings)
    state = app.state.service
    with TestClient(app) as client:
        assert client.post("/route", json={"query": "send an email"}).status_code == 200
        assert client.post("/admin/tools", json={"tools": [tool]}, headers=admin).status_code == 200
        time.sleep(0.3)
        assert state.lint_reports == {}  # routing and publishing made none
        assert client.get("/lint").json()["tools"] == 9  # asked for: made now
        again = {**tool, "name": "translate_document"}
        assert client.post("/admin/tools", json={"tools": [again]}, headers=admin).status_code == 200
        fingerprint = state.routers.get().catalog.fingerprint
        deadline = time.monotonic() + 30
        while fingerprint not in state.lint_reports:  # made in the background, before anyone asks
            assert time.monotonic() < deadline, "the new catalog's report was not made ahead"
            time.sleep(0.05)
        assert state.lint_reports[fingerprint].tools == 10


def test_lint_pages_and_filters_findings(tiny_router: object) -> None:
    from fastapi.testclient import TestClient

    from toolsift.service import create_app
    from toolsift.wire import LintPage

    with TestClient(create_app(tiny_router)) as client:  # type: ignore[arg-type]
        everything = client.get("/lint", params={"limit": 1000}).json()
        LintPage.model_validate(everything, strict=True)  # the documented shape (not checked per request)
        assert everything["total"] == len(everything["findings"]) == sum(everything["counts"].values())
        assert everything["findings"] and everything["schema_tokens"]
        assert sum(everything["checks"].values()) == everything["total"]
        pages = [client.get("/lint", params={"offset": o, "limit": 2}).json()["findings"] for o in range(0, 40, 2)]
        assert [f for page in pages for f in page] == everything["findings"]  # pages cover all, in order
        code = next(iter(everything["checks"]))
        only = client.get("/lint", params={"check": code, "limit": 1000}).json()
        assert only["total"] == everything["checks"][code] and {f["code"] for f in only["findings"]} == {code}
        warnings = client.get("/lint", params={"severity": "warning"}).json()
        assert warnings["total"] == everything["counts"]["warning"]
        problems = client.get("/lint", params={"at_least": "warning", "limit": 1000}).json()
        assert problems["total"] == everything["counts"]["error"] + everything["counts"]["warning"] > 0
        assert {f["severity"] for f in problems["findings"]} <= {"error", "warning"}
        assert client.get("/lint", params={"limit": 5000}).status_code == 422
        assert client.get("/lint", params={"severity": "fatal"}).status_code == 422


DESKTOP, PHONE = {"width": 1280, "height": 800}, {"width": 375, "height": 740}
MULTI_PART = "email Bob the weather forecast and then add a picnic to my calendar"


def browser_page(playwright: Any, viewport: dict[str, int]) -> tuple[Any, Any, list[str]]:
    """A headless Chromium page that records console errors and uncaught exceptions."""
    if CHROMIUM is None:
        pytest.fail("headless Chromium is needed for this test: `make browser` (apt-get install chromium)")
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
    page = browser.new_page(viewport=viewport)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    return browser, page, errors


def no_sideways_scroll(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"))


@pytest.mark.model
def test_a_tool_page_has_its_documented_shape_and_its_nearest_tools(tiny_router: Any) -> None:
    """The page is not validated per request (that would run on the event loop): its shape is
    checked here, and its neighbours against every cosine computed by hand."""
    import numpy as np
    from fastapi.testclient import TestClient

    from toolsift.service import create_app
    from toolsift.wire import ToolDetail

    with TestClient(create_app(tiny_router)) as client:
        findings = client.get("/lint", params={"limit": 1000}).json()["findings"]
        name = next(f["tools"][0] for f in findings if f["tools"])
        page = client.get(f"/tools/{name}").json()
    ToolDetail.model_validate(page, strict=True)
    assert page["name"] == name and page["findings"] == [f for f in findings if name in f["tools"]]
    vectors = tiny_router.index.vectors.vectors(np.arange(len(tiny_router.catalog), dtype=np.int64))
    position = tiny_router.catalog.position(name)
    cosines = vectors @ vectors[position]
    others = sorted((i for i in range(len(cosines)) if i != position), key=lambda i: -cosines[i])[:5]
    assert [n["name"] for n in page["neighbours"]] == [tiny_router.catalog[i].name for i in others]
    assert [n["cosine"] for n in page["neighbours"]] == [round(float(cosines[i]), 4) for i in others]


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_part_of_the_page_works_at_desktop_and_phone_widths(served: str, viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect, sync_playwright

    email_tools = {
        t["name"] for t in httpx.get(served + "/tools", params={"tag": "email", "limit": 1000}).json()["tools"]
    }
    with sync_playwright() as playwright:
        browser, page, errors = browser_page(playwright, viewport)
        page.goto(served + "/")
        expect(page.locator("#tool-count")).to_have_text("254")

        # catalog browser: paging, search, tag filter, a tool's page
        expect(page.locator("#catalog-table tr.tool-row")).to_have_count(25, timeout=60_000)
        page.click("#catalog-next")
        expect(page.locator("#catalog-page")).to_have_text("26–50 of 254")
        page.fill("#catalog-search", "weather")
        expect(page.locator("#catalog-page")).to_contain_text("1–", timeout=10_000)
        expect(page.locator("#catalog-list")).to_have_attribute("data-query", "limit=25&offset=0&q=weather")
        names = page.locator("#catalog-table tr.tool-row td:first-child").all_inner_texts()
        assert names and all("weather" in n or "forecast" in n or "alert" in n or "sun" in n for n in names), names
        page.fill("#catalog-search", "")
        page.select_option("#catalog-tag", "email")
        expect(page.locator("#catalog-list")).to_have_attribute("data-query", "limit=25&offset=0&tag=email")
        assert set(page.locator("#catalog-table tr.tool-row td:first-child").all_inner_texts()) <= email_tools
        page.locator("#catalog-table .tool-link", has_text="send_email").click()
        expect(page.locator("#tool-name")).to_have_text("send_email")
        from toolsift.wire import OUTPUT_FORMATS

        assert page.locator("#tool-formats .format-tab").count() == len(OUTPUT_FORMATS)  # one tab per format
        assert all(int(t) > 10 for t in page.locator("#tool-formats .tokens").all_inner_texts())
        page.select_option("#catalog-tag", "")
        expect(page.locator("#catalog-list")).to_have_attribute("data-query", "limit=25&offset=0")
        page.locator("#tool-view .tag-link", has_text="email").first.click()  # a tag is a filter
        expect(page.locator("#catalog-list")).to_have_attribute("data-query", "limit=25&offset=0&tag=email")
        page.click("#tool-formats .format-tab[data-format=anthropic]")
        expect(page.locator("#tool-definition")).to_contain_text("input_schema")
        assert page.locator("#tool-neighbours li").count() == 5
        page.locator("#tool-neighbours .tool-link").first.click()  # a neighbour opens its own page
        expect(page.locator("#tool-name")).not_to_have_text("send_email")

        # findings: by check, a page at a time
        page.select_option("#check", "no-usage-guidance")
        expect(page.locator("#findings")).to_have_attribute("data-check", "no-usage-guidance", timeout=60_000)
        assert set(page.locator("#findings-table td:nth-child(2)").all_inner_texts()) == {"no-usage-guidance"}
        first_page = page.locator("#findings-page").inner_text()
        page.click("#findings-next")
        expect(page.locator("#findings-page")).not_to_have_text(first_page)

        # the query box: rules, format and the exact payload; a multi-part request explained
        page.fill("#query", "send a message to Ana about the meeting")
        page.fill("#tags-any", "email")
        page.select_option("#format", "anthropic")
        page.click("#route-button")
        expect(page.locator("#payload")).to_contain_text("input_schema", timeout=60_000)
        payload = json.loads(page.locator("#payload").inner_text())
        assert {tool["name"] for tool in payload["tools"]} <= email_tools
        page.fill("#tags-any", "")
        page.fill("#query", MULTI_PART)
        page.select_option("#delivery", "tool_reference")
        page.click("#route-button")
        expect(page.locator("#route-note")).to_be_visible(timeout=60_000)
        expect(page.locator("#route-table .intent").first).to_contain_text("add a picnic")
        assert "tool_reference" in page.locator("#payload").inner_text()
        page.click("#deferred-button")
        expect(page.locator("#deferred-payload")).to_contain_text("defer_loading")

        # the map and the token costs
        page.click("#map-button")
        expect(page.locator("#map-info")).to_have_attribute("data-points", "254", timeout=60_000)
        expect(page.locator("#tokens-info")).to_contain_text("254 tools")
        expect(page.locator("#usage-info")).to_contain_text("No feedback yet")
        assert page.evaluate("document.getElementById('map').width") > 0

        assert no_sideways_scroll(page), "the page scrolls sideways at this width"
        assert errors == []
        browser.close()
    assert httpx.get(served + "/favicon.ico").status_code == 200


@pytest.mark.slow
def test_a_20000_tool_catalog_shows_its_first_view_light(tmp_path: Path) -> None:
    """First view (overview, the first catalog page, the first findings page) of 25 rows in under
    5 MB, at desktop and phone widths, once the server has loaded the catalog and computed its lint
    report. Its seconds are printed here and measured by `toolsift perf --curation` (aim: 2 s):
    a timed assertion fails on a busy machine, not on a slow page."""
    import time

    from playwright.sync_api import expect, sync_playwright

    from toolsift.bench.synthetic import synthetic_catalog
    from toolsift.embeddings import HashingEmbedder
    from toolsift.router import Router

    folder = Router.build(synthetic_catalog(20_000), HashingEmbedder(64)).save(tmp_path / "index")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "toolsift", "serve", "--index", str(folder), "--port", str(port)]
    environment = {**os.environ, "TOOLSIFT_CACHE_DIR": "off", "TOOLSIFT_FEEDBACK_TOKEN": FEEDBACK["X-API-Key"]}
    process = subprocess.Popen(command, env=environment)
    try:
        wait_until_serving(url, process)
        started = time.perf_counter()
        assert httpx.get(url + "/lint", params={"limit": 1}, timeout=300).status_code == 200  # the report is ready
        report_seconds = time.perf_counter() - started
        with sync_playwright() as playwright:
            browser, page, errors = browser_page(playwright, DESKTOP)
            sizes: list[int] = []
            page.on("requestfinished", lambda request: sizes.append(request.sizes()["responseBodySize"]))
            started = time.perf_counter()
            page.goto(url + "/")
            expect(page.locator("#tool-count")).to_have_text("20000", timeout=10_000)
            expect(page.locator("#catalog-table tr.tool-row")).to_have_count(25, timeout=10_000)
            expect(page.locator("#findings")).to_have_attribute("data-severity", "problems", timeout=10_000)
            seconds = time.perf_counter() - started
            transferred = sum(sizes)
            print(
                f"20,000 tools: first view {seconds:.2f} s, {transferred / 1e6:.2f} MB; lint report {report_seconds:.1f} s"
            )
            assert transferred < 5_000_000  # its speed: `toolsift perf --curation` (RESULTS.md), not a timed test
            first_tool = page.locator("#catalog-table .tool-link").first.inner_text()
            body = {"query": "the request a user sent", "tool": first_tool}
            assert httpx.post(url + "/feedback", json=body, headers=FEEDBACK).status_code == 200
            page.click("#map-button")  # the map of all 20,000, and the feedback chart
            expect(page.locator("#map-info")).to_have_attribute("data-points", "20000", timeout=30_000)
            expect(page.locator("#usage-info")).to_contain_text("1 tools named in feedback")
            assert errors == []
            phone = browser.new_page(viewport=PHONE)  # the same first view at phone width
            phone.on("pageerror", lambda error: errors.append(str(error)))
            started = time.perf_counter()
            phone.goto(url + "/")
            expect(phone.locator("#catalog-table tr.tool-row")).to_have_count(25, timeout=10_000)
            expect(phone.locator("#findings")).to_have_attribute("data-severity", "problems", timeout=10_000)
            print(f"20,000 tools at phone width: first view {time.perf_counter() - started:.2f} s")
            assert no_sideways_scroll(phone) and errors == []
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_map_carries_accuracy_and_usage_when_they_exist(tiny_router: object, tmp_path: Path) -> None:
    """Per-tool recall from TOOLSIFT_LINT_QUERIES and feedback counts, per tool, on /catalog/map."""
    from fastapi.testclient import TestClient

    from toolsift.service import create_app
    from toolsift.settings import Settings

    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "\n".join(
            json.dumps({"id": str(n), "query": text, "relevant": [tool]})
            for n, (text, tool) in enumerate(
                [("send an email to Bob", "send_email"), ("weather in Oslo", "get_weather")]
            )
        )
    )
    settings = Settings(lint_queries=queries, feedback="open")
    with TestClient(create_app(tiny_router, settings=settings)) as client:  # type: ignore[arg-type]
        before = client.get("/catalog/map").json()
        assert before["columns"] == ["name", "x", "y", "tokens", "recall@5", "feedback", "group"]
        rows = {row[0]: row for row in before["tools"]}
        assert rows["send_email"][4] == 1.0 and rows["delete_file"][4] is None and rows["send_email"][5] == 0
        assert client.post("/feedback", json={"query": "mail Ana", "tool": "send_email"}).status_code == 200
        after = {row[0]: row for row in client.get("/catalog/map").json()["tools"]}
        assert after["send_email"][5] == 1 and all(
            -1.0 <= row[1] <= 1.0 and -1.0 <= row[2] <= 1.0 for row in after.values()
        )


def test_the_api_docs_load_their_assets_from_the_service_not_a_cdn(tiny_router: Any) -> None:
    import re

    from fastapi.testclient import TestClient

    from toolsift.service import create_app

    with TestClient(create_app(tiny_router)) as client:
        page = client.get("/docs")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert sources and all(source.startswith("/") for source in sources), sources  # nothing from elsewhere
        for source in sources:
            asset = client.get(source)
            assert asset.status_code == 200 and len(asset.content) > 100, source
        redoc = client.get("/redoc").text
        assert all(s.startswith("/") for s in re.findall(r'(?:src|href)="([^"]+)"', redoc)), redoc


@pytest.mark.model
def test_the_api_docs_render_offline_in_chromium(served: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser, page, errors = browser_page(playwright, {"width": 1280, "height": 800})
        elsewhere: list[str] = []
        page.on("request", lambda request: None if request.url.startswith(served) else elsewhere.append(request.url))
        page.goto(served + "/docs")
        expect(page.locator(".opblock-summary-path", has_text="/route").first).to_be_visible(timeout=60_000)
        assert elsewhere == [] and errors == []
        browser.close()


def test_the_page_reviews_and_approves_an_mcp_servers_changes(tmp_path: Path) -> None:
    """`serve --mcp-servers`: with the admin token entered, the page lists what waits for approval
    (an edited tool, a new tool) and approves one with a click; without it, it says what to enter."""
    if CHROMIUM is None:
        pytest.fail("headless Chromium is needed for this test: `make browser` (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright
    from test_mcp import CHANGED, FIXTURE_SERVER, TOOLS, write_tools

    tools_file = tmp_path / "tools.json"
    write_tools(tools_file, TOOLS)
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"fixture": {
        "command": sys.executable, "args": [str(FIXTURE_SERVER), str(tools_file), "stdio"], "timeout": 60}}}))  # fmt: skip
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    admin = "admin-token-0123456789"
    environment = {**os.environ, "TOOLSIFT_ADMIN_TOKEN": admin, "TOOLSIFT_CACHE_DIR": "off", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "toolsift", "serve", "--mcp-servers", str(servers), "--port", str(port)]
    process = subprocess.Popen(command, env=environment, stderr=subprocess.DEVNULL)
    try:
        wait_until_serving(url, process)
        write_tools(tools_file, CHANGED)
        status = {"Authorization": f"Bearer {admin}"}
        for _ in range(600):
            if len(httpx.get(url + "/admin/status", headers=status).json()["live"]["quarantined"]) == 2:
                break
            time.sleep(0.1)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(url + "/")
            expect(page.locator("#review")).to_contain_text("Enter the admin token", timeout=30_000)
            page.fill("#api-key", admin)
            page.click("#api-key-save")
            rows = page.locator("#quarantine-table tr")
            expect(rows).to_have_count(3, timeout=30_000)  # a header and two tools
            expect(page.locator("#quarantine-table")).to_contain_text("translate_text")
            page.click("#quarantine-table button[data-tool='translate_text']")
            expect(rows).to_have_count(2, timeout=30_000)
            expect(page.locator("#quarantine-table")).to_contain_text("send_email")
            assert errors == []
            browser.close()
        assert "translate_text" in httpx.get(url + "/tools").text  # approved: served
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_the_page_lists_groups_and_browses_an_untagged_catalog(tmp_path: Path) -> None:
    """Tools without tags (every plain OpenAI or Anthropic file) browse without an error; the
    groups and what each is for are listed, and each tool's group shown."""
    if CHROMIUM is None:
        pytest.fail("headless Chromium is needed for this test: `make browser` (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    from toolsift import Router
    from toolsift.catalog import parse_catalog
    from toolsift.embeddings import HashingEmbedder

    catalog = parse_catalog(
        {
            "groups": {"mail": "Read and send email"},
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "send_email", "description": "Send an email.", "x-group": "mail"},
                },
                {"name": "search_emails", "description": "Search the mailbox.", "input_schema": {}, "x-group": "mail"},
                {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city."}},
            ],
        }
    )
    folder = Router.build(catalog, HashingEmbedder(64)).save(tmp_path / "index")
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "toolsift", "serve", "--index", str(folder), "--port", str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        with sync_playwright() as playwright:
            browser, page, errors = browser_page(playwright, DESKTOP)
            page.goto(url + "/")
            expect(page.locator("#groups-table tr")).to_have_count(2, timeout=30_000)
            assert page.locator("#groups-table tr").nth(1).all_inner_texts()[0].split("\t") == [
                "mail", "2", "Read and send email",
            ]  # fmt: skip
            expect(page.locator("#catalog-table tr.tool-row")).to_have_count(3, timeout=30_000)
            groups = page.locator("#catalog-table tr.tool-row td:nth-child(2)").all_inner_texts()
            assert sorted(groups) == ["", "mail", "mail"]
            page.locator("#catalog-table tr.tool-row .tool-link").first.click()
            expect(page.locator("#tool-name")).to_be_visible(timeout=30_000)

            # the map: hover names a tool and its group, the wheel zooms, colours by group
            page.click("#map-button")
            expect(page.locator("#map-info")).to_have_attribute("data-points", "3", timeout=30_000)
            expect(page.locator("#usage-chart")).to_be_hidden()  # no feedback: a note, not an empty box
            points = httpx.get(url + "/catalog/map").json()["tools"]
            name, x, y = next(row[:3] for row in points if row[6] == "mail")
            page.locator("#map").scroll_into_view_if_needed()
            box = page.locator("#map").bounding_box()
            assert box is not None
            at = (box["x"] + (x + 1.05) / 2.1 * box["width"], box["y"] + (1.05 - y) / 2.1 * box["height"])
            page.mouse.move(*at)
            expect(page.locator("#map-tip")).to_contain_text(f"{name} · group mail")
            description = httpx.get(f"{url}/tools/{name}").json()["formats"]["toolsift"]["description"]
            expect(page.locator("#map-tip")).to_contain_text(description)  # fetched on the first hover
            page.mouse.wheel(0, -300)
            expect(page.locator("#map")).not_to_have_attribute("data-scale", "1")
            assert page.locator("#map-colour").input_value() == "group"
            page.locator("#groups-table").scroll_into_view_if_needed()
            page.locator("#catalog-table .tag-link").first.click() if page.locator(
                "#catalog-table .tag-link"
            ).count() else None
            assert errors == []
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_page_shows_what_changed_since_an_earlier_catalog(tmp_path: Path) -> None:
    if CHROMIUM is None:
        pytest.fail("headless Chromium is needed for this test: `make browser` (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    from toolsift import Router
    from toolsift.catalog import parse_catalog
    from toolsift.embeddings import HashingEmbedder

    from conftest import TINY_TOOLS

    folder = Router.build(parse_catalog(TINY_TOOLS), HashingEmbedder(64)).save(tmp_path / "index")
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "1", "query": "send a fax to the lawyer", "relevant": ["send_email"]}))
    token = "admin-token-0123456789"
    env = {**os.environ, "TOOLSIFT_ADMIN_TOKEN": token, "TOOLSIFT_LINT_QUERIES": str(queries)}
    port = free_port()
    command = [sys.executable, "-m", "toolsift", "serve", "--index", str(folder), "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        headers = {"Authorization": f"Bearer {token}"}
        fax = {"name": "send_fax", "description": "Send a fax to a phone number, such as a lawyer's office."}
        assert httpx.post(url + "/admin/tools", json={"tools": [fax]}, headers=headers, timeout=60).status_code == 200
        with sync_playwright() as playwright:
            browser, page, errors = browser_page(playwright, DESKTOP)
            page.goto(url + "/")
            expect(page.locator("#changes")).to_contain_text("Enter the admin token", timeout=30_000)
            page.fill("#api-key", token)
            page.click("#api-key-save")
            expect(page.locator("#changes")).not_to_contain_text("Enter the admin token", timeout=30_000)
            page.click("#changes-button", timeout=30_000)
            expect(page.locator("#changes-summary")).to_have_text("1 added, 0 removed, 0 changed.", timeout=30_000)
            assert page.locator("#changes-list li").all_inner_texts() == ["+ send_fax"]
            expect(page.locator("#changes-result")).to_contain_text("of 1 labelled requests route differently")
            assert errors == []
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("viewport", "size"), [(DESKTOP, 2_000), (PHONE, 2_000), (DESKTOP, 1)], ids=["desktop", "phone", "one-tool"]
)
def test_an_untagged_catalog_works_at_both_widths(tmp_path: Path, viewport: dict[str, int], size: int) -> None:
    """What most OpenAI and Anthropic files are: no tags, no groups (2,000 tools, or one). Every
    part of the page works (overview, catalog, a tool, findings, a query, the map) without a
    console error and without scrolling sideways."""
    from playwright.sync_api import expect, sync_playwright

    from toolsift.bench.synthetic import synthetic_catalog
    from toolsift.catalog import Catalog
    from toolsift.embeddings import HashingEmbedder
    from toolsift.router import Router

    tools = [tool.model_copy(update={"tags": ()}) for tool in synthetic_catalog(max(size, 8))][:size]
    folder = Router.build(Catalog(tools, source="untagged"), HashingEmbedder(64)).save(tmp_path / "index")
    port = free_port()
    command = [sys.executable, "-m", "toolsift", "serve", "--index", str(folder), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        with sync_playwright() as playwright:
            browser, page, errors = browser_page(playwright, viewport)
            page.goto(url + "/")
            expect(page.locator("#tool-count")).to_have_text(str(size), timeout=30_000)
            expect(page.locator("#tags")).to_contain_text("No tags")
            expect(page.locator("#catalog-table tr.tool-row")).to_have_count(min(size, 25), timeout=30_000)
            page.locator("#catalog-table .tool-link").first.click()
            expect(page.locator("#tool-name")).to_be_visible(timeout=30_000)
            expect(page.locator("#findings")).to_have_attribute("data-severity", "problems", timeout=60_000)
            page.fill("#query", tools[-1].description)
            page.click("#route-button")
            expect(page.locator("#payload-tokens")).to_contain_text("tool definitions", timeout=30_000)
            page.click("#map-button")
            expect(page.locator("#map-info")).to_have_attribute("data-points", str(size), timeout=60_000)
            assert no_sideways_scroll(page), "the page scrolls sideways at this width"
            assert errors == []
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
