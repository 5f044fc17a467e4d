"""Shadow routing: a tuned model that ``toolsift tune --shadow`` staged beside the index ranks
every request too, off the request's path, and the two rankings are logged; the served answer is
always the model in use. ``toolsift tune --promote`` then publishes it, ``--shadow-off`` drops it.

The shadow ranks on a thread of its own after the answer is made (a bounded backlog: past
``BACKLOG`` waiting requests, one is dropped and counted rather than queued); its names are cut to
what the caller may see, so the log says nothing a caller's own answer could not. One JSON line per
request on the ``toolsift.shadow`` logger (a digest of the request, never its text), and
``toolsift_shadow_routes_total{outcome}``: ``same_top``, ``different_top``, ``dropped``, ``failed``.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from toolsift.embeddings import get_embedder, model_beside
from toolsift.index import ToolIndex
from toolsift.router import Caller, Delivered, RankingConfig, RouteQuery, Router
from toolsift.tuning.shadow import shadow_path

logger = logging.getLogger("toolsift.shadow")
BACKLOG = 64


class Shadow:
    def __init__(self, count: Any) -> None:
        self._count = count
        self.router: Router | None = None
        self._seen: float | None = None
        self._waiting = 0
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(1, "toolsift-shadow")

    def refresh(self, index_path: Path, ranking: RankingConfig) -> None:
        """Load the staged shadow index when it appeared or changed; forget it when it is gone."""
        manifest = shadow_path(index_path) / "manifest.json"
        try:
            seen: float | None = manifest.stat().st_mtime
        except OSError:
            seen = None
        if seen == self._seen:
            return
        self._seen = seen
        if seen is None:
            self.router = None
            return
        try:
            model = ToolIndex.load(shadow_path(index_path)).manifest.model
            embedder = get_embedder(model, beside=model_beside(index_path))
            self.router = Router.load(shadow_path(index_path), embedder, ranking)
            logger.info("shadow routing with %s", model)
        except Exception:  # noqa: BLE001 - the served model is not affected
            logger.warning("the staged shadow model does not load; no shadow routing", exc_info=True)
            self.router = None

    def observe(self, query: RouteQuery, caller: Caller, delivered: Delivered) -> None:
        """Rank ``query`` with the shadow too, later, on its own thread."""
        router = self.router
        if router is None:
            return
        with self._lock:
            if self._waiting >= BACKLOG:
                self._count.labels("dropped").inc()
                return
            self._waiting += 1
        self._pool.submit(self._compare, router, query, caller, [m.name for m in delivered.result.matches])

    def _compare(self, router: Router, query: RouteQuery, caller: Caller, served: list[str]) -> None:
        try:
            found = router.route(query.query, query.k, query.rules, min_confidence=0.0, usage_pool=caller.pool)
            shadow = [name for name in found.names if caller.scope.contains(name)][: len(served) or query.k]
            same = bool(served) and bool(shadow) and served[0] == shadow[0]
            self._count.labels("same_top" if same else "different_top").inc()
            digest = hashlib.sha256(query.query.encode()).hexdigest()[:16]
            line = {"request": digest, "served": served, "shadow": shadow, "model": router.embedder.name}
            logger.info(orjson.dumps(line).decode())
        except Exception:  # noqa: BLE001 - a shadow failure never reaches a caller
            self._count.labels("failed").inc()
            logger.warning("shadow routing failed", exc_info=True)
        finally:
            with self._lock:
                self._waiting -= 1
