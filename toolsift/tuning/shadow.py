"""Staging a tuned model in the shadow (``toolsift tune --shadow``): its index is saved to
``<index>.shadow`` (the model's folder stays in ``<index>.model/``), which every server of the index
loads beside the one it serves (``toolsift.service.shadow``). ``promote`` publishes it,
``drop`` removes it."""

from __future__ import annotations

import shutil
from pathlib import Path

from toolsift.embeddings import get_embedder, model_beside
from toolsift.errors import TuningRefused
from toolsift.index import ToolIndex
from toolsift.index.folder_lock import folder_lock
from toolsift.router import Router


def shadow_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".shadow")


def stage(index_path: Path, tuned: Router) -> None:
    """Save ``tuned`` (brought to the index's catalog as it is now) as the shadow index."""
    with folder_lock(index_path):
        catalog = ToolIndex.load(index_path).catalog
    tuned.rebuilt(catalog).index.save(shadow_path(index_path))


def staged_model(index_path: Path) -> str | None:
    try:
        return ToolIndex.load(shadow_path(index_path)).manifest.model
    except Exception:  # noqa: BLE001 - no shadow, or a broken one: none
        return None


def load_staged(index_path: Path) -> Router:
    model = staged_model(index_path)
    if model is None:
        raise TuningRefused(f"no shadow model staged for {index_path}", "Stage one with `toolsift tune --shadow`")
    return Router.load(shadow_path(index_path), get_embedder(model, beside=model_beside(index_path)))


def drop(index_path: Path) -> bool:
    """Remove the shadow index (its target folder too); whether there was one."""
    path = shadow_path(index_path)
    if not path.exists() and not path.is_symlink():
        return False
    target = path.resolve()
    path.unlink() if path.is_symlink() else shutil.rmtree(path)
    if target != path and target.is_dir():
        shutil.rmtree(target, ignore_errors=True)
    return True
