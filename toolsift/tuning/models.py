"""Making a tuned model's folder from a router and its training pairs: ``make_full`` (the whole
encoder, exported to ONNX) and ``make_adapter`` (a query-side map over the frozen model). Each
writes ``<workdir>/tuned-<digest>/`` with its ``tuning.json`` and returns its name; load it with
``toolsift.embeddings.get_embedder(name, beside=workdir)``."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from toolsift.embeddings import DEFAULT_MODEL, Embedder, compose_tool_text, get_embedder
from toolsift.embeddings.onnx_export import write_graph
from toolsift.embeddings.onnx_runtime import RECIPE, RECIPE_FILE
from toolsift.embeddings.tuned import ADAPTER, MANIFEST, PREFIX, AdaptedEmbedder, is_tuned, tuning_manifest
from toolsift.errors import TuningRefused
from toolsift.router import Router
from toolsift.tuning.pairs import Pair, by_request
from toolsift.tuning.trainer import Kind, Recipe, TrainStats, train_adapter, train_full

NEGATIVE_DEPTH = 8


def full_source(model: str, beside: Path | None) -> Path | None:
    """The sentence-transformers folder to fine-tune ``model`` from, or None when it cannot be
    (the multilingual engine, ensembles, adapters: those take an adapter)."""
    if model in (DEFAULT_MODEL, DEFAULT_MODEL + "-int8"):
        from toolsift.embeddings.sentence_transformer import packaged_model_path

        return packaged_model_path(DEFAULT_MODEL)
    if is_tuned(model) and beside is not None and tuning_manifest(beside / model).get("kind") == "full":
        return beside / model
    return None


def tool_texts(router: Router) -> dict[str, str]:
    """Each tool's text as training sees it: without its examples (a request must not find
    itself written into its tool)."""
    return {tool.name: compose_tool_text(tool.model_copy(update={"examples": ()})) for tool in router.catalog}


def confusions(router: Router, pairs: Sequence[Pair]) -> dict[Pair, str]:
    """For each pair, the tool the router ranks highest among those its request did not call,
    taken from the tools some training request named. A tool no request named is never pushed
    away: it is what tuning should help, and a model taught to avoid it learns to avoid every
    tool no one asked for yet."""
    answered = by_request(pairs)
    named = {pair.tool for pair in pairs}
    queries = list(answered)
    depth = min(len(router.catalog), NEGATIVE_DEPTH)
    ranked = {r.query: r.names for r in router.route_many(queries, depth, usage_pool=None, min_confidence=0.0)}
    wrong: dict[str, str] = {}
    for query in queries:
        found = ranked.get(query.strip(), [])
        first = next((name for name in found if name in named and name not in answered[query]), None)
        if first is not None:
            wrong[query] = first
    return {pair: wrong[pair.query] for pair in pairs if pair.query in wrong}


def make_full(
    router: Router, train: Sequence[Pair], recipe: Recipe, workdir: Path, beside: Path | None, *,
    deadline: float, progress: bool = False,
) -> tuple[str, TrainStats]:  # fmt: skip
    source = full_source(router.embedder.name, beside)
    if source is None:
        raise TuningRefused(f"the model {router.embedder.name} cannot be fine-tuned whole", "Use --kind adapter")
    negatives = confusions(router, train) if recipe.hard_negatives else {}
    model, stats = train_full(
        source, train, tool_texts(router), negatives, recipe, deadline=deadline, progress=progress
    )
    staged = _staging(workdir)
    model.save(str(staged))
    write_graph(staged, staged)
    (staged / RECIPE_FILE).write_text(json.dumps({"recipe": RECIPE, "model": "tuned"}))
    name = PREFIX + _digest(staged / "model.safetensors")
    details = {"kind": "full", "base_model": router.embedder.name, "previous_model": router.embedder.name,
               "source": str(source)}  # fmt: skip
    return _place(staged, workdir, name, details, recipe, stats, train), stats


def make_adapter(router: Router, train: Sequence[Pair], recipe: Recipe, workdir: Path) -> tuple[str, TrainStats]:
    """An adapter over the router's model (over its base when that is an adapter already: the two
    maps are composed into one). Its softmax runs over the tools the training requests named: a
    tool no request named is never a negative (``confusions`` says why)."""
    current = router.embedder
    answered = by_request(train)
    queries = list(answered)
    vectors = current.embed_queries(queries)
    rows, targets, others = [], [], []
    catalog = router.catalog
    named = sorted({catalog.position(pair.tool) for pair in train})
    column = {tool_id: i for i, tool_id in enumerate(named)}
    for row, query in enumerate(queries):
        ids = [column[catalog.position(tool)] for tool in sorted(answered[query])]
        for target in ids:
            rows.append(row)
            targets.append(target)
            others.append([i for i in ids if i != target])
    tools = router.index.vectors.vectors(np.asarray(named, dtype=np.int64))
    matrix, stats = train_adapter(vectors[rows], targets, others, tools, recipe)
    base: Embedder = current
    if isinstance(current, AdaptedEmbedder):
        matrix, base = current.matrix @ matrix, current.base
    staged = _staging(workdir)
    np.save(staged / ADAPTER, matrix.astype(np.float32))
    name = PREFIX + _digest(staged / ADAPTER)
    details = {"kind": "adapter", "base_model": base.name, "previous_model": current.name}
    return _place(staged, workdir, name, details, recipe, stats, train), stats


def make(
    kind: Kind, router: Router, train: Sequence[Pair], recipe: Recipe, workdir: Path, beside: Path | None, *,
    deadline: float, progress: bool = False,
) -> tuple[str, TrainStats]:  # fmt: skip
    if kind == "full":
        return make_full(router, train, recipe, workdir, beside, deadline=deadline, progress=progress)
    return make_adapter(router, train, recipe, workdir)


def load(name: str, workdir: Path) -> Embedder:
    return get_embedder(name, beside=workdir)


def _place(
    staged: Path, workdir: Path, name: str, details: dict[str, Any], recipe: Recipe, stats: TrainStats,
    train: Sequence[Pair],
) -> str:  # fmt: skip
    manifest = {
        **details,
        "name": name,
        "recipe": asdict(recipe),
        "training": {
            "pairs": len(train),
            "from_examples": sum(p.source == "example" for p in train),
            "from_feedback": sum(p.source == "feedback" for p in train),
            "pairs_seen": stats.pairs,
            "steps": stats.steps,
            "seconds": round(stats.seconds, 1),
            "pairs_per_second": round(stats.pairs_per_second, 2),
            "stopped_at_time_limit": stats.stopped_early,
        },
    }
    (staged / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    target = workdir / name
    if target.exists():  # the same weights again
        shutil.rmtree(staged, ignore_errors=True)
    else:
        staged.rename(target)
    return name


def _staging(workdir: Path) -> Path:
    """A new folder in ``workdir`` to write a model into before it has its name."""
    workdir.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=".tuning.", dir=workdir))
    staged.chmod(0o755)  # readable by the server's user, as the rest of the index
    return staged


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()[:12]
