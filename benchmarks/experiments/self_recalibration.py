"""Label-free recalibration from the catalog's own tool texts (tried).

    python benchmarks/experiments/self_recalibration.py LIMIT TOOLS DATASET...

Without labelled requests, each match reports the shape's confidence shared with its crowd. Here a
seeded TOOLS of the catalog's tools each give a pseudo-request from their own description (a
seeded span of half to all of its words, or its first sentence), routed as a request would be
(top 5, parts merged); a match is relevant when it is the tool the text came from. The isotonic
recalibration fitted on those (``fit_recalibration``, as for labelled requests) is applied to the
reported confidences of a seeded LIMIT of the dataset's answerable requests: expected calibration
error and log loss before and after, same requests.
"""

import random
import re
import sys
from pathlib import Path

import numpy as np

from toolsift.bench.abstention import ece_of
from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.router import Router
from toolsift.router.confidence import fit_recalibration
from toolsift.settings import Settings

ROOT = Path(__file__).resolve().parents[3] / "shared" / "datasets"


def span(text: str, rng: random.Random) -> str:
    words = text.split()
    if len(words) < 4:
        return text
    size = rng.randint(max(2, len(words) // 2), len(words))
    start = rng.randint(0, len(words) - size)
    return " ".join(words[start : start + size])


def first_sentence(text: str, rng: random.Random) -> str:
    return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]


def routed(router: Router, text: str) -> list[tuple[str, float]]:
    return [(m.name, m.confidence) for m in router.route(text, 5, min_confidence=0.0).matches]


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-4, 1 - 1e-4)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def main(limit: str, tools: str, *names: str) -> None:
    for name in names:
        dataset = load_dataset(ROOT / name / "tools.jsonl", ROOT / name / "queries.jsonl").sample(int(limit))
        router = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
        answers = [(routed(router, q.text), set(q.relevant)) for q in dataset.queries if q.routable and q.relevant]
        conf = np.array([c for matches, _ in answers for _, c in matches])
        rel = np.array([float(n in wanted) for matches, wanted in answers for n, _ in matches])
        print(
            f"{name}: {len(answers)} requests, reported ECE {ece_of(conf, rel):.3f}, log loss {log_loss(conf, rel):.3f}"
        )
        chosen = random.Random(0).sample(list(dataset.catalog), min(int(tools), len(dataset.catalog)))
        for label, make in (("span", span), ("first sentence", first_sentence)):
            rng = random.Random(1)
            xs, ys = [], []
            for tool in chosen:
                text = make(tool.description or tool.name, rng)
                for match_name, confidence in routed(router, text):
                    xs.append(confidence)
                    ys.append(float(match_name == tool.name))
            fitted = fit_recalibration(np.array(xs), np.array(ys), len(chosen))
            after = np.array([fitted.apply(c) for c in conf])
            print(f"  {label}: pseudo top-1 right {np.mean(ys[::5]):.2f}; ECE {ece_of(after, rel):.3f}, "
                  f"log loss {log_loss(after, rel):.3f}; points {fitted.points[:8]}...", flush=True)  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:])
