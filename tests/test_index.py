from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toolsift import Catalog
from toolsift.catalog import parse_catalog
from toolsift.embeddings import HashingEmbedder, compose_tool_text
from toolsift.errors import IndexMismatch, IndexNotFound
from toolsift.index import ExactIndex, FaissIndex, IndexKind, ToolIndex
from toolsift.index.folder_lock import lock_file


def random_unit_vectors(n: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_faiss_matches_exact_reference(kind: str) -> None:
    vectors = random_unit_vectors(2000, 32, seed=1)
    queries = random_unit_vectors(20, 32, seed=2)
    faiss_index = FaissIndex.from_vectors(vectors, kind)  # type: ignore[arg-type]
    exact = ExactIndex(vectors)
    agree = 0
    for query in queries:
        f_scores, f_ids = faiss_index.search(query, 10)
        e_scores, e_ids = exact.search(query, 10)
        if kind == "flat":
            np.testing.assert_array_equal(f_ids, e_ids)
            np.testing.assert_allclose(f_scores, e_scores, rtol=1e-5, atol=1e-6)
        agree += len(set(f_ids.tolist()) & set(e_ids.tolist()))
    assert agree / (10 * len(queries)) >= 0.95  # HNSW recall@10


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_allowed_ids_restrict_results(kind: str) -> None:
    vectors = random_unit_vectors(500, 16, seed=3)
    index = FaissIndex.from_vectors(vectors, kind)  # type: ignore[arg-type]
    allowed = np.arange(0, 500, 7, dtype=np.int64)
    query = random_unit_vectors(1, 16, seed=4)[0]
    scores, ids = index.search(query, 5, allowed)
    assert set(ids.tolist()) <= set(allowed.tolist())
    e_scores, e_ids = ExactIndex(vectors).search(query, 5, allowed)
    np.testing.assert_array_equal(ids, e_ids)
    assert list(scores) == sorted(scores, reverse=True)


def test_fewer_allowed_than_k_returns_all_allowed() -> None:
    index = FaissIndex.from_vectors(random_unit_vectors(50, 8, seed=5))
    scores, ids = index.search(random_unit_vectors(1, 8, seed=6)[0], 10, np.array([3, 9, 27]))
    assert sorted(ids.tolist()) == [3, 9, 27]
    empty_scores, empty_ids = index.search(random_unit_vectors(1, 8, seed=6)[0], 10, np.array([], dtype=np.int64))
    assert len(empty_ids) == 0


def test_save_and_load_round_trip(tmp_path: Path, tiny_catalog: Catalog) -> None:
    embedder = HashingEmbedder(64)
    index, stats = ToolIndex.build(tiny_catalog, embedder)
    assert stats.tools == len(tiny_catalog) == stats.embedded
    folder = index.save(tmp_path / "idx")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["model"] == "hashing-64" and manifest["dimension"] == 64
    assert manifest["catalog_fingerprint"] == tiny_catalog.fingerprint
    assert manifest["normalized"] is True and manifest["toolsift_version"]
    loaded = ToolIndex.load(folder, expected_model="hashing-64", expected_catalog=tiny_catalog.fingerprint)
    assert loaded.catalog.names == tiny_catalog.names
    # parameter order survives the round trip, so rebuilt tool texts (and vectors) are identical
    assert [compose_tool_text(t) for t in loaded.catalog] == [compose_tool_text(t) for t in tiny_catalog]
    assert loaded.catalog.get("send_email").parameter_names() == ["to", "subject"]  # type: ignore[union-attr]
    query = embedder.embed_queries(["weather in Rome"])[0]
    assert loaded.vectors.search(query, 3)[1].tolist() == index.vectors.search(query, 3)[1].tolist()


def test_attachments_are_kept_with_their_build_and_only_with_it(tmp_path: Path, tiny_catalog: Catalog) -> None:
    """What the router measured on a build (``ToolIndex.attachments``) is published with it and
    read back; the next build published without them has none (an older folder has none); what
    save would not write there is left out, never a failed load; a bad name is refused on save."""
    index, _ = ToolIndex.build(tiny_catalog, HashingEmbedder(64))
    assert index.attachments == {}
    folder = index.save(tmp_path / "idx", attachments={"note.json": b'{"a": 1}', "v.npy": b"\x00" * 10})
    assert ToolIndex.load(folder).attachments == {"note.json": b'{"a": 1}', "v.npy": b"\x00" * 10}
    index.save(tmp_path / "idx")
    assert ToolIndex.load(folder).attachments == {} and not (folder / "attached").exists()
    index.save(tmp_path / "idx", attachments={"note.json": b"{}"})
    (folder.resolve() / "attached" / "Odd Name").write_bytes(b"x")  # not a name save writes
    (folder.resolve() / "attached" / "sub.dir").mkdir()  # not a file
    (tmp_path / "secret").write_bytes(b"not the index's")
    (folder.resolve() / "attached" / "link.json").symlink_to(tmp_path / "secret")  # not one save wrote
    assert ToolIndex.load(folder).attachments == {"note.json": b"{}"}
    with pytest.raises(ValueError, match="attachment '../escape'"):
        index.save(tmp_path / "idx", attachments={"../escape": b""})
    assert ToolIndex.load(folder).attachments["note.json"] == b"{}"  # the refused save published nothing
    assert not (tmp_path / "escape").exists()


def test_save_replaces_an_existing_index_whole(tmp_path: Path, tiny_catalog: Catalog) -> None:
    embedder = HashingEmbedder(64)
    first, _ = ToolIndex.build(tiny_catalog, embedder)
    first.save(tmp_path / "idx")
    smaller = Catalog(list(tiny_catalog)[:3])
    second, _ = ToolIndex.build(smaller, embedder)
    second.save(tmp_path / "idx")
    assert len(ToolIndex.load(tmp_path / "idx").catalog) == 3
    entries = sorted(p.name for p in tmp_path.iterdir() if p != lock_file(tmp_path / "idx"))  # the lock stays
    assert len(entries) == 2 and entries[1] == "idx" and entries[0].startswith(".idx.")  # old version removed
    assert (tmp_path / "idx").is_symlink() and (tmp_path / "idx").resolve().name == entries[0]


def test_save_over_an_old_style_real_folder(tmp_path: Path, tiny_catalog: Catalog) -> None:
    import shutil

    embedder = HashingEmbedder(64)
    index, _ = ToolIndex.build(tiny_catalog, embedder)
    index.save(tmp_path / "stage")
    shutil.copytree((tmp_path / "stage").resolve(), tmp_path / "idx")  # a real folder, as older versions wrote
    smaller, _ = ToolIndex.build(Catalog(list(tiny_catalog)[:2]), embedder)
    smaller.save(tmp_path / "idx")
    assert len(ToolIndex.load(tmp_path / "idx").catalog) == 2 and (tmp_path / "idx").is_symlink()
    # a crash between moving the old folder aside and the swap: load finds the moved-aside copy
    (tmp_path / "idx").unlink()
    shutil.copytree((tmp_path / "stage").resolve(), tmp_path / ".idx.previous")
    assert len(ToolIndex.load(tmp_path / "idx").catalog) == 8


_SAVE_FOREVER = """
import sys
from toolsift.index import ToolIndex
indexes = [ToolIndex.load(folder) for folder in sys.argv[2:4]]
for index in indexes:
    print(index.catalog.fingerprint, flush=True)
turn = 0
while True:
    indexes[turn % 2].save(sys.argv[1])
    print("saved", flush=True)
    turn += 1
"""


@pytest.mark.slow
def test_killing_a_save_at_any_moment_leaves_a_loadable_index(tmp_path: Path) -> None:
    import random
    import signal
    import subprocess
    import sys
    import time

    # two versions of a 3,000-tool index, built once here; the child only loads and saves them
    embedder = HashingEmbedder(256)
    sources = []
    for version in (0, 1):
        catalog = parse_catalog(
            [
                {"name": f"tool_{version}_{i}", "description": f"does thing {i} of version {version} " * 20}
                for i in range(3000)
            ]
        )
        sources.append(str(ToolIndex.build(catalog, embedder)[0].save(tmp_path / f"source{version}")))
    target = tmp_path / "idx"
    rng = random.Random(7)
    for attempt in range(5):
        process = subprocess.Popen(
            [sys.executable, "-c", _SAVE_FOREVER, str(target), *sources], stdout=subprocess.PIPE, text=True
        )
        assert process.stdout is not None
        fingerprints = {process.stdout.readline().strip(), process.stdout.readline().strip()}
        if attempt == 0:
            assert process.stdout.readline().strip() == "saved"  # one full save before the first kill
        time.sleep(rng.uniform(0.0, 0.4))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        process.stdout.close()
        loaded = ToolIndex.load(target)
        assert loaded.catalog.fingerprint in fingerprints and len(loaded.catalog) == 3000


def test_load_refuses_mismatches(tmp_path: Path, tiny_catalog: Catalog) -> None:
    index, _ = ToolIndex.build(tiny_catalog, HashingEmbedder(64))
    folder = index.save(tmp_path / "idx")
    with pytest.raises(IndexMismatch, match="embedding model 'hashing-64'.*'all-MiniLM-L6-v2' was expected"):
        ToolIndex.load(folder, expected_model="all-MiniLM-L6-v2")
    with pytest.raises(IndexMismatch, match="catalog fingerprint"):
        ToolIndex.load(folder, expected_catalog="sha256:" + "0" * 64)

    catalog_file = folder / "catalog.jsonl"
    catalog_file.write_text(catalog_file.read_text().replace("Send an email", "Send a letter"))
    with pytest.raises(IndexMismatch, match="edited after the build"):
        ToolIndex.load(folder)


def test_load_refuses_other_format_versions(tmp_path: Path, tiny_catalog: Catalog) -> None:
    folder = ToolIndex.build(tiny_catalog, HashingEmbedder(64))[0].save(tmp_path / "idx")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["format_version"] = 999
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatch, match="index format version"):
        ToolIndex.load(folder)


def test_missing_index_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(IndexNotFound, match="manifest.json is missing.*toolsift build"):
        ToolIndex.load(tmp_path / "nothing")


def test_auto_kind_picks_by_catalog_size() -> None:
    from toolsift.index import AUTO_HNSW_ABOVE, resolve_kind

    assert resolve_kind("auto", AUTO_HNSW_ABOVE) == "flat"
    assert resolve_kind("auto", AUTO_HNSW_ABOVE + 1) == "hnsw"
    assert resolve_kind("hnsw", 10) == "hnsw"
    with pytest.raises(ValueError, match="index kind"):
        resolve_kind("ivf", 10)


def test_manifest_records_the_resolved_kind(tmp_path: Path, tiny_catalog: Catalog) -> None:
    index, _ = ToolIndex.build(tiny_catalog, HashingEmbedder(64))  # default kind: auto
    assert index.manifest.kind == "flat" == index.vectors.kind
    assert ToolIndex.load(index.save(tmp_path / "idx")).vectors.kind == "flat"


def test_folder_lock_serialises_threads_is_reentrant_and_times_out(tmp_path: Path) -> None:
    import threading
    import time

    from toolsift.errors import IndexBusy
    from toolsift.index.folder_lock import folder_lock, lock_file

    folder = tmp_path / "index"
    inside: list[int] = []
    overlaps: list[int] = []

    def hold(number: int) -> None:
        with folder_lock(folder), folder_lock(folder):  # re-entrant in one thread
            inside.append(number)
            if len(inside) > 1:
                overlaps.append(number)
            time.sleep(0.01)
            inside.remove(number)

    threads = [threading.Thread(target=hold, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == [] and lock_file(folder).name == ".index-lock"

    refused: list[bool] = []

    def wait_briefly() -> None:
        try:
            with folder_lock(folder, timeout=0.1):
                refused.append(False)
        except IndexBusy:
            refused.append(True)

    with folder_lock(folder):  # held here: another thread gives up after its timeout
        waiter = threading.Thread(target=wait_briefly)
        waiter.start()
        waiter.join()
    assert refused == [True]


def test_a_load_never_mixes_two_builds_when_a_save_lands_meanwhile(
    tmp_path: Path, tiny_router: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker starting while another saved an edit read catalog.jsonl of one build and the
    vectors of the next (its link was followed per file) and refused to start."""

    folder = tiny_router.save(tmp_path / "index")
    fax = parse_catalog([{"name": "send_fax", "description": "Send a fax to a phone number."}], source="fax")
    bigger = tiny_router.rebuilt(Catalog([*tiny_router.catalog, *fax], source="bigger"))
    read = FaissIndex.read
    saved: list[bool] = []

    def read_while_saving(path: Path, kind: IndexKind) -> Any:
        if not saved:  # the catalog of the old build is read: a save lands before its vectors are
            saved.append(True)
            bigger.save(folder)
        return read(path, kind)

    monkeypatch.setattr(FaissIndex, "read", staticmethod(read_while_saving))
    loaded = ToolIndex.load(folder)
    assert saved and len(loaded.catalog) == len(loaded.vectors) == len(bigger.catalog)  # the new build, whole
