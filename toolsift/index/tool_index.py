"""A catalog together with its vectors: built, saved as a folder with a manifest, loaded back.

Folder layout::

    manifest.json   what built it: model, dimension, catalog fingerprint, versions
    catalog.jsonl   the tools, in index order (FAISS id = line number - 1)
    groups.json     what each group is for (only when the catalog describes its groups)
    vectors.faiss   the FAISS index
    attached/       small files the router keeps with this build (``ToolIndex.attachments``: what it
                    measured on the catalog, so a fresh process need not measure it again)
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from toolsift._version import __version__
from toolsift.catalog import Catalog, load_catalog
from toolsift.embeddings import Embedder, EmbeddingCache, compose_tool_text, embed_documents_cached
from toolsift.embeddings.cache import CacheStats
from toolsift.errors import IndexMismatch, IndexNotFound, ToolsiftError
from toolsift.index.faiss_index import FaissIndex, IndexKind, resolve_kind
from toolsift.index.folder_lock import folder_lock

FORMAT_VERSION = 1
TEXT_RECIPE_VERSION = 2  # bump when compose_tool_text changes what it produces

MANIFEST = "manifest.json"
CATALOG = "catalog.jsonl"
GROUPS = "groups.json"
VECTORS = "vectors.faiss"
ATTACHED = "attached"
ATTACHMENT_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
ATTACHMENT_LIMIT = 16 * 1024 * 1024
"""Attachments are small (the router's: under 1 MB); a larger file there is not read."""


@dataclass(frozen=True)
class Manifest:
    model: str
    dimension: int
    catalog_fingerprint: str
    tool_count: int
    kind: str
    normalized: bool = True
    metric: str = "cosine"
    format_version: int = FORMAT_VERSION
    text_recipe_version: int = TEXT_RECIPE_VERSION
    toolsift_version: str = __version__
    created_at: str = ""
    source_fingerprint: str = ""
    """The fingerprint of the catalog the folder was first built from (a file, MCP servers), kept
    through admin edits and tunes: ``serve --catalog`` tells an edited index from another
    catalog's. Empty in folders from before it was recorded (read as ``catalog_fingerprint``)."""

    first_fingerprint: str = ""
    """The fingerprint of the catalog as first indexed (the source without any tool withheld as
    poisoned), kept through edits: the index holds edits when its catalog is no longer that one."""

    @property
    def built_from(self) -> str:
        return self.source_fingerprint or self.catalog_fingerprint

    @property
    def holds_edits(self) -> bool:
        return self.catalog_fingerprint != (self.first_fingerprint or self.built_from)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        known = {name for name in cls.__dataclass_fields__}
        return cls(**{key: value for key, value in data.items() if key in known})

    @classmethod
    def read(cls, folder: str | Path) -> Manifest | None:
        """The manifest of the index folder as it is now (None when there is none to read)."""
        try:
            return cls.from_json(orjson.loads((Path(folder) / MANIFEST).read_bytes()))
        except (OSError, orjson.JSONDecodeError, TypeError):
            return None


@dataclass(frozen=True)
class BuildStats:
    tools: int
    embedded: int
    cached: int
    seconds: float
    reused: int = 0
    """Vectors taken from the previous index because the tool's text did not change."""


def _previous(target: Path) -> Path:
    return target.with_name(f".{target.name}.previous")


LOAD_ATTEMPTS = 5


def _build_of(folder: Path) -> Path:
    """The build an index folder stands for now: its link's target (resolved once), the folder
    itself when it is a real folder, or the moved-aside copy of an interrupted save."""
    if not folder.exists() and _previous(folder).is_dir():
        return _previous(folder)  # a save was interrupted while moving an old-style folder aside
    return _resolved_version(folder) or folder


def _resolved_version(target: Path) -> Path | None:
    """The hidden folder a symlinked index points to (None for a real folder or nothing)."""
    if not target.is_symlink():
        return None
    pointed = target.parent / os.readlink(target)
    return pointed if pointed.name.startswith(f".{target.name}.") else None


ABANDONED_AFTER_SECONDS = 600


def _remove_abandoned(target: Path, keep: Path) -> None:
    """Staging folders and links left by saves that were killed (older than 10 minutes, so a
    save running in another process right now is left alone)."""
    cutoff = time.time() - ABANDONED_AFTER_SECONDS
    for entry in target.parent.glob(f".{target.name}.*"):
        try:
            if entry == keep or entry.lstat().st_mtime > cutoff:
                continue
            if entry.is_symlink() or entry.is_file():
                entry.unlink()
            elif entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue


def _first_fingerprint(catalog: Catalog, previous: ToolIndex | None, source: str | None) -> str:
    """The catalog as first indexed: this one for a first build or a build from a (new) source,
    else the previous index's."""
    if previous is None or source:
        return catalog.fingerprint
    return previous.manifest.first_fingerprint or previous.manifest.built_from


def read_catalog(folder: Path) -> Catalog:
    """The catalog saved in one build of an index folder, its groups' descriptions included."""
    catalog = load_catalog(folder / CATALOG, dialect="toolsift")
    if not (folder / GROUPS).is_file():
        return catalog
    try:
        described = orjson.loads((folder / GROUPS).read_bytes())
    except orjson.JSONDecodeError as error:
        raise IndexNotFound(str(folder), f"a readable {GROUPS} ({error})") from None
    return Catalog(catalog, source=catalog.source, groups=described)


def _write_attachments(folder: Path, attachments: Mapping[str, bytes]) -> None:
    if not attachments:
        return
    folder.mkdir()
    for name, content in attachments.items():
        if not ATTACHMENT_NAME.fullmatch(name) or len(content) > ATTACHMENT_LIMIT:
            raise ValueError(f"attachment {name!r}: a name of a-z, 0-9, _.- and under {ATTACHMENT_LIMIT} bytes")
        (folder / name).write_bytes(content)
    _fsync_folder(folder)


def _read_attachments(folder: Path) -> dict[str, bytes]:
    """The build's attachments; a missing folder (an older build) has none, and an unreadable or
    oversized file is left out (its reader measures again) rather than failing the load."""
    if not folder.is_dir():
        return {}
    found: dict[str, bytes] = {}
    for path in folder.iterdir():
        try:
            plain = path.is_file() and not path.is_symlink()  # save writes plain files only
            if ATTACHMENT_NAME.fullmatch(path.name) and plain and path.stat().st_size <= ATTACHMENT_LIMIT:
                found[path.name] = path.read_bytes()
        except OSError:
            continue
    return found


def _fsync_folder(folder: Path) -> None:
    """Flush the folder's files and the folder itself to disk."""
    for file in folder.iterdir():
        if file.is_file():  # attached/ is flushed when written
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
    _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class ToolIndex:
    """Vectors for every tool of a catalog, ids being catalog positions."""

    def __init__(
        self, catalog: Catalog, vectors: FaissIndex, manifest: Manifest, attachments: Mapping[str, bytes] | None = None
    ) -> None:
        self.catalog = catalog
        self.vectors = vectors
        self.manifest = manifest
        self.attachments: Mapping[str, bytes] = dict(attachments or {})
        """Files saved with this build (``attached/``), by name: opaque to the index, written by
        ``save(attachments=)`` and read back by ``load``; none for a fresh build."""

    @classmethod
    def build(
        cls,
        catalog: Catalog,
        embedder: Embedder,
        *,
        kind: IndexKind = "auto",
        cache: EmbeddingCache | None = None,
        progress: bool = False,
        previous: ToolIndex | None = None,
        source: str | None = None,
    ) -> tuple[ToolIndex, BuildStats]:
        """Embed ``catalog`` and index it. With ``previous`` (an index built by the same model),
        tools whose text did not change keep their vectors: only new or edited tools are embedded.
        ``source``: the fingerprint of the catalog the folder was built from (default: the
        previous index's, else this catalog's)."""
        started = time.perf_counter()
        kind = resolve_kind(kind, len(catalog))
        texts = [compose_tool_text(tool) for tool in catalog]
        known: dict[str, int] = {}
        if previous is not None and previous.manifest.model == embedder.name:
            known = {compose_tool_text(tool): position for position, tool in enumerate(previous.catalog)}
        fresh_rows = [row for row, text in enumerate(texts) if text not in known]
        matrix = np.empty((len(texts), embedder.dimension), dtype=np.float32)
        stats = CacheStats(hits=0, misses=0)
        if fresh_rows:
            fresh, stats = embed_documents_cached(
                embedder, [texts[row] for row in fresh_rows], cache, progress=progress
            )
            matrix[fresh_rows] = fresh
        reused_rows = [row for row, text in enumerate(texts) if text in known]
        if reused_rows and previous is not None:
            source_ids = np.asarray([known[texts[row]] for row in reused_rows], dtype=np.int64)
            matrix[reused_rows] = previous.vectors.vectors(source_ids)
        vectors = FaissIndex.from_vectors(matrix, kind) if len(catalog) else FaissIndex(embedder.dimension, kind)
        manifest = Manifest(
            model=embedder.name,
            dimension=embedder.dimension,
            catalog_fingerprint=catalog.fingerprint,
            tool_count=len(catalog),
            kind=kind,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            source_fingerprint=source
            or (previous.manifest.built_from if previous is not None else catalog.fingerprint),
            first_fingerprint=_first_fingerprint(catalog, previous, source),
        )
        build_stats = BuildStats(
            tools=len(catalog),
            embedded=stats.misses,
            cached=stats.hits,
            seconds=time.perf_counter() - started,
            reused=len(reused_rows),
        )
        return cls(catalog, vectors, manifest), build_stats

    def save(
        self,
        path: str | Path,
        *,
        before_publish: Callable[[], None] | None = None,
        attachments: Mapping[str, bytes] | None = None,
    ) -> Path:
        """Write the folder, atomically: the files go to a new hidden folder beside ``path``, and
        ``path`` becomes a symbolic link to it through one ``rename`` — readers see the old index
        or the new one, never a mix, and a crash at any point leaves a loadable index.

        (A ``path`` that is still a real folder, from an older toolsift, is moved aside first; if
        a crash hits between the two renames, ``load`` finds the moved-aside copy.)

        ``attachments``: small files kept with this build under ``attached/`` (names of lower-case
        letters, digits, ``_.-``), published atomically with it.

        Saves to one folder are serialised across processes (``folder_lock``). ``before_publish``
        is called just before the atomic step; if it raises, nothing is published (a replica's
        check that it still holds the shared lock)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with folder_lock(target):
            return self._save(target, before_publish, attachments or {})

    def _save(self, target: Path, before_publish: Callable[[], None] | None, attachments: Mapping[str, bytes]) -> Path:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        link = target.with_name(f".{target.name}.link-{staging.name}")
        try:
            with open(staging / CATALOG, "wb") as handle:
                handle.writelines(
                    orjson.dumps(record) + b"\n" for record in self.catalog.to_records()
                )  # keeps parameter order
            if self.catalog.group_descriptions:
                (staging / GROUPS).write_bytes(orjson.dumps(dict(self.catalog.group_descriptions)))
            self.vectors.save(staging / VECTORS)
            _write_attachments(staging / ATTACHED, attachments)
            (staging / MANIFEST).write_bytes(
                orjson.dumps(asdict(self.manifest), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
            )
            _fsync_folder(staging)
            os.chmod(staging, 0o755)
            os.symlink(staging.name, link)
            if before_publish is not None:
                before_publish()
            old = _resolved_version(target)
            previous = _previous(target)
            if target.exists() and not target.is_symlink():
                if previous.exists():
                    shutil.rmtree(previous)
                os.rename(target, previous)
            os.replace(link, target)  # the atomic step
            _fsync_dir(target.parent)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
            shutil.rmtree(previous, ignore_errors=True)
            _remove_abandoned(target, keep=staging)
        except BaseException:
            link.unlink(missing_ok=True)
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return target

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        expected_model: str | None = None,
        expected_catalog: str | None = None,
    ) -> ToolIndex:
        """Load a saved index, refusing one that does not match what the caller expects.

        The folder's link is followed once and every file read from the build it points to, so a
        save landing meanwhile (the link swapped, the old build removed) never mixes two builds:
        the load starts again from the new one."""
        for attempt in range(LOAD_ATTEMPTS):
            build = _build_of(Path(path))
            try:
                return cls._load_build(build, str(path), expected_model, expected_catalog)
            except (ToolsiftError, OSError, RuntimeError):  # RuntimeError: FAISS reading a removed file
                if attempt == LOAD_ATTEMPTS - 1 or _build_of(Path(path)) == build:
                    raise  # nothing was saved meanwhile: the folder itself is at fault
        raise AssertionError("unreachable")

    @classmethod
    def _load_build(
        cls, folder: Path, shown: str, expected_model: str | None, expected_catalog: str | None
    ) -> ToolIndex:
        for name in (MANIFEST, CATALOG, VECTORS):
            if not (folder / name).is_file():
                raise IndexNotFound(shown, name)
        try:
            manifest = Manifest.from_json(orjson.loads((folder / MANIFEST).read_bytes()))
        except (orjson.JSONDecodeError, TypeError) as error:
            raise IndexNotFound(shown, f"a readable {MANIFEST} ({error})") from None
        if manifest.format_version != FORMAT_VERSION:
            raise IndexMismatch(shown, "index format version", FORMAT_VERSION, manifest.format_version)
        if manifest.text_recipe_version != TEXT_RECIPE_VERSION:
            raise IndexMismatch(shown, "tool-text recipe version", TEXT_RECIPE_VERSION, manifest.text_recipe_version)
        if expected_model is not None and manifest.model != expected_model:
            raise IndexMismatch(shown, "embedding model", expected_model, manifest.model)
        catalog = read_catalog(folder)
        if catalog.fingerprint != manifest.catalog_fingerprint:
            raise IndexMismatch(
                shown,
                "catalog fingerprint (catalog.jsonl was edited after the build)",
                catalog.fingerprint,
                manifest.catalog_fingerprint,
            )
        if expected_catalog is not None and manifest.catalog_fingerprint != expected_catalog:
            raise IndexMismatch(shown, "catalog fingerprint", expected_catalog, manifest.catalog_fingerprint)
        vectors = FaissIndex.read(folder / VECTORS, manifest.kind)  # type: ignore[arg-type]
        if vectors.dimension != manifest.dimension:
            raise IndexMismatch(shown, "vector dimension", manifest.dimension, vectors.dimension)
        if len(vectors) != len(catalog) or manifest.tool_count != len(catalog):
            raise IndexMismatch(shown, "number of vectors", len(catalog), len(vectors))
        return cls(catalog, vectors, manifest, _read_attachments(folder / ATTACHED))
