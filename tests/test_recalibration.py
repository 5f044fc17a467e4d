"""Per-match recalibration: once a catalog knows enough labelled requests (examples, feedback), each
match reports how often matches like it were the labelled tool there, while the answer abstains
exactly as before; refitted as feedback grows, the same after a restart."""

from __future__ import annotations

import random
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toolsift import Router
from toolsift.catalog import load_catalog
from toolsift.embeddings import Embedder
from toolsift.router.confidence import (
    CROWD_DEPTH,
    IDENTITY,
    RECALIBRATE_FROM,
    RECALIBRATION_GROWTH,
    Recalibration,
    crowd_share,
    fit_recalibration,
)
from toolsift.router.usage import Feedback
from toolsift.settings import BUNDLED_CATALOG

REQUESTS = Path(__file__).resolve().parents[1] / "benchmarks" / "abstention" / "default_catalog_requests.tsv"


def labelled() -> list[tuple[str, str]]:
    rows = (line.split("\t") for line in REQUESTS.read_text(encoding="utf-8").splitlines())
    return [(row[0], row[1]) for row in rows if len(row) == 2 and not row[0].startswith("#")]


def test_the_isotonic_fit_recovers_a_known_miscalibration() -> None:
    generator = np.random.default_rng(0)
    logits = generator.normal(0.0, 2.0, 20000)
    relevant = (generator.random(20000) < 1 / (1 + np.exp(-(0.5 * logits - 1.0)))).astype(float)
    fitted = fit_recalibration(1 / (1 + np.exp(-logits)), relevant, requests=20000)
    for said in (0.1, 0.5, 0.9):
        truth = 1 / (1 + np.exp(-(0.5 * np.log(said / (1 - said)) - 1.0)))
        assert fitted.apply(said) == pytest.approx(truth, abs=0.03)
    values = [fitted.apply(c) for c in np.linspace(0, 1, 101)]
    assert values == sorted(values) and values[0] > 0 and values[-1] < 1  # never reorders, never sure


def test_a_recalibration_never_fitted_changes_nothing() -> None:
    assert IDENTITY.apply(0.37) == 0.37
    assert Recalibration(((0.0, 0.05), (1.0, 0.5)), requests=100).apply(0.4) == pytest.approx(0.23)
    inverted = fit_recalibration(np.array([0.9, 0.8, 0.2]), np.array([0.0, 0.0, 1.0]), requests=3)
    assert inverted.apply(0.9) == inverted.apply(0.2) == pytest.approx(1 / 3, abs=1e-4)  # pooled: never reorders
    assert fit_recalibration(np.array([]), np.array([]), requests=0) == IDENTITY


@pytest.mark.model
def test_labels_that_often_name_another_tool_lower_each_match_but_not_the_abstention(
    real_embedder: Embedder,
) -> None:
    catalog = load_catalog(BUNDLED_CATALOG)
    pick = random.Random(0)
    clean = labelled()
    # half the labelled requests name some other tool: "is this the one" is right less often
    noisy = [(text, tool if i % 2 else pick.choice(catalog.names)) for i, (text, tool) in enumerate(clean)]
    routers = {}
    for name, rows in (("clean", clean), ("noisy", noisy)):
        routers[name] = Router.build(catalog, real_embedder)
        routers[name].learn([Feedback(text, tool, contributor=f"user{i}") for i, (text, tool) in enumerate(rows)])
    shape = Router(routers["noisy"].index, real_embedder, replace(routers["noisy"].ranking, recalibrate=False))
    shape.learn([Feedback(text, tool, contributor=f"user{i}") for i, (text, tool) in enumerate(noisy)])
    fitted = {name: router.calibration("").recalibration for name, router in routers.items()}
    assert fitted["noisy"].requests == len({text for text, _ in noisy}) >= RECALIBRATE_FROM
    assert all(fitted["noisy"].apply(c) < fitted["clean"].apply(c) for c in (0.2, 0.5, 0.9))
    assert shape.calibration("").recalibration == IDENTITY
    requests = ["will it rain in Seattle tomorrow?", "email the team the agenda", "write me a haiku", "thanks!"]
    answers = [(routers["noisy"].route(r, 5), shape.route(r, 5)) for r in requests]
    assert {mine.abstained for mine, _ in answers} == {True, False}  # both kinds of answer are compared
    for request, (mine, theirs) in zip(requests, answers, strict=True):
        assert (mine.abstained, mine.names) == (theirs.abstained, theirs.names)  # the same answer
        crowd = shape.route(request, CROWD_DEPTH, min_confidence=0).matches  # one part: asks for one tool
        share = crowd_share([m.confidence for m in crowd], 1)
        for reported, before in zip(mine.matches, theirs.matches, strict=True):
            assert reported.confidence == pytest.approx(fitted["noisy"].apply(before.confidence * share), abs=1e-3)
            assert reported.confidence != pytest.approx(before.confidence, abs=1e-3)
    named = routers["noisy"].route("send_email", 5)  # a tool named exactly keeps what it had
    assert (
        named.names[0] == "send_email"
        and named.matches[0].confidence == shape.route("send_email", 5).matches[0].confidence
    )
    around = [m.confidence for m in shape.route("send_email", CROWD_DEPTH, min_confidence=0).matches]
    assert named.matches[1].confidence == pytest.approx(
        fitted["noisy"].apply(shape.route("send_email", 5).matches[1].confidence * crowd_share(around, 1)), abs=1e-3
    )


@pytest.mark.model
def test_the_recalibration_follows_feedback_and_is_the_same_after_a_restart(
    tmp_path: Path, real_embedder: Embedder
) -> None:
    catalog = load_catalog(BUNDLED_CATALOG)
    requests = labelled()
    router = Router.build(catalog, real_embedder)
    router.learn([Feedback(text, tool, contributor=f"u{i}") for i, (text, tool) in enumerate(requests[:40])])
    assert router.calibration("").recalibration == IDENTITY  # too few to fit
    router.learn([Feedback(text, tool, contributor=f"v{i}") for i, (text, tool) in enumerate(requests[40:80])])
    first = router.calibration("").recalibration
    assert first.requests == 80
    router.learn(Feedback(*requests[80], contributor="w"))  # a little more: the same fit serves
    assert router.calibration("").recalibration is first
    grown = int(80 * RECALIBRATION_GROWTH) + 1
    router.learn([Feedback(text, tool, contributor=f"x{i}") for i, (text, tool) in enumerate(requests[81:grown])])
    router.calibration("")  # starts the refit in the background
    router.settle()
    assert router.calibration("").recalibration.requests == grown  # refitted
    assert router.calibration(None).recalibration == IDENTITY  # the catalog alone has no labels
    restarted = Router.load(router.save(tmp_path / "index"), real_embedder)
    restarted.learn([Feedback(text, tool, contributor=f"u{i}") for i, (text, tool) in enumerate(requests[:grown])])
    assert restarted.calibration("").recalibration == router.calibration("").recalibration


@pytest.mark.model
def test_the_fed_abstention_bench_reports_both_reliabilities_and_abstains_as_the_router_does(
    real_embedder: Embedder,
) -> None:
    from toolsift.bench.abstention import abstention_table, run_abstention
    from toolsift.bench.datasets import Dataset
    from toolsift.catalog.queries import Query

    catalog = load_catalog(BUNDLED_CATALOG)
    queries = tuple(Query(f"q{i}", text, (tool,)) for i, (text, tool) in enumerate(labelled()))
    router = Router.build(catalog, real_embedder)
    no_tool = {"en": ["write me a haiku about the sea", "thanks a lot!", "why do cats purr?"]}
    result = run_abstention(Dataset("bundled", catalog, queries), router, k=5, no_tool=no_tool, fed=0.5)
    assert result["fed"] + result["queries"] == len(queries) and result["fed"] >= RECALIBRATE_FROM
    assert result["recalibration"]["requests"] == result["fed"]  # fitted from what was learned
    assert result["reliability"]["bins"] != result["reliability_shape"]["bins"]
    assert "shape's confidence (before the crowd's share and any recalibration)" in abstention_table([result])
    default = next(row for row in result["rows"] if row["min_confidence"] == 0.1)
    served = [router.route(text, 5, min_confidence=0.1).abstained for text in no_tool["en"]]
    assert default["abstained_en"] == pytest.approx(sum(served) / len(served))  # the sweep is the router's rule


@pytest.mark.model
def test_a_refit_runs_off_the_request_path(real_embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    requests = labelled()
    router = Router.build(load_catalog(BUNDLED_CATALOG), real_embedder)
    router.learn([Feedback(text, tool, contributor=f"u{i}") for i, (text, tool) in enumerate(requests[:60])])
    first = router.calibration("").recalibration
    assert first.requests == 60
    release = threading.Event()
    fit = router._fit_recalibration

    def slow_fit(*args: Any) -> Recalibration:
        assert release.wait(60)
        return fit(*args)

    monkeypatch.setattr(router, "_fit_recalibration", slow_fit)
    router.learn([Feedback(text, tool, contributor=f"v{i}") for i, (text, tool) in enumerate(requests[60:100])])
    answer = router.route("email the team the agenda", 5)  # answered while the refit waits
    assert not answer.abstained and router.calibration("").recalibration is first
    release.set()
    router.settle()
    assert router.calibration("").recalibration.requests == 100
