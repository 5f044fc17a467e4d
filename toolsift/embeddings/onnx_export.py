"""One-time export of a packaged BERT-style model (all-MiniLM-L6-v2) to ONNX, without torch.

    python -m toolsift.embeddings.onnx_export MODEL_FOLDER OUT_FOLDER

The graph is the transformer alone (token ids, attention mask, token types -> last hidden state),
written from the packaged ``model.safetensors`` by ``toolsift.embeddings.bert_graph``; mean
pooling and normalisation happen in numpy (``toolsift.embeddings.onnx_runtime``), exactly as
sentence-transformers does them. ``OUT_FOLDER`` holds the graph (``model.onnx``) and its weights
beside it (``model.onnx.data``): ONNX Runtime maps a weights file into memory instead of copying
it, so a server's memory holds only the pages it reads, shared with other processes on the host.
The folder is written under a temporary name and renamed into place, so a reader never sees half
of it. Needs the ``onnx`` package (the ``build`` extra), only for this step.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

GRAPH = "model.onnx"
WEIGHTS = "model.onnx.data"


def export(model_folder: Path, out: Path) -> Path:
    """``out``/model.onnx and its weights, written from the model in ``model_folder``."""
    with staging_folder(out) as staged:
        write_graph(model_folder, staged)
    return out


def write_graph(model_folder: Path, folder: Path) -> Path:
    """``folder``/model.onnx and its weights (``model.onnx.data``), from the model in
    ``model_folder`` (which may be ``folder`` itself)."""
    import onnx

    from toolsift.embeddings.bert_graph import bert_model

    model = bert_model(model_folder)
    onnx.save_model(model, str(folder / GRAPH), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=WEIGHTS, size_threshold=1024)  # fmt: skip
    return folder / GRAPH


@contextlib.contextmanager
def staging_folder(out: Path) -> Iterator[Path]:
    """A temporary folder beside ``out``, renamed to ``out`` when the block succeeds (kept as it
    is if another process got there first: both hold the same model)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield staged
        for path in (staged, *staged.iterdir()):  # readable by the other users of a shared cache
            path.chmod(0o755 if path.is_dir() else 0o644)
        with contextlib.suppress(OSError):  # already there: another process exported it
            os.rename(staged, out)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


if __name__ == "__main__":
    export(Path(sys.argv[1]), Path(sys.argv[2]))
