"""Models ``toolsift tune`` made for one index, kept beside it (``<index>.model/tuned-<digest>/``).

A tuned model is named ``tuned-<digest of its weights>``: the name in the index manifest says which
version built the vectors, and a different model never shares a name. Its folder holds
``tuning.json`` (what it was tuned from and how: ``toolsift.tuning``) and either

- ``kind: full``: the whole encoder fine-tuned, exported to ONNX (``model.onnx``, its weights,
  ``tokenizer.json``; the sentence-transformers files beside them, to tune it further), served by
  ``OnnxEmbedder`` like the packaged model; or
- ``kind: adapter``: a linear map applied to the base model's query vectors (``adapter.npy``);
  documents are embedded by the base model unchanged (``AdaptedEmbedder``). Works over any model,
  the multilingual one included.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from toolsift.embeddings.base import Embedder, normalise_rows
from toolsift.errors import EmbedderUnavailable
from toolsift.types import Matrix

PREFIX = "tuned-"
MANIFEST = "tuning.json"
ADAPTER = "adapter.npy"


def is_tuned(name: str) -> bool:
    return name.startswith(PREFIX)


def tuned_folder(beside: Path | None, name: str) -> Path:
    """The folder of the tuned model ``name`` beside an index; an error that says what to do when
    it is missing (an index folder copied without its ``.model`` folder)."""
    folder = (beside / name) if beside is not None else None
    if folder is None or not (folder / MANIFEST).is_file():
        raise EmbedderUnavailable(
            name,
            f"no tuned model folder {folder or name} beside the index",
            "Copy the index's '.model' folder with it, or rebuild the index with `toolsift build`",
        )
    return folder


def tuning_manifest(folder: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((folder / MANIFEST).read_text())
    return manifest


def load_tuned(name: str, beside: Path | None, base_loader: Callable[[str], Embedder]) -> Embedder:
    """The tuned model ``name`` kept in ``beside``; ``base_loader`` loads an adapter's base model."""
    folder = tuned_folder(beside, name)
    manifest = tuning_manifest(folder)
    if manifest.get("kind") == "adapter":
        return AdaptedEmbedder(name, base_loader(str(manifest["base_model"])), np.load(folder / ADAPTER))
    from toolsift.embeddings.onnx_runtime import OnnxEmbedder

    return OnnxEmbedder(name, folder, graph=folder / "model.onnx")


class AdaptedEmbedder:
    """``base``'s document vectors as they are; its query vectors mapped by ``matrix`` (queries
    are rows: ``q @ matrix``) and normalised again. The catalog's vectors do not change."""

    def __init__(self, name: str, base: Embedder, matrix: np.ndarray) -> None:
        if matrix.shape != (base.dimension, base.dimension):
            raise EmbedderUnavailable(
                name, f"its adapter is {matrix.shape}, not {base.dimension}x{base.dimension}", "Tune it again"
            )
        self._name = name
        self.base = base
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self.base.dimension

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix:
        return self.base.embed_documents(texts, progress=progress)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return normalise_rows(self.base.embed_queries(texts) @ self.matrix)
