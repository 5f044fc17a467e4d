"""``toolsift tune`` as a function: collect the pairs, hold some back, train each kind, keep the
best that beats the model in use on the held-back requests, and publish it like any rebuild.

Publishing writes the model's folder beside the index (``<index>.model/tuned-<digest>/``, with
its ``tuning.json``: base and previous model, pairs, held-back figures, recipe), then re-embeds
the catalog with it and swaps the index folder in under the folder's lock: every worker and
replica following the folder loads the new model with it (the manifest names it). ``rollback``
rebuilds with the previous model. A refusal changes nothing and says why.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from toolsift.embeddings import get_embedder, model_beside
from toolsift.embeddings.tuned import (
    MANIFEST,
    PREFIX,
    is_tuned,
    record_view_offset,
    tuned_folder,
    tuning_manifest,
)
from toolsift.errors import TuningRefused
from toolsift.index import IndexKind
from toolsift.index.folder_lock import folder_lock
from toolsift.router import Router
from toolsift.router.usage import UsageBook
from toolsift.tuning import models
from toolsift.tuning.check import HeldOutCheck, compare, unseen_offset, without_requests
from toolsift.tuning.pairs import Pair, collect, hold_out
from toolsift.tuning.shadow import drop, load_staged, stage, staged_model
from toolsift.tuning.trainer import Kind, Recipe

KindChoice = Literal["auto", "full", "adapter"]
KEEP = 3
"""Tuned model folders kept beside an index: the one in use, the one before it, and the newest."""
MIN_PAIRS = 20


@dataclass(frozen=True)
class TuneOptions:
    kind: KindChoice = "auto"
    """``auto``: train every kind the model allows (whole encoder, adapter) and keep the best."""
    time_limit: float = 900.0
    """Seconds of training per kind; training stops there and the model so far is judged."""
    hold_out: float = 0.2
    seed: int = 0
    pool: str = ""
    min_pairs: int = MIN_PAIRS
    recipe: Recipe = field(default_factory=Recipe)


@dataclass
class Candidate:
    kind: str
    name: str
    training: dict[str, Any]
    check: dict[str, Any]
    accepted: bool
    reason: str


@dataclass
class TuneReport:
    index: str
    previous_model: str
    published_model: str | None
    shadow_model: str | None
    pairs: int
    train_pairs: int
    held_requests: int
    candidates: list[Candidate]
    reason: str
    seconds: float

    def document(self) -> dict[str, Any]:
        return {"schema": "toolsift-tune/1", **asdict(self)}


Say = Callable[[str], None]


@dataclass
class Selection:
    """What ``select`` trained and judged: every candidate, the best accepted one (or None), and a
    router over the held-back catalog with each candidate's model."""

    pairs: int
    train: list[Pair]
    held: list[Pair]
    candidates: list[Candidate]
    best: Candidate | None
    routers: dict[str, Router]


def select(router: Router, pairs: Sequence[Pair], options: TuneOptions, workdir: Path, beside: Path | None, *,
           progress: bool = False, say: Say = lambda _: None) -> Selection:  # fmt: skip
    """Hold back tools, train each kind on the rest, judge each against ``router``'s model on the
    held-back requests, and pick the best that beats it. Models are written in ``workdir``; those
    not picked are removed."""
    if len(pairs) < options.min_pairs:
        raise TuningRefused(
            f"{len(pairs)} (request, tool) pairs, fewer than {options.min_pairs}",
            "Add example requests to the catalog's tools, or let users send feedback, then tune again",
        )
    train, held = hold_out(pairs, options.hold_out, options.seed)
    say(f"{len(pairs)} pairs: {len(train)} to train on, {len(held)} held back; model in use {router.embedder.name}")
    current = router.rebuilt(without_requests(router.catalog, held))
    made = [
        _candidate(kind, current, train, held, options, workdir, beside, progress, say)
        for kind in _kinds(options.kind, router, beside)
    ]
    candidates = [candidate for candidate, _ in made]
    best = max((c for c in candidates if c.accepted), key=lambda c: c.check["difference"][0], default=None)
    for candidate in candidates:
        if candidate is not best:
            shutil.rmtree(workdir / candidate.name, ignore_errors=True)
    return Selection(len(pairs), train, held, candidates, best, {c.name: r for c, r in made})


def tune(index_path: Path, book: UsageBook | None, options: TuneOptions | None = None, *,
         progress: bool = False, say: Say = lambda _: None, shadow: bool = False) -> TuneReport:  # fmt: skip
    """Tune the model of the index folder ``index_path`` on its examples and ``book``'s feedback;
    with ``shadow``, stage the model that passed instead of publishing it (``toolsift.tuning.shadow``)."""
    options = options or TuneOptions()
    started = time.monotonic()
    router = Router.load(index_path)
    beside = model_beside(index_path)
    chosen = select(router, collect(router.catalog, book, options.pool), options, beside, beside,
                    progress=progress, say=say)  # fmt: skip
    best = chosen.best
    report = TuneReport(
        str(index_path), router.embedder.name, None, None, chosen.pairs, len(chosen.train),
        len({p.query for p in chosen.held}), chosen.candidates, "", 0.0,
    )  # fmt: skip
    if best is None:
        report.reason = "nothing published: " + "; ".join(f"{c.kind}: {c.reason}" for c in chosen.candidates)
    elif shadow:
        _record(beside / best.name, router.embedder.name, best, chosen.pairs)
        stage(index_path, chosen.routers[best.name])
        prune(beside, keep=(best.name, router.embedder.name))
        report.shadow_model = best.name
        report.reason = f"staged {best.name} ({best.kind}) in the shadow, not served: {best.reason}"
    else:
        _record(beside / best.name, router.embedder.name, best, chosen.pairs)
        publish(index_path, router.embedder.name, chosen.routers[best.name])
        prune(beside, keep=(best.name, router.embedder.name, staged_model(index_path) or ""))
        report.published_model = best.name
        report.reason = f"published {best.name} ({best.kind}): {best.reason}"
    report.seconds = round(time.monotonic() - started, 1)
    return report


def _kinds(choice: KindChoice, router: Router, beside: Path | None) -> list[Kind]:
    whole = models.full_source(router.embedder.name, beside) is not None
    if choice == "full" and not whole:
        raise TuningRefused(
            f"the model {router.embedder.name} cannot be fine-tuned whole", "Use --kind adapter or auto"
        )
    if choice == "auto":
        return ["full", "adapter"] if whole else ["adapter"]
    return [choice]


def _candidate(kind: Kind, current: Router, train: Sequence[Pair], held: Sequence[Pair], options: TuneOptions,
               workdir: Path, beside: Path | None, progress: bool, say: Say) -> tuple[Candidate, Router]:  # fmt: skip
    deadline = time.monotonic() + options.time_limit
    name, _ = models.make(kind, current, train, options.recipe, workdir, beside, deadline=deadline, progress=progress)
    training = tuning_manifest(workdir / name)["training"]
    say(
        f"{kind}: trained on {training['pairs_seen']} pairs in {training['seconds']} s; checking on the held-back requests"
    )
    embedder = get_embedder(name, beside=workdir)
    tuned = Router.build(current.catalog, embedder, ranking=current.ranking)
    unseen = unseen_offset(tuned, held)  # judged, and served, with its views discounted by it
    floor = record_view_offset(workdir / name, unseen.offset, unseen.requests, unseen.tools)
    embedder.view_offset_floor = floor  # type: ignore[attr-defined]  # as a fresh process loads it
    check = compare(current, tuned, train, held)
    say(f"{kind}: {check.reason}")
    return Candidate(kind, name, training, _check_document(check), check.accepted, check.reason), tuned


def _check_document(check: HeldOutCheck) -> dict[str, Any]:
    return {**asdict(check), "difference": list(check.difference), "recall_difference": list(check.recall_difference)}


def _record(folder: Path, previous: str, best: Candidate, pairs: int) -> None:
    manifest = tuning_manifest(folder)
    manifest.update(previous_model=previous, held_out=best.check, pairs_collected=pairs,
                    created_at=datetime.now(UTC).isoformat(timespec="seconds"))  # fmt: skip
    temporary = folder / f".{MANIFEST}.tmp"
    temporary.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    temporary.replace(folder / MANIFEST)


def publish(index_path: Path, expected: str, tuned: Router) -> None:
    """Serve ``tuned`` (a router with the new model, built beforehand, outside the lock) from the
    index folder: under the folder's lock, brought to the folder's catalog as it is now (edits made
    while tuning are kept; only the tools they changed are embedded) and swapped in. Refused if
    the folder changed model meanwhile (another tune or a rebuild)."""
    with folder_lock(index_path):
        serving = Router.load(index_path)
        if serving.embedder.name != expected:
            raise TuningRefused(
                f"the index folder switched from {expected} to {serving.embedder.name} while tuning", "Tune again"
            )
        kind: IndexKind = "hnsw" if serving.index.manifest.kind == "hnsw" else "flat"
        tuned.rebuilt(serving.catalog, kind=kind, source=serving.index.manifest.built_from).save(index_path)


def promote(index_path: Path) -> str:
    """Publish the model staged in the shadow (it was checked when staged) and drop the shadow."""
    staged = load_staged(index_path)
    name = staged.embedder.name
    previous = str(tuning_manifest(tuned_folder(model_beside(index_path), name)).get("previous_model", ""))
    publish(index_path, previous, staged)
    drop(index_path)
    return name


def rollback(index_path: Path) -> tuple[str, str]:
    """Serve the model in use before the current tuned one; returns (from, to)."""
    router = Router.load(index_path)
    current = router.embedder.name
    if not is_tuned(current):
        raise TuningRefused(f"the index serves {current}, not a tuned model: nothing to roll back to")
    beside = model_beside(index_path)
    previous = str(tuning_manifest(tuned_folder(beside, current)).get("previous_model", ""))
    if not previous:
        raise TuningRefused(
            f"{current}'s tuning.json names no previous model", "Rebuild the index with `toolsift build`"
        )
    publish(
        index_path, current, Router.build(router.catalog, get_embedder(previous, beside=beside), ranking=router.ranking)
    )
    return current, previous


def history(index_path: Path) -> list[dict[str, Any]]:
    """The tuned models kept beside the index, newest first, each with its ``tuning.json``."""
    beside = model_beside(index_path)
    folders = (
        sorted(beside.glob(PREFIX + "*"), key=lambda p: p.stat().st_mtime, reverse=True) if beside.is_dir() else []
    )
    return [tuning_manifest(folder) for folder in folders if (folder / MANIFEST).is_file()]


def prune(beside: Path, keep: Sequence[str]) -> None:
    """Remove tuned model folders beyond the newest ``KEEP`` (never one named in ``keep``)."""
    folders = sorted(beside.glob(PREFIX + "*"), key=lambda p: p.stat().st_mtime, reverse=True)
    kept = {*keep, *(folder.name for folder in folders[:KEEP])}
    for name in list(kept):  # an adapter needs the tuned model it maps
        if (beside / name / MANIFEST).is_file():
            kept.add(str(tuning_manifest(beside / name).get("base_model", "")))
    for folder in folders:
        if folder.name not in kept:
            shutil.rmtree(folder, ignore_errors=True)
