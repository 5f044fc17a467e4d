"""Micro-batching of concurrent query embeddings: right vectors to the right caller, batches that
grow with concurrency, errors handed to every waiting caller, a worker that ends when idle."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from toolsift.embeddings import HashingEmbedder, MicroBatcher
from toolsift.embeddings import batching as batching_module
from toolsift.types import Matrix


class SlowEmbedder(HashingEmbedder):
    """A hashing embedder whose calls take a while (as a model's do), counting them."""

    def __init__(self, fail_on: str | None = None) -> None:
        super().__init__(32)
        self.calls: list[int] = []
        self.fail_on = fail_on

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(len(texts))
        time.sleep(0.01)
        if self.fail_on in texts:
            raise RuntimeError("the model failed")
        return super().embed_queries(texts)


def test_concurrent_callers_get_their_own_vectors_in_fewer_batches() -> None:
    inner = SlowEmbedder()
    batcher = MicroBatcher(inner, max_batch=16)
    texts = [f"query number {i}" for i in range(64)]
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda text: batcher.embed_queries([text, text.upper()]), texts))
    for text, vectors in zip(texts, results, strict=True):
        assert np.array_equal(vectors, HashingEmbedder(32).embed_queries([text, text.upper()]))
    assert sum(inner.calls) == 128 and len(inner.calls) < 64 and max(inner.calls) <= 16 + 2
    assert batcher.batches == len(inner.calls) and batcher.batched_texts == 128


def test_a_lone_caller_is_not_kept_waiting() -> None:
    inner = SlowEmbedder()
    batcher = MicroBatcher(inner)
    started = time.perf_counter()
    batcher.embed_queries(["alone"])
    assert time.perf_counter() - started < 0.5 and inner.calls == [1]
    assert batcher.embed_queries([]).shape == (0, 32)


def test_an_error_reaches_every_caller_of_the_batch_and_the_batcher_goes_on() -> None:
    batcher = MicroBatcher(SlowEmbedder(fail_on="boom"))
    barrier = threading.Barrier(4)

    def call(text: str) -> str:
        barrier.wait()
        try:
            batcher.embed_queries([text])
            return "ok"
        except RuntimeError as error:
            return str(error)

    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(call, ["a", "b", "boom", "c"]))
    assert "the model failed" in outcomes  # the failing request's batch saw the error
    assert batcher.embed_queries(["after"]).shape == (1, 32)  # and the worker is still there


def test_the_worker_ends_when_idle_and_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batching_module, "IDLE_EXIT", 0.05)
    batcher = MicroBatcher(SlowEmbedder())
    batcher.embed_queries(["first"])
    deadline = time.monotonic() + 5
    while batcher._worker is not None:  # noqa: SLF001 - the worker's life is what is tested
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert batcher.embed_queries(["again"]).shape == (1, 32)


def test_the_service_sets_the_largest_batch_one_turns_batching_off() -> None:
    """TOOLSIFT_QUERY_BATCH: batchers the service creates embed at most that many queries a call."""
    from toolsift.service import create_app
    from toolsift.settings import Settings

    try:
        create_app(settings=Settings(query_batch=1))
        inner = SlowEmbedder()
        batcher = MicroBatcher(inner)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: batcher.embed_queries([f"query {i}"]), range(32)))
        assert inner.calls == [1] * 32  # each request on its own
    finally:
        batching_module.set_max_batch(batching_module.DEFAULT_MAX_BATCH)
    assert MicroBatcher(SlowEmbedder()).max_batch == batching_module.DEFAULT_MAX_BATCH
    assert Settings.from_env({"TOOLSIFT_QUERY_BATCH": "8"}).query_batch == 8
