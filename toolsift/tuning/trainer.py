"""Training, on CPU, in a bounded time: the whole encoder (``train_full``) or a query-side
linear adapter over the frozen model (``train_adapter``).

Both learn with in-batch negatives: each request is pulled toward its tool and pushed from the
other tools of its batch (sentence-transformers' ``MultipleNegativesRankingLoss`` for the
encoder; a softmax over every tool the training requests named for the adapter, whose document
vectors are fixed). A batch never holds a tool or a request twice (no false negatives). With
``hard_negatives``, each request also brings the tool the current router ranked highest among the
wrong ones: its own confusion (off by default: it measured worse). Needs torch and
sentence-transformers (the ``build`` extra).
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from toolsift.errors import MissingExtra
from toolsift.tuning.pairs import Pair

Kind = Literal["full", "adapter"]


@dataclass(frozen=True)
class Recipe:
    """How a model is tuned (recorded in its ``tuning.json``)."""

    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 3e-5
    max_tokens: int = 128
    """Token limit while training (the served model reads up to 256)."""
    scale: float = 20.0
    """Inverse temperature of the softmax over a batch's cosines."""
    hard_negatives: bool = False
    """Add each request's hardest wrong tool (``models.confusions``) as a negative: off, it measured
    worse for tools no request named (benchmarks/DECISIONS.md)."""
    warmup: float = 0.1
    symmetric: bool = False
    """Also pull each tool toward its request against the batch's other requests."""
    blend: float = 1.0
    """Share of the tuned weights kept: the encoder ends at ``base + blend * (tuned - base)``
    (weight-space ensembling, WiSE-FT)."""
    adapter_epochs: int = 30
    adapter_learning_rate: float = 1e-3
    adapter_tether: float = 1.0
    """Weight of ``mean((W - I)^2) * dimension``: keeps the adapter near the identity."""
    seed: int = 0


@dataclass(frozen=True)
class TrainStats:
    pairs: int
    steps: int
    seconds: float
    stopped_early: bool

    @property
    def pairs_per_second(self) -> float:
        return self.pairs / self.seconds if self.seconds else 0.0


def batches(pairs: Sequence[Pair], size: int, seed: int) -> list[list[Pair]]:
    """``pairs`` shuffled (seeded) into batches of ``size`` where no tool nor request repeats."""
    order = list(pairs)
    random.Random(seed).shuffle(order)
    done: list[list[Pair]] = []
    open_batches: list[tuple[list[Pair], set[str], set[str]]] = []
    for pair in order:
        request = pair.query.strip().casefold()
        for batch, tools, requests in open_batches:
            if pair.tool not in tools and request not in requests:
                batch.append(pair)
                tools.add(pair.tool)
                requests.add(request)
                break
        else:
            open_batches.append(([pair], {pair.tool}, {request}))
        full = [entry for entry in open_batches if len(entry[0]) >= size]
        done += [entry[0] for entry in full]
        open_batches = [entry for entry in open_batches if len(entry[0]) < size][-8:] if full else open_batches
        if len(open_batches) > 8:  # many repeats of one tool: keep the scan short
            done.append(open_batches.pop(0)[0])
    done += [entry[0] for entry in open_batches if len(entry[0]) > 1]
    return done


def torch_modules() -> tuple[Any, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights from the disk only
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    except ImportError:
        raise MissingExtra("torch and sentence-transformers", "build", "toolsift tune") from None
    return torch, SentenceTransformer


def train_full(
    source: Path,
    pairs: Sequence[Pair],
    texts: Mapping[str, str],
    negatives: Mapping[Pair, str],
    recipe: Recipe,
    *,
    deadline: float,
    progress: bool = False,
) -> tuple[Any, TrainStats]:
    """The sentence-transformers model in ``source`` fine-tuned on ``pairs`` (``texts``: each
    tool's text), until done or ``deadline`` (``time.monotonic``)."""
    torch, SentenceTransformer = torch_modules()
    torch.manual_seed(recipe.seed)
    model = SentenceTransformer(str(source), device="cpu", local_files_only=True)
    model.max_seq_length = recipe.max_tokens
    base = {name: value.detach().clone() for name, value in model.state_dict().items()} if recipe.blend < 1 else {}
    loss = _loss(model, source, recipe)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate)
    plan = [batch for epoch in range(recipe.epochs) for batch in batches(pairs, recipe.batch_size, recipe.seed + epoch)]
    warmup = max(1, int(recipe.warmup * len(plan)))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (len(plan) - step) / max(1, len(plan) - warmup)))
    )
    started, seen, steps = time.monotonic(), 0, 0
    model.train()
    for batch in _progress(plan, progress, "Tuning"):
        if time.monotonic() > deadline:
            break
        columns = [[p.query for p in batch], [texts[p.tool] for p in batch]]
        if recipe.hard_negatives and all(p in negatives for p in batch):
            columns.append([texts[negatives[p]] for p in batch])
        value = loss([model.preprocess(column) for column in columns], None)
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        seen, steps = seen + len(batch), steps + 1
    model.eval()
    _blend(model, base, recipe.blend)
    return model, TrainStats(seen, steps, time.monotonic() - started, steps < len(plan))


def train_adapter(
    queries: np.ndarray, targets: Sequence[int], others: Sequence[Sequence[int]], tools: np.ndarray, recipe: Recipe
) -> tuple[np.ndarray, TrainStats]:
    """A ``d x d`` map (from the identity) for query vectors ``queries`` so that each lands
    nearest its tool: row ``targets[i]`` of the fixed ``tools`` vectors, over all of them
    (``others[i]``: its request's other tools, not counted against it)."""
    torch, _ = torch_modules()
    torch.manual_seed(recipe.seed)
    started = time.monotonic()
    count, dimension = queries.shape
    identity = torch.eye(dimension)
    matrix = torch.nn.Parameter(identity.clone())
    optimizer = torch.optim.AdamW([matrix], lr=recipe.adapter_learning_rate, weight_decay=0.0)
    documents = torch.from_numpy(np.ascontiguousarray(tools, dtype=np.float32))
    rows = torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float32))
    target = torch.tensor(list(targets), dtype=torch.long)
    mask = torch.zeros((count, len(tools)), dtype=torch.bool)
    for row, tool_ids in enumerate(others):
        mask[row, list(tool_ids)] = True
    mask[torch.arange(count), target] = False
    size = max(recipe.batch_size, 256)
    steps = 0
    for _ in range(recipe.adapter_epochs):
        for chosen in torch.randperm(count).split(size):
            mapped = torch.nn.functional.normalize(rows[chosen] @ matrix, dim=1)
            logits = (recipe.scale * mapped @ documents.T).masked_fill(mask[chosen], -math.inf)
            value = torch.nn.functional.cross_entropy(logits, target[chosen])
            value = value + recipe.adapter_tether * dimension * ((matrix - identity) ** 2).mean()
            value.backward()
            optimizer.step()
            optimizer.zero_grad()
            steps += 1
    trained = matrix.detach().numpy().astype(np.float32)
    return trained, TrainStats(count * recipe.adapter_epochs, steps, time.monotonic() - started, False)


def _loss(model: Any, source: Path, recipe: Recipe) -> Any:
    """In-batch negatives, plain or symmetric (``source``: the base model's folder, for a loss
    that consults it; ``benchmarks/experiments/tuning_epochs.py`` tries one)."""
    from sentence_transformers.sentence_transformer import losses

    kind = losses.MultipleNegativesSymmetricRankingLoss if recipe.symmetric else losses.MultipleNegativesRankingLoss
    return kind(model, scale=recipe.scale)


def _blend(model: Any, base: Mapping[str, Any], share: float) -> None:
    """``model``'s weights moved back toward ``base``: ``base + share * (model - base)``."""
    if not base:
        return
    state = model.state_dict()
    for name, start in base.items():
        if state[name].is_floating_point():
            state[name].copy_(start + share * (state[name] - start))


def _progress(items: list[Any], show: bool, label: str) -> Any:
    if not show:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=label, unit="batch")
