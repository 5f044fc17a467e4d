"""Models ``toolsift tune`` made for one index, kept beside it (``<index>.model/tuned-<digest>/``).

A tuned model is named ``tuned-<digest of its weights>``: the name in the index manifest says which
version built the vectors, and a different model never shares a name. Its folder holds
``tuning.json`` (what it was tuned from and how: ``toolsift.tuning``; ``views``: the least offset
its feedback views are discounted by, measured on requests it never trained on, which the
loaded model carries as ``view_offset_floor``) and either

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
from typing import TYPE_CHECKING, Any

import numpy as np

from toolsift.embeddings.base import Embedder, normalise_rows
from toolsift.errors import EmbedderUnavailable
from toolsift.types import Matrix

if TYPE_CHECKING:
    from toolsift.embeddings.onnx_runtime import OnnxEmbedder

PREFIX = "tuned-"
MANIFEST = "tuning.json"
ADAPTER = "adapter.npy"
VIEWS = "views"


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


def record_view_offset(folder: Path, offset: float, requests: int, tools: int) -> float:
    """Write into the model's manifest the least offset its feedback views get
    (``toolsift.router.usage.view_offsets``) and what it was measured on; the offset as recorded."""
    manifest = tuning_manifest(folder)
    manifest[VIEWS] = {"offset": round(float(offset), 6), "requests": requests, "tools": tools}
    temporary = folder / f".{MANIFEST}.tmp"  # a reader sees the old manifest or the new, never half
    temporary.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    temporary.replace(folder / MANIFEST)
    return view_offset_floor(manifest)


def view_offset_floor(manifest: dict[str, Any]) -> float:
    return float(manifest.get(VIEWS, {}).get("offset", 0.0))


def load_tuned(name: str, beside: Path | None, base_loader: Callable[[str], Embedder]) -> Embedder:
    """The tuned model ``name`` kept in ``beside``; ``base_loader`` loads an adapter's base model."""
    folder = tuned_folder(beside, name)
    manifest = tuning_manifest(folder)
    loaded: AdaptedEmbedder | OnnxEmbedder
    if manifest.get("kind") == "adapter":
        loaded = AdaptedEmbedder(name, base_loader(str(manifest["base_model"])), np.load(folder / ADAPTER))
    else:
        from toolsift.embeddings.onnx_runtime import OnnxEmbedder

        loaded = OnnxEmbedder(name, folder, graph=folder / "model.onnx")
    loaded.view_offset_floor = view_offset_floor(manifest)
    return loaded


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
        self.view_offset_floor = 0.0
        """The least offset its feedback views get (``record_view_offset``)."""

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
