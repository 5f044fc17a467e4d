"""Sharing a match's confidence with its crowd, measured before it was built (label-free ECE).

    python benchmarks/experiments/crowd.py LIMIT DEPTH apibench metatool sealtools functionchat_ko

For a seeded LIMIT of each dataset's answerable requests, routed with the shape's confidences
(``recalibrate`` off), the expected calibration error (10 bins) of the top-5 matches' confidence:
as the shape gives it, divided by the crowd S (the sum of the best DEPTH matches' confidences,
at least 1), and times min(1, asks / S) where asks is the number of distinct tools the request's
parts put first (``confidence.crowd_share``, what the router now does), its square root, and
each match's chance of being relevant if each were so on its own with its confidence and at most
asks of them are (``given_at_most``: the odds, conditioned). Figures: benchmarks/DECISIONS.md
("Confidence and abstention").
"""

import sys
from dataclasses import replace

import numpy as np

from toolsift.bench.abstention import ece_of
from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.router import Router
from toolsift.settings import Settings

ROOT = "../shared/datasets"


def given_at_most(confidences: np.ndarray, asks: int) -> np.ndarray:
    """Each match's chance of being relevant if each were so on its own with its confidence and
    at most ``asks`` of them are: odds_i * E_{asks-1}(others) / E_asks(all), where E_m sums the
    elementary symmetric polynomials of the odds up to degree m."""
    odds = np.clip(confidences, 1e-6, 1 - 1e-6)
    odds = odds / (1 - odds)
    every = np.zeros(asks + 1)
    every[0] = 1.0
    for o in odds:
        every[1:] = every[1:] + o * every[:-1]
    shares = []
    for o in odds:
        others = np.zeros(asks + 1)
        others[0] = 1.0
        for k in range(1, asks + 1):
            others[k] = every[k] - o * others[k - 1]
        shares.append(o * others[:asks].sum() / every.sum())
    return np.array(shares)


def asks(router: Router, text: str, first: str) -> int:
    """The distinct tools the request and its parts (those that stand out) put first."""
    tops = {first}
    for part in router._intents(text, 5):
        ranked = router._rank(part, router.embed_queries([part])[0], 1, None, None)
        if len(ranked.ids) and ranked.scores[0] >= router.ranking.intent_min_score:
            tops.add(router.catalog[int(ranked.ids[0])].name)
    return len(tops)


def main(limit: str, depth: str, *names: str) -> None:
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(int(limit))
        built = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
        router = Router(built.index, built.embedder, replace(built.ranking, recalibrate=False))
        rows = []
        for query in dataset.queries:
            if not (query.routable and query.relevant):
                continue
            matches = router.route(query.text, int(depth), min_confidence=0.0).matches
            crowd = sum(m.confidence for m in matches)
            wanted = asks(router, query.text, matches[0].name) if matches else 1
            given = given_at_most(np.array([m.confidence for m in matches]), wanted) if matches else []
            rows += [
                (m.confidence, float(m.name in query.relevant), crowd, wanted, g)
                for m, g in zip(matches[:5], given[:5], strict=True)
            ]
        c, relevant, crowds, asked, odds = (np.array(column) for column in zip(*rows, strict=True))
        spread = np.maximum(crowds, 1e-9)
        print(
            f"{name} depth {depth}: shape {ece_of(c, relevant):.3f} | / S {ece_of(c * np.minimum(1, 1 / spread), relevant):.3f}"
            f" | asks / S {ece_of(c * np.minimum(1, asked / spread), relevant):.3f}"
            f" | sqrt {ece_of(c * np.minimum(1, np.sqrt(asked / spread)), relevant):.3f}"
            f" | at most asks {ece_of(odds, relevant):.3f} | mean asks {asked.mean():.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
