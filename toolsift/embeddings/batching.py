"""Micro-batching of query embeddings under concurrent load.

Requests from many threads (the service routes in a thread pool) go to one worker thread. The
worker takes the first waiting request, then every request already waiting (up to ``max_batch``
texts; after at most ``window`` seconds more), and embeds them in one call: a lone request waits
for nothing, and under load the batch grows by itself while the previous one is being embedded,
so throughput grows with concurrency.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from toolsift.embeddings.base import Embedder, EmbedderWrapper
from toolsift.types import Matrix

DEFAULT_MAX_BATCH = 32
_max_batch = DEFAULT_MAX_BATCH
"""The ``max_batch`` of batchers created from now on in this process (``set_max_batch``)."""
DEFAULT_WINDOW = 0.0
"""Seconds the worker waits for more requests after the first; 0: only those already waiting."""
IDLE_EXIT = 2.0
"""Seconds without a request after which the worker thread ends (a new one starts on demand)."""


def set_max_batch(texts: int) -> None:
    """Batchers created from now on embed at most ``texts`` queries in one call (1: each request
    on its own; ``TOOLSIFT_QUERY_BATCH``)."""
    global _max_batch
    _max_batch = max(1, texts)


@dataclass
class _Request:
    texts: Sequence[str]
    done: threading.Event = field(default_factory=threading.Event)
    vectors: Matrix | None = None
    error: BaseException | None = None


class MicroBatcher(EmbedderWrapper):
    """``inner``, with ``embed_queries`` calls from concurrent threads embedded together."""

    def __init__(self, inner: Embedder, *, max_batch: int | None = None, window: float = DEFAULT_WINDOW) -> None:
        super().__init__(inner)
        self.max_batch = max_batch or _max_batch
        self.window = window
        self.batches = 0
        self.batched_texts = 0
        self._queue: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._start = threading.Lock()

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        request = _Request(texts)
        self._queue.put(request)
        self._ensure_worker()  # after the put: a worker that is ending sees the request and stays
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.vectors is not None
        return request.vectors

    def _ensure_worker(self) -> None:
        if self._worker is not None and self._worker.is_alive():
            return
        with self._start:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="toolsift-query-batcher", daemon=True)
                self._worker.start()

    def _work(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=IDLE_EXIT)
            except queue.Empty:
                with self._start:
                    if self._queue.empty():
                        self._worker = None
                        return
                continue
            self._run(self._gather(first))

    def _gather(self, first: _Request) -> list[_Request]:
        """``first`` and the requests waiting behind it, up to ``max_batch`` texts."""
        batch, size = [first], len(first.texts)
        deadline = time.monotonic() + self.window
        while size < self.max_batch:
            try:
                wait = deadline - time.monotonic()
                request = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            batch.append(request)
            size += len(request.texts)
        return batch

    def _run(self, batch: list[_Request]) -> None:
        texts = [text for request in batch for text in request.texts]
        try:
            vectors = self.inner.embed_queries(texts)
        except BaseException as error:  # noqa: BLE001 - handed to every waiting caller
            for request in batch:
                request.error = error
                request.done.set()
            return
        self.batches += 1
        self.batched_texts += len(texts)
        start = 0
        for request in batch:
            request.vectors = vectors[start : start + len(request.texts)]
            start += len(request.texts)
            request.done.set()
