"""One-time export of a packaged sentence-transformers model to ONNX (the only place torch runs).

    python -m toolsift.embeddings.onnx_export MODEL_FOLDER OUT.onnx

The graph is the transformer alone (token ids, attention mask, token types -> last hidden state);
mean pooling and normalisation happen in numpy (``toolsift.embeddings.onnx_runtime``), exactly as
sentence-transformers does them. The file is written beside ``OUT.onnx`` and renamed into place,
so a reader never sees half of it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

OPSET = 17


def export(model_folder: Path, out: Path) -> Path:
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

    out.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(handle)
    try:
        with torch.no_grad():
            torch.onnx.export(
                Transformer(model),
                tuple(sample[name] for name in inputs),
                temporary,
                input_names=list(inputs),
                output_names=["last_hidden_state"],
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in (*inputs, "last_hidden_state")},
                opset_version=OPSET,
                dynamo=False,
            )
        os.replace(temporary, out)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return out


if __name__ == "__main__":
    import warnings

    warnings.filterwarnings("ignore")  # the exporter's notes on opsets are not for the user
    export(Path(sys.argv[1]), Path(sys.argv[2]))
