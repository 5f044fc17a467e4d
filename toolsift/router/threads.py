"""Per-query linear algebra on one thread.

A route multiplies a query vector by at most a few thousand tool and example vectors: work that
takes well under a millisecond on one core. Spread over BLAS threads, it pays for handing off and
spinning, and under concurrent requests (a server's worker threads) those threads oversubscribe
the cores (figures in benchmarks/DECISIONS.md). ONNX Runtime keeps its own thread pool, so query
embedding is not affected. ``toolsift serve`` and ``toolsift mcp`` call this at start-up; so do the benchmarks that
time routes, to measure what is served.
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits

from toolsift.index.faiss_index import limit_search_threads

_limits: object | None = None


def single_threaded_queries() -> None:
    """Limit BLAS (numpy's matrix products) and FAISS's OpenMP to one thread in this process (in
    every thread of it: see ``limit_search_threads``)."""
    global _limits
    if _limits is None:
        _limits = threadpool_limits(1, user_api="blas")
    limit_search_threads(1)
