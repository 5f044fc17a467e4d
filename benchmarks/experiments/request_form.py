"""Does a request's *form* tell "no tool" apart, whatever the catalog's topics? (diagnostic)

    python benchmarks/experiments/request_form.py

For up to 300 answerable requests of each dataset and the generic no-tool requests of
``benchmarks/abstention/no_tool_eval.yaml`` (per language): the AUC with which (a) the mean cosine
with the 3 nearest shipped no-tool requests (what the confidence's ``above`` feature already
subtracts) and (b) that minus the mean cosine with the 3 nearest requests written for the bundled
catalog (a "looks like a tool request at all" margin) rank no-tool requests above answerable
ones. Figures: benchmarks/DECISIONS.md ("Confidence and abstention").
"""

import random
import sys

import numpy as np

from toolsift.bench.abstention import generic_no_tool
from toolsift.bench.datasets import load_dataset
from toolsift.embeddings import get_embedder
from toolsift.router.confidence import no_tool_requests

ROOT = "../shared/datasets"
WRITTEN = "benchmarks/abstention/default_catalog_requests.tsv"


def nearest3(vectors: np.ndarray, pool: np.ndarray) -> np.ndarray:
    return np.sort(vectors @ pool.T, axis=1)[:, -3:].mean(axis=1)


def auc(answerable: np.ndarray, no_tool: np.ndarray) -> float:
    """How often a no-tool request scores above an answerable one (ties half)."""
    return float(np.mean((answerable[:, None] < no_tool[None, :]) + 0.5 * (answerable[:, None] == no_tool[None, :])))


def main(model: str = "all-MiniLM-L6-v2") -> None:
    embedder = get_embedder(model)
    no_tool = embedder.embed_queries(list(no_tool_requests()))
    with open(WRITTEN, encoding="utf-8") as file:
        lines = file.read().splitlines()
    written = embedder.embed_queries(
        [line.split("\t")[0] for line in lines if line.strip() and not line.startswith("#")]
    )

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


if __name__ == "__main__":
    main(*sys.argv[1:])
