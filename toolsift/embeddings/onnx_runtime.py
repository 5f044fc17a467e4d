"""all-MiniLM-L6-v2 on ONNX Runtime: the default backend, with no torch in the process.

The model is exported once from the packaged weights (``toolsift.embeddings.onnx_export``: the
graph is written from the weights with numpy and ``onnx``, no torch) into a content-addressed cache,
``~/.cache/toolsift/models/<model>-<sha256 of the weights>-r<recipe>/`` (``TOOLSIFT_MODEL_CACHE``
moves it): the graph, ``model.onnx``, and its weights beside it, which ONNX Runtime maps into
memory rather than copying. Tokens come from the ``tokenizers`` library with the model's own
``tokenizer.json``; mean pooling and L2 normalisation as sentence-transformers does them, so the
vectors agree with the torch path (cosine >= 0.9999, tested) and existing indexes stay valid.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolsift.embeddings.base import normalise_rows
from toolsift.embeddings.onnx_export import GRAPH, export, staging_folder
from toolsift.errors import EmbedderUnavailable
from toolsift.types import Matrix

RECIPE = 3
"""Bumped whenever the export changes, so an old export is never reused (2: weights in a file of
their own, memory-mapped; 3: the graph written from the weights without torch)."""
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
BATCH = 64
CHUNK = 64 * BATCH
"""Texts tokenised at once (and sorted by length): a 100,000-tool build never holds them all."""
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def model_cache_dir() -> Path:
    explicit = os.environ.get("TOOLSIFT_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolsift" / "models"


def weights_digest(model_folder: Path) -> str:
    """16 hex digits of the weights' sha256. Hashing 90 MB on every start would cost a cold
    ``toolsift route`` ~0.15 s, so the digest is remembered beside the cache, keyed by the file's
    path, size and modification time."""
    weights = model_folder / "model.safetensors"
    stat = weights.stat()
    key = f"{weights.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    remembered = model_cache_dir() / "digests.json"
    try:
        known: dict[str, str] = json.loads(remembered.read_text())
    except (OSError, ValueError):
        known = {}
    if key not in known:
        digest = hashlib.sha256()
        with open(weights, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
        known[key] = digest.hexdigest()[:16]
        _write_atomically(remembered, json.dumps(known, indent=1, sort_keys=True))
    return known[key]


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(text)
    os.replace(temporary, path)


INT8_SUFFIX = "-int8"
"""A model name ending so asks for the int8 variant: MatMul weights quantized per channel
(dynamic quantization), an opt-in trading some accuracy for speed (figures in RESULTS.md)."""


def onnx_file(name: str, model_folder: Path) -> Path:
    """The exported model (its ``model.onnx``) for these weights, exporting it first (in a child
    process) if needed; for an ``-int8`` name, the quantized variant of that export."""
    if name.endswith(INT8_SUFFIX):
        return quantized_file(onnx_file(name.removesuffix(INT8_SUFFIX), model_folder))
    folder = model_cache_dir() / f"{name}-{weights_digest(model_folder)}-r{RECIPE}"
    if (folder / GRAPH).is_file():
        return folder / GRAPH
    try:
        export(model_folder, folder)
    except ImportError:
        raise EmbedderUnavailable(
            name,
            "its one-time export to ONNX needs the 'onnx' package",
            f"Install the build extra: pip install 'toolsift[build]' (or copy an exported model folder to {folder})",
        ) from None
    return folder / GRAPH


def quantized_file(source: Path) -> Path:
    """The model at ``source`` with its MatMul weights quantized to int8 per channel, in a folder
    beside its own (made once)."""
    folder = source.parent.with_name(source.parent.name + INT8_SUFFIX)
    if (folder / GRAPH).is_file():
        return folder / GRAPH
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))  # its pre-processing advice
    with staging_folder(folder) as staged:
        quantize_dynamic(
            source, staged / GRAPH, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"],
            use_external_data_format=True,
        )  # fmt: skip
    return folder / GRAPH


@dataclass(frozen=True)
class SessionSettings:
    """How the ONNX Runtime sessions this process creates run (``set_threads``)."""

    threads: int = 0
    """Intra-op threads; 0: ONNX Runtime's default, one per core."""
    spinning: bool = True
    """Whether those threads spin for more work after a run instead of sleeping."""


_session_settings = SessionSettings()
"""What sessions created from now on use."""


def set_threads(count: int, *, spinning: bool = True) -> None:
    """Use ``count`` intra-op threads in the ONNX Runtime sessions this process creates from now
    on (0: ONNX Runtime's default, one per core). Several server processes on one host share its
    cores better with fewer each (``TOOLSIFT_EMBEDDING_THREADS``).

    ``spinning=False``: the threads sleep between runs instead of spinning for more work. A
    server passes it: between batches its threads would spin on the cores its request threads
    need (16 concurrent clients: server CPU per request 7.9 -> 6.2 ms, benchmarks/DECISIONS.md)."""
    global _session_settings
    _session_settings = SessionSettings(max(0, count), spinning)


TOKENIZER = "tokenizer.json"
RECIPE_FILE = "recipe.json"


def bundled_model(beside: Path | None, name: str) -> Path | None:
    """The exported ``name`` in a folder beside an index (made by ``bundle_model``), if it is
    there and of this recipe; else None."""
    if beside is None:
        return None
    folder = beside / name
    try:
        recipe = json.loads((folder / RECIPE_FILE).read_text())
    except (OSError, ValueError):
        return None
    ready = recipe.get("recipe") == RECIPE and (folder / GRAPH).is_file() and (folder / TOKENIZER).is_file()
    return folder if ready else None


def bundle_model(name: str, model_folder: Path, beside: Path) -> Path:
    """Put a copy of the exported ``name`` (and its tokenizer) in ``beside/<name>/``, once per
    recipe. Copies, not hard links: onnx refuses to read external weights that have several links
    (a guard against hard-link attacks), which would break the int8 quantization of the cache's."""
    found = bundled_model(beside, name)
    if found is not None:
        return found
    graph = onnx_file(name, model_folder)
    target = beside / name
    with staging_folder(target) as staged:
        for source in [*sorted(graph.parent.iterdir()), model_folder / TOKENIZER]:
            if source.is_file() and not source.name.startswith("."):
                shutil.copyfile(source, staged / source.name)
        (staged / RECIPE_FILE).write_text(json.dumps({"recipe": RECIPE, "model": name}))
    return target


class OnnxEmbedder:
    """A BERT-style sentence-transformers model (mean pooling) on ONNX Runtime: its tokenizer from
    ``model_folder``, its graph exported from the weights there (or ``graph``, already exported)."""

    def __init__(self, name: str, model_folder: Path, *, threads: int | None = None, graph: Path | None = None) -> None:
        settings = _session_settings
        threads = threads or settings.threads
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError:
            raise EmbedderUnavailable(
                name, "onnxruntime is not installed", "Install it: pip install onnxruntime"
            ) from None
        self._name = name
        self._tokenizer: Any = Tokenizer.from_file(str(model_folder / TOKENIZER))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()  # each batch is padded to its own longest (``_batch``)
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        if not settings.spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = graph or onnx_file(name, model_folder)
        self._session: Any = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._dimension = int(self._session.get_outputs()[0].shape[-1])
        self.view_offset_floor = 0.0
        """A tuned model's least feedback-view offset (``toolsift.embeddings.tuned``)."""

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Matrix:
        """Tokenised a chunk at a time, run in batches of equal or near token counts (little
        padding), returned in the order given."""
        vectors = np.empty((len(texts), self._dimension), dtype=np.float32)
        for first in range(0, len(texts), CHUNK):
            encodings = self._tokenizer.encode_batch(list(texts[first : first + CHUNK]))
            order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
            for start in range(0, len(order), BATCH):
                chosen = order[start : start + BATCH]
                vectors[[first + i for i in chosen]] = self._batch([encodings[i] for i in chosen])
        return vectors

    def _batch(self, encodings: list[Any]) -> Matrix:
        width = max(len(encoding.ids) for encoding in encodings)
        feeds = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in INPUTS}
        for row, encoding in enumerate(encodings):  # padded on the right, as the tokenizer pads
            size = len(encoding.ids)
            feeds["input_ids"][row, :size] = encoding.ids
            feeds["attention_mask"][row, :size] = encoding.attention_mask
            feeds["token_type_ids"][row, :size] = encoding.type_ids
        hidden = self._session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        return normalise_rows(pooled)
