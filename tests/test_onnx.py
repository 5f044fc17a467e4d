"""The ONNX Runtime backend: the default for all-MiniLM-L6-v2, vectors that agree with the torch
path, a content-addressed model cache, and serving commands that never import torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from toolsift import load_catalog
from toolsift.bench.datasets import find_datasets
from toolsift.catalog import Catalog
from toolsift.embeddings import DEFAULT_MODEL, compose_tool_text, get_embedder
from toolsift.embeddings.onnx_runtime import RECIPE, OnnxEmbedder, model_cache_dir
from toolsift.settings import BUNDLED_CATALOG, Settings

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
pytestmark = pytest.mark.model


def agreement(catalog: Catalog) -> float:
    """The lowest cosine between the two backends' vectors of the catalog's tool texts."""
    texts = [compose_tool_text(tool) for tool in catalog]
    onnx = get_embedder(DEFAULT_MODEL).embed_documents(texts)
    torch = get_embedder(DEFAULT_MODEL, backend="torch").embed_documents(texts)
    return float(np.min(np.sum(onnx * torch, axis=1)))


def test_onnx_is_the_default_and_agrees_with_torch_on_the_bundled_catalog() -> None:
    embedder = get_embedder()
    assert isinstance(embedder, OnnxEmbedder) and embedder.name == DEFAULT_MODEL and embedder.dimension == 384
    assert agreement(load_catalog(BUNDLED_CATALOG)) >= 0.9999
    queries = ["will it rain in Lisbon this weekend?", "send the report to Dana", "도시의 날씨"]
    cosines = np.sum(embedder.embed_queries(queries) * get_embedder(backend="torch").embed_queries(queries), axis=1)
    assert float(cosines.min()) >= 0.9999


@pytest.mark.slow
@pytest.mark.skipif(not DATASETS.is_dir(), reason="../shared/datasets is not beside the repository")
@pytest.mark.parametrize("folder", find_datasets(DATASETS) if DATASETS.is_dir() else [], ids=lambda p: p.name)
def test_onnx_agrees_with_torch_on_every_shared_dataset(folder: Path) -> None:
    assert agreement(load_catalog(folder / "tools.jsonl")) >= 0.9999


def test_the_exported_model_is_content_addressed_and_reused() -> None:
    get_embedder()  # exported (or found) once for this test session's cache
    graphs = sorted(model_cache_dir().glob(f"{DEFAULT_MODEL}-*-r{RECIPE}/model.onnx"))
    assert len(graphs) == 1 and len(graphs[0].parent.name.split("-")[-2]) == 16  # <model>-<16 hex>-r<recipe>
    weights = graphs[0].with_name("model.onnx.data")  # mapped into memory, not copied into the process
    assert weights.stat().st_size > 80e6 > 1e6 > graphs[0].stat().st_size
    assert all(path.stat().st_mode & 0o044 == 0o044 for path in (graphs[0], weights))  # a shared cache works
    before = graphs[0].stat().st_mtime_ns
    from toolsift.embeddings.sentence_transformer import packaged_model_path

    OnnxEmbedder(DEFAULT_MODEL, packaged_model_path(DEFAULT_MODEL))  # a second load: no new export
    assert graphs[0].stat().st_mtime_ns == before and not list(model_cache_dir().glob(".*"))


def test_the_weights_are_mapped_not_copied() -> None:
    """The server's memory holds the weights' pages it reads, as file pages other processes
    share, rather than a private copy of all 90 MB."""
    embedder = get_embedder()
    embedder.embed_queries(["warm up the mapping"])
    mapped = [line for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith("model.onnx.data")]
    assert mapped, "model.onnx.data is not mapped into the process"


_SERVE_WITHOUT_TORCH = """
import sys
from fastapi.testclient import TestClient
from toolsift.cli import main
from toolsift.service import create_app
from toolsift.service.mcp_server import serve_index_folder_over_mcp
from toolsift.settings import Settings

index = sys.argv[1]
main(["route", "will it rain in Lisbon?", "--index", index], standalone_mode=False)
with TestClient(create_app(settings=Settings(index_path=index, reload_interval=0))) as client:
    assert client.post("/route", json={"query": "send an email"}).status_code == 200
server, state = serve_index_folder_over_mcp(Settings(index_path=index))
assert state.routers.get().route("convert dollars to euros").names
print("torch imported:", "torch" in sys.modules, "sentence_transformers" in sys.modules)
"""


def test_route_serve_and_mcp_never_import_torch(tmp_path: Path) -> None:
    from toolsift import Router

    folder = Router.build(load_catalog(BUNDLED_CATALOG), get_embedder()).save(tmp_path / "index")
    done = subprocess.run(
        [sys.executable, "-c", _SERVE_WITHOUT_TORCH, str(folder)],
        capture_output=True, text=True, timeout=300, env={**os.environ},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "torch imported: False False" in done.stdout


def test_the_torch_backend_stays_available_by_setting(tmp_path: Path) -> None:
    from toolsift import Router
    from toolsift.embeddings.sentence_transformer import SentenceTransformerEmbedder
    from toolsift.settings import Settings

    folder = Router.build(load_catalog(BUNDLED_CATALOG), get_embedder()).save(tmp_path / "index")
    settings = Settings.from_env({"TOOLSIFT_EMBEDDING_BACKEND": "torch"})
    with_torch = Router.load(folder, backend=settings.backend)
    assert isinstance(with_torch.embedder, SentenceTransformerEmbedder)
    query = "convert 100 dollars to euros"
    assert with_torch.route(query, 3).names == Router.load(folder).route(query, 3).names


def test_int8_is_an_opt_in_model_of_its_own(tmp_path: Path) -> None:
    from toolsift import Router
    from toolsift.embeddings import embedder_for
    from toolsift.embeddings.registry import INT8_MODEL
    from toolsift.errors import IndexMismatch

    catalog = load_catalog(BUNDLED_CATALOG)
    assert embedder_for("auto", catalog).name == DEFAULT_MODEL  # never chosen unless asked for
    int8 = get_embedder(INT8_MODEL)
    assert isinstance(int8, OnnxEmbedder) and int8.name == INT8_MODEL and int8.dimension == 384
    folders = [graph.parent.name for graph in model_cache_dir().glob("*/model.onnx")]
    assert sorted(name.endswith("-int8") for name in folders) == [False, True]
    texts = [compose_tool_text(tool) for tool in catalog][:64]
    cosines = np.sum(int8.embed_documents(texts) * get_embedder().embed_documents(texts), axis=1)
    assert 0.95 <= float(cosines.min()) < 0.9999  # close, but not the same vectors: a model of its own
    folder = Router.build(catalog, int8).save(tmp_path / "index")
    with pytest.raises(IndexMismatch, match="all-MiniLM-L6-v2-int8"):
        Router.load(folder, get_embedder())
    assert Router.load(folder).embedder.name == INT8_MODEL


def test_the_service_sets_how_many_threads_onnx_runtime_uses() -> None:
    """TOOLSIFT_EMBEDDING_THREADS: several server processes on one host share its cores."""
    from toolsift.embeddings.onnx_runtime import OnnxEmbedder, set_threads
    from toolsift.embeddings.sentence_transformer import packaged_model_path
    from toolsift.service import create_app

    try:
        create_app(settings=Settings(embedding_threads=1))
        embedder = OnnxEmbedder("all-MiniLM-L6-v2", packaged_model_path("all-MiniLM-L6-v2"))
        options = embedder._session.get_session_options()
        assert options.intra_op_num_threads == 1
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"  # a server's threads sleep
    finally:
        set_threads(0)
    default = OnnxEmbedder("all-MiniLM-L6-v2", packaged_model_path("all-MiniLM-L6-v2"))
    assert default._session.get_session_options().intra_op_num_threads == 0  # ONNX Runtime's own choice
