"""A catalog's per-match recalibration by isotonic regression instead of Platt scaling (tried).

    python benchmarks/experiments/isotonic.py LIMIT FED DATASET...

The abstention bench with a FED share of a seeded LIMIT of each dataset's requests learned first
(``run_abstention(fed=...)``), once with the router's Platt scaling and once with a monotone step
function fitted by pool-adjacent-violators on the same routed labelled requests (linear between
the blocks' means); the reported confidences' expected calibration error and log loss.
"""

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolsift.bench.abstention import run_abstention
from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.router import Router
from toolsift.router import router as router_module
from toolsift.router.confidence import Recalibration, fit_recalibration
from toolsift.settings import Settings

ROOT = str(Path(__file__).resolve().parents[3] / "shared" / "datasets")


@dataclass(frozen=True)
class Isotonic(Recalibration):
    knots: tuple[tuple[float, float], ...] = ()

    def apply(self, confidence: float) -> float:
        xs, ys = zip(*self.knots, strict=True)
        return float(np.clip(np.interp(confidence, xs, ys), 0.005, 0.995))


def pav(x: np.ndarray, y: np.ndarray) -> tuple[tuple[float, float], ...]:
    """Pool-adjacent-violators: blocks (mean x, mean y) with non-decreasing mean y."""
    order = np.argsort(x, kind="stable")
    blocks: list[list[float]] = []  # [sum x, sum y, count]
    for xi, yi in zip(x[order], y[order], strict=True):
        blocks.append([xi, yi, 1.0])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            last = blocks.pop()
            blocks[-1] = [a + b for a, b in zip(blocks[-1], last, strict=True)]
    return tuple((sx / n, sy / n) for sx, sy, n in blocks)


def isotonic(confidences, relevant, requests, prior=1.0):  # type: ignore[no-untyped-def]
    platt = fit_recalibration(confidences, relevant, requests, prior)
    return Isotonic(platt.slope, platt.intercept, requests, knots=pav(np.asarray(confidences), np.asarray(relevant)))


def main(limit: str, fed: str, *names: str) -> None:
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(int(limit))
        for label, fit in (("platt", fit_recalibration), ("isotonic", isotonic)):
            router_module.fit_recalibration = fit
            router = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
            result = run_abstention(dataset, router, 5, [0.1], fed=float(fed))
            table = result["reliability"]
            print(f"{name} {label}: ECE {table['ece']:.3f} {table['ece_interval']}, log loss {table['log_loss']:.3f}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:])
