"""A BERT encoder (all-MiniLM-L6-v2's shape) written as an ONNX graph straight from its packaged
weights: no torch, no transformers. ``model.safetensors`` is read with numpy (an 8-byte header
length, a JSON header, then the raw tensors), ``config.json`` gives the sizes, and the graph is
the transformer alone — token ids, attention mask and token types in, the last hidden state out —
as Hugging Face's ``BertModel`` computes it (absolute positions, post-layer-norm, exact GELU).

Mean pooling and normalisation stay in numpy (``toolsift.embeddings.onnx_runtime``). The vectors
agree with the sentence-transformers (torch) path: ``tests/test_onnx.py`` checks it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17
DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
MASKED = -10000.0
"""Added to the attention scores of padding tokens (as BertModel's extended attention mask)."""


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file, as float32 / int64 numpy arrays."""
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    start = 8 + size
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        first, last = entry["data_offsets"]
        array = np.frombuffer(raw[start + first : start + last], dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
        tensors[name.removeprefix("bert.")] = array.astype(np.float32) if array.dtype == np.float16 else array
    return tensors


class _Graph:
    """Nodes and initialisers, named as they are added."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.weights = weights
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def weight(self, name: str, transpose: bool = False) -> str:
        value = self.weights[name]
        return self.constant(name, value.T if transpose else value)

    def op(self, kind: str, inputs: list[str], **attributes: Any) -> str:
        self._count += 1
        output = f"{kind.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(kind, inputs, [output], **attributes))
        return output

    def linear(self, x: str, prefix: str) -> str:
        """``x @ W.T + b`` for the dense layer ``prefix``."""
        product = self.op("MatMul", [x, self.weight(f"{prefix}.weight", transpose=True)])
        return self.op("Add", [product, self.weight(f"{prefix}.bias")])

    def layer_norm(self, x: str, prefix: str, epsilon: float) -> str:
        scale, bias = self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=epsilon)


def bert_model(model_folder: Path) -> Any:
    """The ONNX ``ModelProto`` of the BERT encoder in ``model_folder``."""
    from onnx import TensorProto, helper

    config = json.loads((model_folder / "config.json").read_text())
    graph = _Graph(read_safetensors(model_folder / "model.safetensors"))
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    epsilon = float(config.get("layer_norm_eps", 1e-12))
    x = _embeddings(graph, epsilon)
    bias = _attention_bias(graph)
    for layer in range(int(config["num_hidden_layers"])):
        x = _layer(graph, x, bias, f"encoder.layer.{layer}", hidden, heads, epsilon)
    graph.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", hidden])
    body = helper.make_graph(graph.nodes, "bert", inputs, [output], graph.initializers)
    return helper.make_model(body, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="toolsift")


def _embeddings(graph: _Graph, epsilon: float) -> str:
    words = graph.op("Gather", [graph.weight("embeddings.word_embeddings.weight"), "input_ids"])
    types = graph.op("Gather", [graph.weight("embeddings.token_type_embeddings.weight"), "token_type_ids"])
    starts = graph.constant("position_start", np.array([0], dtype=np.int64))
    axis = graph.constant("position_axis", np.array([0], dtype=np.int64))
    length = graph.op("Shape", ["input_ids"], start=1, end=2)  # [tokens], 1-D
    placed = graph.op("Slice", [graph.weight("embeddings.position_embeddings.weight"), starts, length, axis])
    summed = graph.op("Add", [graph.op("Add", [words, types]), placed])
    return graph.layer_norm(summed, "embeddings.LayerNorm", epsilon)


def _attention_bias(graph: _Graph) -> str:
    """0 for real tokens and ``MASKED`` for padding, shaped [batch, 1, 1, tokens]."""
    mask = graph.op("Cast", ["attention_mask"], to=1)  # float
    axes = graph.constant("mask_axes", np.array([1, 2], dtype=np.int64))
    expanded = graph.op("Unsqueeze", [mask, axes])
    inverted = graph.op("Sub", [graph.constant("one_float", np.array(1.0, dtype=np.float32)), expanded])
    return graph.op("Mul", [inverted, graph.constant("masked", np.array(MASKED, dtype=np.float32))])


def _layer(graph: _Graph, x: str, bias: str, prefix: str, hidden: int, heads: int, epsilon: float) -> str:
    size = hidden // heads
    split = graph.constant(f"{prefix}.heads_shape", np.array([0, 0, heads, size], dtype=np.int64))
    merged = graph.constant(f"{prefix}.merged_shape", np.array([0, 0, hidden], dtype=np.int64))

    def heads_of(name: str, order: list[int]) -> str:
        projected = graph.linear(x, f"{prefix}.attention.self.{name}")
        return graph.op("Transpose", [graph.op("Reshape", [projected, split])], perm=order)

    query, key, value = heads_of("query", [0, 2, 1, 3]), heads_of("key", [0, 2, 3, 1]), heads_of("value", [0, 2, 1, 3])
    scale = graph.constant(f"{prefix}.scale", np.array(1.0 / math.sqrt(size), dtype=np.float32))
    scores = graph.op("Add", [graph.op("Mul", [graph.op("MatMul", [query, key]), scale]), bias])
    context = graph.op("MatMul", [graph.op("Softmax", [scores], axis=-1), value])
    context = graph.op("Reshape", [graph.op("Transpose", [context], perm=[0, 2, 1, 3]), merged])
    attended = graph.linear(context, f"{prefix}.attention.output.dense")
    x = graph.layer_norm(graph.op("Add", [attended, x]), f"{prefix}.attention.output.LayerNorm", epsilon)
    inner = _gelu(graph, graph.linear(x, f"{prefix}.intermediate.dense"), prefix)
    out = graph.linear(inner, f"{prefix}.output.dense")
    return graph.layer_norm(graph.op("Add", [out, x]), f"{prefix}.output.LayerNorm", epsilon)


def _gelu(graph: _Graph, x: str, prefix: str) -> str:
    """The exact GELU: x * (1 + erf(x / sqrt 2)) / 2."""
    root = graph.constant(f"{prefix}.sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = graph.constant(f"{prefix}.half", np.array(0.5, dtype=np.float32))
    one = graph.constant(f"{prefix}.one", np.array(1.0, dtype=np.float32))
    erf = graph.op("Erf", [graph.op("Div", [x, root])])
    return graph.op("Mul", [graph.op("Mul", [x, half]), graph.op("Add", [erf, one])])
