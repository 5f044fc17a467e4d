"""``toolsift tune``: pairs, training, the held-back check, publishing, rollback, and every
process following a tune. The fast tests use the hashing model with an adapter (torch only); the
``model`` tests fine-tune the real all-MiniLM-L6-v2 on a small catalog whose users speak a slang
its descriptions never use."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import httpx
import numpy as np
import pytest
from click.testing import CliRunner
from test_replicas import ADMIN, RedisServer, Replica

from toolsift import Catalog, Router
from toolsift.catalog import parse_catalog
from toolsift.cli import main
from toolsift.embeddings import get_embedder, model_beside
from toolsift.embeddings.tuned import AdaptedEmbedder, tuning_manifest
from toolsift.errors import TuningRefused
from toolsift.router.usage import Feedback, FeedbackLimits, UsageBook, view_offsets
from toolsift.tuning import models
from toolsift.tuning.pairs import Pair, collect, hold_out
from toolsift.tuning.trainer import Recipe, batches
from toolsift.tuning.tune import TuneOptions, history, publish, rollback, tune

from conftest import free_port, wait_until_serving

VERBS = {"download": "yoink", "delete": "yeet", "view": "peep", "share": "slide"}
"""What the tools do, and the slang their users say it in (never in a description)."""
OBJECTS = ["report", "invoice", "photo", "contract", "playlist", "ticket", "receipt", "slide deck",
           "spreadsheet", "podcast", "recipe", "passport scan"]  # fmt: skip
TEMPLATES = ["{slang} the {obj} for me", "can you {slang} my {obj}", "please {slang} that {obj} now",
             "i need to {slang} the latest {obj}"]  # fmt: skip


KNOWN = OBJECTS[:6]
"""The objects whose tools have example requests; the others' tools have none (no one asked yet)."""


def slang_catalog(with_examples: bool = True) -> Catalog:
    """48 tools (verb x object); the tools of the ``KNOWN`` objects have two example requests."""
    tools = []
    for verb, slang in VERBS.items():
        for obj in OBJECTS:
            known = with_examples and obj in KNOWN
            examples = [t.format(slang=slang, obj=obj) for t in TEMPLATES[:2]] if known else []
            tools.append({
                "name": f"{verb}_{obj.replace(' ', '_')}",
                "description": f"{verb.capitalize()} the user's {obj}.",
                "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
                "examples": examples,
                "tags": [verb],
            })  # fmt: skip
    return parse_catalog(tools, source="slang")


def unseen_requests() -> list[tuple[str, str]]:
    """(request, tool) for the tools no example names, in the two templates no example uses."""
    return [
        (t.format(slang=slang, obj=obj), f"{verb}_{obj.replace(' ', '_')}")
        for verb, slang in VERBS.items()
        for obj in OBJECTS[len(KNOWN) :]
        for t in TEMPLATES[2:]
    ]


def rank_of(router: Router, request: str, tool: str) -> int:
    names = router.route(request, len(router.catalog), usage_pool=None, min_confidence=0.0).names
    return names.index(tool) + 1


# -- pairs and batches (no model) ------------------------------------------------------------


def test_pairs_are_the_examples_and_the_feedback_that_ranks() -> None:
    catalog = slang_catalog()
    book = UsageBook(FeedbackLimits(quorum=2))
    book.add(Feedback("grab that invoice", "download_invoice", contributor="key:alice"))
    book.add(Feedback("make the photo vanish", "delete_photo", contributor="client:10.0.0.1"))  # alone: no quorum
    book.add(Feedback("a tenant's request", "view_report", pool="acme", contributor="key:acme"))
    book.add(Feedback("yoink the report for me", "download_report", contributor="key:bob"))  # an example already
    book.add(Feedback('yoink the report named "grab that invoice"', "download_report", contributor="key:bob"))
    pairs = collect(catalog, book)
    assert Pair("grab that invoice", "download_invoice", "feedback") in pairs
    assert not any(p.query in ("make the photo vanish", "a tenant's request") for p in pairs)
    assert Pair('yoink the report named ""', "download_report", "feedback") in pairs  # trained as it is ranked
    assert len(pairs) == 2 * len(VERBS) * len(KNOWN) + 2  # each request once


def test_hold_out_holds_back_tools_with_their_requests_and_is_seeded() -> None:
    pairs = [Pair(f"request {i}", f"tool_{i % 20}") for i in range(100)]
    pairs += [Pair("a request for two", "tool_0"), Pair("a request for two", "tool_1")]
    train, held = hold_out(pairs, 0.25, seed=3)
    assert (train, held) == hold_out(pairs, 0.25, seed=3)
    held_tools = {p.tool for p in held}
    assert len(held_tools) == 5 and not held_tools & {p.tool for p in train}
    assert all(p.query not in {q.query for q in held} for p in train)
    two = [p for p in [*train, *held] if p.query == "a request for two"]
    assert {p.tool for p in two} & held_tools == {p.tool for p in held if p.query == "a request for two"}
    assert not two or len(two) == 2 or two[0] in held  # whole, or judged on its held tool alone
    split = hold_out([Pair("a request for two", "tool_0"), Pair("a request for two", "tool_1")], 0.5, seed=0)
    assert split[0] == [] and len(split[1]) == 1  # its kept tool neither trained on nor judged


def test_a_batch_never_holds_a_tool_or_a_request_twice() -> None:
    pairs = [Pair(f"request {i % 7}", f"tool_{i % 5}") for i in range(200)] + [Pair("x", "tool_0")] * 3
    for batch in batches(pairs, 4, seed=0):
        assert len({p.tool for p in batch}) == len(batch) == len({p.query for p in batch})


# -- adapter, publish, rollback (hashing model) ------------------------------------------------


@pytest.fixture
def slang_index(tmp_path: Path) -> Path:
    return Router.build(slang_catalog(), get_embedder("hashing-256")).save(tmp_path / "index")


def test_an_adapter_is_published_loaded_elsewhere_and_rolled_back(slang_index: Path) -> None:
    router = Router.load(slang_index)
    beside = model_beside(slang_index)
    pairs = collect(router.catalog)
    name, stats = models.make_adapter(router, pairs, Recipe(), beside)
    assert stats.pairs > 0 and name.startswith("tuned-")
    adapted = get_embedder(name, beside=beside)
    assert isinstance(adapted, AdaptedEmbedder)
    assert not np.allclose(adapted.matrix, np.eye(adapted.dimension))
    tuned = Router.build(router.catalog, adapted)
    publish(slang_index, "hashing-256", tuned)
    code = "from toolsift import Router; import sys; print(Router.load(sys.argv[1]).embedder.name)"
    loaded = subprocess.run([sys.executable, "-c", code, str(slang_index)], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == name  # a fresh process loads the tuned model from beside the index
    served = Router.load(slang_index)
    served.learn(Feedback("make the podcast go away", "delete_podcast", contributor="key:ops"))
    views = served.views("")
    assert views is not None  # feedback and examples are seen through the tuned model, not the old one
    row = int(np.searchsorted(views.tools, served.catalog.position("delete_podcast")))
    expected = adapted.embed_queries(["make the podcast go away"])[0]
    assert np.allclose(views.vectors[views.starts[row]], expected, atol=1e-5)
    assert np.allclose(served.embed_queries(["yoink it"])[0], adapted.embed_queries(["yoink it"])[0], atol=1e-5)
    with pytest.raises(TuningRefused, match="switched"):
        publish(slang_index, "hashing-256", tuned)  # the folder moved on: a stale tune is refused
    assert rollback(slang_index) == (name, "hashing-256")
    assert Router.load(slang_index).embedder.name == "hashing-256"
    with pytest.raises(TuningRefused, match="nothing to roll back"):
        rollback(slang_index)


def test_tune_refuses_too_few_pairs_and_changes_nothing(tmp_path: Path) -> None:
    folder = Router.build(slang_catalog(with_examples=False), get_embedder("hashing-64")).save(tmp_path / "index")
    before = (folder / "manifest.json").read_text()
    result = CliRunner().invoke(main, ["tune", "--index", str(folder), "--kind", "adapter"])
    assert result.exit_code == 1 and "fewer than 20" in result.output and "Add example requests" in result.output
    assert (folder / "manifest.json").read_text() == before


def test_a_tune_keeps_the_edits_made_while_it_trained(slang_index: Path) -> None:
    router = Router.load(slang_index)
    tuned = Router.build(router.catalog, get_embedder(models.make_adapter(router, collect(router.catalog), Recipe(),
                                                                          model_beside(slang_index))[0],
                                                         beside=model_beside(slang_index)))  # fmt: skip
    edited = parse_catalog([*(t.model_dump(exclude_none=True) for t in router.catalog),
                            {"name": "archive_report", "description": "Archive a report."}], source="edit")  # fmt: skip
    router.rebuilt(edited).save(slang_index)  # an admin edit lands while the model trained
    publish(slang_index, "hashing-256", tuned)
    assert "archive_report" in Router.load(slang_index).catalog


def test_a_tuned_model_discounts_its_views_by_what_it_shows_on_requests_it_never_saw(slang_index: Path) -> None:
    """Trained on the catalog's examples, the adapter pulls them onto their tools' texts: measured
    on them, its views' offset understates what a new request sees. The offset measured on the
    held-back requests is recorded with the model, loaded with it in a fresh process and used."""
    report = tune(slang_index, None, TuneOptions(kind="adapter", hold_out=0.3))
    assert report.published_model, report.reason
    views = tuning_manifest(model_beside(slang_index) / report.published_model)["views"]
    assert views["requests"] >= 2 * views["tools"] > 0
    served = Router.load(slang_index)
    by_tool: dict[int, list[str]] = {}
    for pair in collect(served.catalog):
        by_tool.setdefault(served.catalog.position(pair.tool), []).append(pair.query)
    ids = np.asarray(sorted(by_tool), dtype=np.int64)
    texts = dict(zip(ids.tolist(), served.index.vectors.vectors(ids), strict=True))
    requests = {tool: np.asarray(served.embed_queries(queries)) for tool, queries in by_tool.items()}
    (_, _, trained), *_ = view_offsets(requests, texts, [(0, served.embedder.dimension)])
    assert trained < views["offset"]
    seen = served.views("")  # the catalog's examples, as views
    assert seen is not None and [(a, b) for a, b, _ in seen.offsets] == [(0, served.embedder.dimension)]
    assert seen.offsets[0][2] == pytest.approx(views["offset"])
    code = "from toolsift import Router; import sys; print(Router.load(sys.argv[1]).embedder.view_offset_floor)"
    loaded = subprocess.run([sys.executable, "-c", code, str(slang_index)], capture_output=True, text=True, check=True)
    assert float(loaded.stdout) == pytest.approx(views["offset"])


# -- the real model -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_slang_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("slang") / "index"
    return Router.build(slang_catalog(), get_embedder("all-MiniLM-L6-v2")).save(folder)


@pytest.mark.model
@pytest.mark.slow
def test_tuning_moves_requests_to_their_tools_even_unseen_wording(tmp_path: Path) -> None:
    folder = Router.build(slang_catalog(), get_embedder("all-MiniLM-L6-v2")).save(tmp_path / "index")
    router = Router.load(folder)
    fed = ("please yoink that contract now", "download_contract")
    book = UsageBook()
    book.add(Feedback(*fed, contributor="key:ops"))
    name, _ = models.make_full(router, collect(router.catalog, book), replace(Recipe(), epochs=2),
                               model_beside(folder), model_beside(folder), deadline=time.monotonic() + 600)  # fmt: skip
    tuned = Router.build(router.catalog, get_embedder(name, beside=model_beside(folder)))
    assert rank_of(tuned, *fed) < rank_of(router, *fed) or rank_of(router, *fed) == 1
    unseen = unseen_requests()
    before = np.mean([1 / rank_of(router, q, t) for q, t in unseen])
    after = np.mean([1 / rank_of(tuned, q, t) for q, t in unseen])
    assert after > before + 0.1, (before, after)


@pytest.mark.model
@pytest.mark.slow
def test_tune_publishes_a_better_model_and_refuses_a_worse_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = Router.build(slang_catalog(), get_embedder("all-MiniLM-L6-v2")).save(tmp_path / "index")

    original = models.tool_texts

    def scrambled(router: Router) -> dict[str, str]:  # each request trained toward another object's tool
        texts = original(router)
        names = list(texts)
        return {name: texts[names[(i + 1) % len(names)]] for i, name in enumerate(names)}

    monkeypatch.setattr(models, "tool_texts", scrambled)
    report = tune(folder, None, TuneOptions(kind="full", hold_out=0.3, recipe=replace(Recipe(), epochs=2)))
    assert report.published_model is None and "worse" in report.reason, report.reason
    assert Router.load(folder).embedder.name == "all-MiniLM-L6-v2"
    assert not list(model_beside(folder).glob("tuned-*"))  # the refused model is not kept
    monkeypatch.undo()
    result = CliRunner().invoke(main, ["tune", "--index", str(folder), "--json", "--hold-out", "0.3", "--epochs", "2"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    published = document["published_model"]
    assert published and published.startswith("tuned-"), document["reason"]
    best = next(c for c in document["candidates"] if c["name"] == published)
    assert best["check"]["difference"][0] - best["check"]["difference"][1] > 0
    manifest = tuning_manifest(model_beside(folder) / published)
    assert manifest["previous_model"] == "all-MiniLM-L6-v2" and manifest["held_out"]["requests"] > 0
    assert manifest["training"]["pairs"] == document["train_pairs"]
    assert [entry["name"] for entry in history(folder)][0] == published
    served = Router.load(folder)
    assert served.embedder.name == published
    unseen = unseen_requests()
    base = Router.build(served.catalog, get_embedder("all-MiniLM-L6-v2"))
    assert np.mean([1 / rank_of(served, q, t) for q, t in unseen]) > np.mean(
        [1 / rank_of(base, q, t) for q, t in unseen]
    )


def serve(folder: Path, port: int, log: Path, **extra: str) -> subprocess.Popen[bytes]:
    environment = {**os.environ, "TOOLSIFT_CACHE_DIR": "off", "TOOLSIFT_RELOAD_INTERVAL": "0.5",
                   **{"TOOLSIFT_" + k.upper(): v for k, v in extra.items()}}  # fmt: skip
    command = [sys.executable, "-m", "toolsift", "serve", "--index", str(folder), "--port", str(port)]
    with open(log, "ab") as handle:
        return subprocess.Popen(command, env=environment, stdout=handle, stderr=handle)


def served_model(url: str) -> str:
    return str(httpx.get(url + "/healthz", timeout=10).json().get("model"))


@pytest.mark.model
@pytest.mark.slow
def test_two_workers_follow_a_tune_a_restart_and_a_rollback(tmp_path: Path) -> None:
    folder = Router.build(slang_catalog(), get_embedder("all-MiniLM-L6-v2")).save(tmp_path / "index")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = serve(folder, port, tmp_path / "serve.log", workers="2")
    try:
        wait_until_serving(url, process)
        result = CliRunner().invoke(main, ["tune", "--index", str(folder), "--json", "--kind", "full", "--epochs", "2",
                                           "--hold-out", "0.3"])  # fmt: skip
        published = json.loads(result.stdout)["published_model"]
        assert published, result.output
        _until(lambda: all(served_model(url) == published for _ in range(8)), "the workers did not follow the tune")
        request = {"query": "please peep that passport scan now", "k": 3}
        expected = Router.load(folder).route(request["query"], 3).names  # type: ignore[arg-type]
        for _ in range(6):  # whichever worker answers ranks with the tuned model
            assert [m["name"] for m in httpx.post(url + "/route", json=request).json()["matches"]] == expected
    finally:
        process.terminate()
        process.wait(timeout=60)
    process = serve(folder, port, tmp_path / "serve.log", workers="2")  # a restart serves the tuned model
    try:
        wait_until_serving(url, process)
        assert served_model(url) == published
        assert CliRunner().invoke(main, ["tune", "--index", str(folder), "--rollback"]).exit_code == 0
        _until(lambda: all(served_model(url) == "all-MiniLM-L6-v2" for _ in range(8)), "the rollback was not followed")
    finally:
        process.terminate()
        process.wait(timeout=60)


def _until(condition: object, message: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, message
        time.sleep(0.3)


@pytest.mark.model
@pytest.mark.slow
def test_admin_tune_runs_once_and_two_replicas_follow_it(tmp_path: Path) -> None:
    from toolsift.tuning.jobs import tune_lock

    redis_server = RedisServer(tmp_path)
    redis_server.start()

    folder = Router.build(slang_catalog(), get_embedder("all-MiniLM-L6-v2")).save(tmp_path / "index")
    replicas = [Replica(folder, redis_server.url, tmp_path / "serve.log") for _ in range(2)]
    try:
        request = {"kind": "full", "epochs": 2, "hold_out": 0.3}
        assert httpx.post(replicas[0].url + "/admin/tune", json=request).status_code == 401  # admin only
        assert httpx.post(replicas[0].url + "/admin/tune", json={"kind": "gpu"}, headers=ADMIN).status_code == 422
        with tune_lock(folder):  # another tune holds the index
            busy = httpx.post(replicas[1].url + "/admin/tune", json=request, headers=ADMIN)
            assert busy.status_code == 409 and "another tune" in busy.json()["error"]["message"]
        started = httpx.post(replicas[0].url + "/admin/tune", json=request, headers=ADMIN)
        assert started.status_code == 202, started.text

        def status() -> dict[str, object]:
            return dict(httpx.get(replicas[1].url + "/admin/tune", headers=ADMIN).json())

        _until(lambda: status()["state"] not in ("running", "never"), "the tune did not finish", seconds=600)
        document = status()
        assert document["state"] == "done", document
        published = document["report"]["published_model"]  # type: ignore[index]
        assert published, document
        _until(lambda: all(served_model(r.url) == published for r in replicas), "the replicas did not follow")
    finally:
        for replica in replicas:
            replica.stop()
        redis_server.stop()


def test_tune_status_says_never_running_done_or_interrupted(slang_index: Path) -> None:
    from toolsift.tuning.jobs import read_status, status_path, tune_lock, write_status

    assert read_status(slang_index)["state"] == "never"
    with tune_lock(slang_index):
        write_status(slang_index, "running")
        assert read_status(slang_index)["state"] == "running"
        with pytest.raises(TuningRefused, match="another tune"), tune_lock(slang_index):
            pass
    assert read_status(slang_index)["state"] == "interrupted"  # its process let go without saying how it went
    result = CliRunner().invoke(main, ["tune", "--index", str(slang_index), "--kind", "adapter", "--json", "-q"])
    assert result.exit_code == 0, result.output
    status = json.loads(CliRunner().invoke(main, ["tune", "--index", str(slang_index), "--status"]).stdout)
    assert status["state"] == "done" and status["report"] == json.loads(result.stdout)
    assert status_path(slang_index).is_file()
    listed = json.loads(CliRunner().invoke(main, ["tune", "--index", str(slang_index), "--history"]).stdout)
    assert [entry["name"] for entry in listed] == (
        [status["report"]["published_model"]] if status["report"]["published_model"] else []
    )


def test_the_tuning_bench_scores_unknown_tools_with_each_method() -> None:
    from toolsift.bench.datasets import Dataset
    from toolsift.bench.tuning import run_tuning_curve, split_by_tool, tuning_table
    from toolsift.catalog.queries import Query

    catalog = slang_catalog(with_examples=False)
    queries = tuple(
        Query(f"q{i}", text, (tool,)) for i, (text, tool) in enumerate(
            (t.format(slang=slang, obj=obj), f"{verb}_{obj.replace(' ', '_')}")
            for verb, slang in VERBS.items() for obj in OBJECTS for t in TEMPLATES)
    )  # fmt: skip
    dataset = Dataset("slang", catalog, queries)
    fed, scored = split_by_tool(dataset.with_tools, catalog.names, 0.5, seed=1)
    assert fed and scored and not {t for q in fed for t in q.relevant} & {t for q in scored for t in q.relevant}
    [point] = run_tuning_curve(dataset, get_embedder("hashing-256"), [0.5], [5], kinds=["auto", "adapter"])
    assert set(point.recall) == {
        "toolsift", "toolsift+feedback", "toolsift+tuned", "toolsift+tuned+feedback",
        "toolsift+tuned:adapter", "toolsift+tuned:adapter+feedback",
    }  # fmt: skip
    assert point.scored == len(scored) and point.training["adapter"]["pairs_seen"] > 0
    assert "toolsift+tuned:adapter - toolsift" in point.difference
    assert "toolsift+tuned+feedback - toolsift+feedback" in point.difference
    assert point.selection["candidates"].keys() == {"adapter"}  # the hashing model takes no whole fine-tune
    assert "| slang | tool | 0.5 |" in tuning_table([point])
    assert set(point.route_p50_ms) == {"toolsift route", "toolsift+tuned route", "toolsift+tuned:adapter route"}
    # one kind alone is labelled toolsift+tuned, and its row shows that kind's training figures
    [alone] = run_tuning_curve(dataset, get_embedder("hashing-256"), [0.5], [5], kinds=["adapter"])
    row = next(line for line in tuning_table([alone]).splitlines() if "| toolsift+tuned |" in line)
    assert row.split("|")[-3].strip() == str(alone.training["adapter"]["seconds"])
    assert row.split("|")[-2].strip() == str(alone.training["adapter"]["pairs_per_second"])


def test_a_shadow_model_ranks_every_request_logs_both_and_serves_the_old(
    slang_index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from fastapi.testclient import TestClient

    from toolsift.service import create_app
    from toolsift.settings import Settings
    from toolsift.tuning.shadow import shadow_path, stage, staged_model
    from toolsift.tuning.tune import promote

    router = Router.load(slang_index)
    beside = model_beside(slang_index)
    name, _ = models.make_adapter(router, collect(router.catalog), Recipe(), beside)
    stage(slang_index, Router.build(router.catalog, get_embedder(name, beside=beside)))
    assert staged_model(slang_index) == name and Router.load(slang_index).embedder.name == "hashing-256"
    settings = Settings(index_path=slang_index, reload_interval=0)
    requests = [q for q, _ in unseen_requests()[:20]]
    with caplog.at_level("INFO", logger="toolsift.shadow"), TestClient(create_app(settings=settings)) as client:
        for text in requests:
            served = client.post("/route", json={"query": text + " today", "k": 3, "tags": ["view"]}).json()
            assert all(m["name"].startswith("view_") for m in served["matches"])
            answer = client.post("/route", json={"query": text, "k": 3}).json()
            expected = router.route(text, 3).names
            assert [m["name"] for m in answer["matches"]] == expected  # the old model serves
        deadline = time.monotonic() + 20
        while len([r for r in caplog.records if r.name == "toolsift.shadow" and "served" in r.message]) < 40:
            assert time.monotonic() < deadline, "the shadow did not rank every request"
            time.sleep(0.05)
        metrics = client.get("/metrics").text
    lines = [json.loads(r.message) for r in caplog.records if r.name == "toolsift.shadow" and "served" in r.message]
    assert all(text not in json.dumps(lines) for text in requests)  # digests, never the request
    assert all(line["model"] == name for line in lines)
    digests = {hashlib.sha256((text + " today").encode()).hexdigest()[:16] for text in requests}
    ruled = [line for line in lines if line["request"] in digests]
    assert len(ruled) == 20 and all(name.startswith("view_") for line in ruled for name in line["shadow"])
    shadow = Router.load(shadow_path(slang_index), get_embedder(name, beside=beside))
    assert any(line["shadow"] == shadow.route(text, 3, min_confidence=0.0).names for line in lines for text in requests)
    assert 'toolsift_shadow_routes_total{outcome="same_top"}' in metrics or "different_top" in metrics
    assert promote(slang_index) == name
    assert Router.load(slang_index).embedder.name == name and staged_model(slang_index) is None
