"""Does a request's *form* tell "no tool" apart, whatever the catalog's topics? (tried, not kept)

    python benchmarks/experiments/request_form.py auc [MODEL]
    python benchmarks/experiments/request_form.py sweep BETA LIMIT written|multilingual DATASET...

``auc``: for up to 300 answerable requests of each dataset and the generic no-tool requests of
``benchmarks/abstention/no_tool_eval.yaml`` (per language), the AUC with which (a) the mean cosine
with the 3 nearest shipped no-tool requests (what the confidence's ``above`` feature already
subtracts) and (b) that minus the mean cosine with the 3 nearest requests written for the bundled
catalog (a "looks like a tool request at all" margin) rank no-tool requests above answerable ones.

``sweep``: the abstention bench (``run_abstention``, a seeded LIMIT of each dataset's requests)
with the confidence's no-tool similarity lowered by BETA times the request's mean cosine with its
3 nearest reference tool requests, in the calibration's center as in each match (patched in
here): ``written``, the requests written for the bundled catalog (English), or ``multilingual``,
``tool_requests.yaml`` beside this script (four languages, no catalog). BETA 0 is the router as
it is. Figures: benchmarks/DECISIONS.md ("Confidence and abstention").
"""

import random
import sys
from pathlib import Path

import numpy as np
import yaml

from toolsift.bench.abstention import abstention_table, generic_no_tool, run_abstention
from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.embeddings import get_embedder
from toolsift.router import Router, confidence
from toolsift.router.confidence import no_tool_requests
from toolsift.settings import Settings

ROOT = "../shared/datasets"
WRITTEN = Path("benchmarks/abstention/default_catalog_requests.tsv")
MULTILINGUAL = Path(__file__).with_name("tool_requests.yaml")


def written_requests() -> list[str]:
    lines = WRITTEN.read_text(encoding="utf-8").splitlines()
    return [line.split("\t")[0] for line in lines if line.strip() and not line.startswith("#")]


def reference_requests(kind: str) -> list[str]:
    if kind == "written":
        return written_requests()
    by_language: dict[str, list[str]] = yaml.safe_load(MULTILINGUAL.read_text(encoding="utf-8"))
    return [text for texts in by_language.values() for text in texts]


def nearest3(vectors: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """Each vector's mean cosine with its nearest few in ``pool``, as the confidence takes it."""
    return np.asarray(confidence._nearest_mean(np.atleast_2d(vectors) @ pool.T))


def auc(answerable: np.ndarray, no_tool: np.ndarray) -> float:
    """How often a no-tool request scores above an answerable one (ties half)."""
    return float(np.mean((answerable[:, None] < no_tool[None, :]) + 0.5 * (answerable[:, None] == no_tool[None, :])))


def aucs(model: str = "all-MiniLM-L6-v2") -> None:
    embedder = get_embedder(model)
    no_tool = embedder.embed_queries(list(no_tool_requests()))
    written = embedder.embed_queries(written_requests())

    def margins(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        vectors = embedder.embed_queries(texts)
        near = nearest3(vectors, no_tool)
        return near, near - nearest3(vectors, written)

    generic = {language: margins(texts) for language, texts in generic_no_tool().items()}
    for name in ("metatool", "sealtools", "apibench", "functionchat_ko"):
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl")
        queries = list(dataset.with_tools)
        near, form = margins([q.text for q in random.Random(0).sample(queries, min(300, len(queries)))])
        for language, (their_near, their_form) in generic.items():
            print(
                f"{name:16s} {language}: AUC near no-tool {auc(near, their_near):.3f}, form {auc(form, their_form):.3f}"
            )


def sweep(beta: str, limit: str, kind: str, *names: str) -> None:
    weight, reference = float(beta), {"vectors": np.empty((0, 1), dtype=np.float32)}

    plain_fit = confidence.Calibration.fit

    def fit(cls, none_vectors, best_evidence, shape=confidence.SHAPE):  # type: ignore[no-untyped-def]
        # a margin is best - none: lowering none by the form term is raising best by it
        lifted = np.asarray(best_evidence, dtype=np.float64) + weight * nearest3(none_vectors, reference["vectors"])
        return plain_fit(none_vectors, lifted, shape)

    def none_similarity(self, vector):  # type: ignore[no-untyped-def]
        near = confidence._nearest_mean((self.none_vectors @ vector)[None, :])[0]
        return float(near - weight * nearest3(vector, reference["vectors"])[0])

    confidence.Calibration.fit = classmethod(fit)  # type: ignore[method-assign, assignment]
    confidence.Calibration.none_similarity = none_similarity  # type: ignore[method-assign]
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(int(limit))
        embedder = embedder_for("auto", dataset.catalog)
        reference["vectors"] = np.asarray(embedder.embed_queries(reference_requests(kind)), dtype=np.float32)
        router = Router.build(dataset.catalog, embedder, cache=Settings().open_cache())
        result = run_abstention(dataset, router, 5, no_tool=generic_no_tool())
        print(f"== beta {weight}, reference {kind}", flush=True)
        print(abstention_table([result]), flush=True)


if __name__ == "__main__":
    {"auc": aucs, "sweep": sweep}[sys.argv[1]](*sys.argv[2:])
