"""One-time export of a packaged sentence-transformers model to ONNX (the only place torch runs).

    python -m toolsift.embeddings.onnx_export MODEL_FOLDER OUT_FOLDER

The graph is the transformer alone (token ids, attention mask, token types -> last hidden state);
mean pooling and normalisation happen in numpy (``toolsift.embeddings.onnx_runtime``), exactly as
sentence-transformers does them. ``OUT_FOLDER`` holds the graph (``model.onnx``) and its weights
beside it (``model.onnx.data``): ONNX Runtime maps a weights file into memory instead of copying
it, so a server's memory holds only the pages it reads, shared with other processes on the host.
The folder is written under a temporary name and renamed into place, so a reader never sees half
of it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

OPSET = 17
GRAPH = "model.onnx"
WEIGHTS = "model.onnx.data"


def export(model_folder: Path, out: Path) -> Path:
    """``out``/model.onnx and its weights, exported from the model in ``model_folder``."""
    with staging_folder(out) as staged:
        graph = staged / "single-file.onnx"
        export_single_file(model_folder, graph)
        save_with_external_weights(graph, staged / GRAPH)
        graph.unlink()
    return out


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


def save_with_external_weights(source: Path, graph: Path) -> None:
    import onnx

    model = onnx.load(str(source))
    onnx.save_model(model, str(graph), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=WEIGHTS, size_threshold=1024)  # fmt: skip


def export_single_file(model_folder: Path, out: Path) -> Path:
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(model_folder, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_folder, local_files_only=True)
    sample = tokenizer(["an example", "a somewhat longer example sentence"], padding=True, return_tensors="pt")
    inputs = ("input_ids", "attention_mask", "token_type_ids")

    class Transformer(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            output = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return output.last_hidden_state

    with torch.no_grad():
        torch.onnx.export(
            Transformer(model),
            tuple(sample[name] for name in inputs),
            str(out),
            input_names=list(inputs),
            output_names=["last_hidden_state"],
            dynamic_axes={name: {0: "batch", 1: "tokens"} for name in (*inputs, "last_hidden_state")},
            opset_version=OPSET,
            dynamo=False,
        )
    return out


if __name__ == "__main__":
    import warnings

    warnings.filterwarnings("ignore")  # the exporter's notes on opsets are not for the user
    export(Path(sys.argv[1]), Path(sys.argv[2]))
