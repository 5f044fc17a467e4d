"""How feedback should join the ranking: the comparison behind ``toolsift/router/usage.py``.

    python benchmarks/experiments/usage_views.py ../shared/datasets/apibench 0.5 [query|tool]

Whole queries (no intent splitting), every tool scored exactly; F of the queries (seeded) fed as
feedback, up to 3,000 of the rest scored, every variant on the same queries:

- ``base``: z(cosine) + 0.3 z(BM25), today's ranking;
- ``centroid W`` / ``nearest W``: base + W * z(cosine to the tool's feedback centroid / nearest
  feedback request), z over the tools that have feedback, 0 for the others;
- ``best view``: z(max(cosine to the tool's text, cosine to its nearest request)) + 0.3 z(BM25);
- ``best z-view``: max(z of the text cosine over the tools, z of the nearest request's cosine over
  every fed request) + 0.3 z(BM25): a view counts as far as it stands out among requests, as a text
  among texts (requests resemble requests more than they resemble tool texts).

``tool`` splits by tool instead: the requests of a seeded F of the tools are fed, those for the
other tools scored (tools nobody asked for yet).

Figures and the choice: benchmarks/DECISIONS.md ("Feedback as views").
"""

from __future__ import annotations

import random
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from toolsift.bench.datasets import load_dataset
from toolsift.embeddings import embedder_for
from toolsift.router import Router
from toolsift.settings import Settings


def z(values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    reference = values if mask is None else values[mask]
    spread = reference.std()
    return (values - reference.mean()) / (spread if spread > 0 else 1.0)


def main(folder: str, fraction: float, split: str = "query") -> None:
    root = Path(folder)
    dataset = load_dataset(root / "tools.jsonl", root / "queries.jsonl", root.name)
    router = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
    queries = dataset.with_tools
    vectors = np.vstack(router.embed_queries([q.text for q in queries]))
    order = list(range(len(queries)))
    random.Random(0).shuffle(order)
    cut = int(fraction * len(order))
    fed, held = order[:cut], sorted(order[cut:])
    if split == "tool":
        names = sorted(dataset.catalog.names)
        random.Random(0).shuffle(names)
        known = set(names[: int(fraction * len(names))])
        fed = [i for i in order if set(queries[i].relevant) <= known]
        held = sorted(i for i in order if not set(queries[i].relevant) & known)
    held = sorted(random.Random(1).sample(held, 3000)) if len(held) > 3000 else held
    tools = router.index.vectors.vectors(np.arange(len(dataset.catalog)))
    position = {tool.name: i for i, tool in enumerate(dataset.catalog)}
    requests: dict[int, list[np.ndarray]] = defaultdict(list)
    for i in fed:
        for name in queries[i].relevant:
            requests[position[name]].append(vectors[i])
    has = np.zeros(len(tools), bool)
    has[list(requests)] = True
    centroids = np.zeros_like(tools)
    for tool, found in requests.items():
        mean = np.mean(found, axis=0)
        centroids[tool] = mean / np.linalg.norm(mean)
    examples = np.vstack([v for t in sorted(requests) for v in requests[t]]) if requests else tools[:0]
    owners = np.array([t for t in sorted(requests) for _ in requests[t]], dtype=np.int64)
    gaps = []
    for tool, found in requests.items():
        if len(found) < 2:
            continue
        stack = np.vstack(found)
        similar = stack @ stack.T
        np.fill_diagonal(similar, -1.0)
        gaps += (similar.max(axis=1) - stack @ tools[tool]).tolist()
    offset = float(np.median(gaps)) if gaps else 0.0
    print(f"offset {offset:.3f} from {len(gaps)} fed requests")
    recalls: dict[str, list[float]] = defaultdict(list)
    for i in held:
        query, gold = vectors[i], {position[t] for t in queries[i].relevant}
        cosine = tools @ query
        lexical = router.lexical.scores(queries[i].text) if router.lexical else np.zeros(len(tools))
        base = z(cosine) + 0.3 * z(lexical)
        nearest = np.full(len(tools), -1.0)
        if len(examples):
            np.maximum.at(nearest, owners, examples @ query)
        variants = {"base": base, "best view": z(np.maximum(cosine, nearest)) + 0.3 * z(lexical)}
        for share in (0.5, 1.0):
            variants[f"offset view {share}"] = z(np.maximum(cosine, nearest - share * offset)) + 0.3 * z(lexical)
        if len(examples):
            views = examples @ query
            standing = (nearest - views.mean()) / (views.std() or 1.0)
            variants["best z-view"] = np.maximum(z(cosine), np.where(has, standing, -np.inf)) + 0.3 * z(lexical)
        for weight in (0.5, 1.0, 2.0):
            variants[f"centroid {weight}"] = base + weight * np.where(has, z(centroids @ query, has), 0)
            variants[f"nearest {weight}"] = base + weight * np.where(has, z(nearest, has), 0)
        for name, scores in variants.items():
            top = set(np.argsort(-scores)[:5].tolist())
            recalls[name].append(len(gold & top) / len(gold))
    print(f"{root.name}: F={fraction}, {len(fed)} fed, {len(held)} scored, {int(has.sum())} tools with feedback")
    for name, values in recalls.items():
        array = np.asarray(values)
        print(f"  {name:14s} R@5 {array.mean():.3f} ± {1.96 * array.std() / np.sqrt(len(array)):.3f}")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.5, sys.argv[3] if len(sys.argv) > 3 else "query")
